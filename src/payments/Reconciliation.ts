import * as Instance from '../health/Instance.js';
import type { Config } from '../config/Config.js';
import type { Logger } from '../log/Logger.js';
import type { Metrics } from '../health/Metrics.js';
import type { Store } from '../store/Store.js';
import * as Charging from './Charging.js';
import * as OnchainPayment from './OnchainPayment.js';
import type { Rails } from './Rails.js';

type Dependencies = {
  store: Store;
  rails: Rails;
  logger: Logger;
  metrics?: Metrics | undefined;
  /** The payments whose settlement this process is waiting on: left to the call. */
  settling?: ReadonlySet<string> | undefined;
  /** How long past its deadline a transfer not found is taken never to land (SETTLEMENT_LANDING_MARGIN_SECONDS). */
  config?: Pick<Config, 'landingMarginSeconds'> | undefined;
};

/**
 * Settles what stopped queries left part-way, and says so in the log: charges never answered are given back (see
 * Charging.reconcile), payments verified but never settled are released, and wallets whose money moved without an
 * answer are credited (see OnchainPayment.reconcile). `instances` are processes whose lease ran out, claimed by the caller:
 * what they left is settled whatever its age; anything else only once it is old and its process is not serving. `own`
 * is this process's instance: its own settlements whose outcome was lost are looked up once past their deadline.
 */
export async function reconcile(
  input: Dependencies,
  options: { instances?: readonly string[]; claimedAt?: number; now?: number; own?: string | undefined } = {},
): Promise<void> {
  const { store, logger } = input;
  try {
    const reversed = options.instances ? 0 : await Charging.reconcile(store, { now: options.now });
    if (reversed > 0) logger.warn('reversed charges left unanswered by a stopped query', { count: reversed });
    const { released, credited, pending } = await OnchainPayment.reconcile(store, input.rails, {
      olderThanMs: OnchainPayment.reconcileAfterMs,
      instances: options.instances,
      claimedAt: options.claimedAt,
      own: options.own,
      settling: input.settling,
      now: options.now,
      landingMarginMs: input.config && input.config.landingMarginSeconds * 1000,
      onFailed: (payment, error) => logger.error('reconciling a payment failed: the next pass tries it again', { payment: payment.id, state: payment.state, error }),
      onResolved: (rail, state) => {
        input.metrics?.payment(rail, state);
        input.metrics?.payment(rail, 'reconciled');
      },
    });
    if (credited > 0) logger.warn('credited wallets whose on-chain payment got no answer (a stopped query)', { count: credited });
    if (released > 0) logger.info('released on-chain payments a stopped query never settled', { count: released });
    if (pending > 0) logger.info('on-chain payments whose transfer may still land: looked up again next round', { count: pending });
  } catch (error) {
    // A busy database (or an unreachable chain) waits for the next round; it must not stop the server.
    logger.error('reconciliation failed', { error });
  }
}

/**
 * Runs `reconcile` every `everyMs` until the returned function is called, one pass at a time, with this process's
 * instance as `own`: what stopped processes left, and this one's own settlements whose outcome was lost.
 */
export function periodically(input: Dependencies & { instance: Instance.Instance }, everyMs: number): () => void {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= reconcile(input, { own: input.instance.id() }).finally(() => (running = undefined));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Claims the instances whose lease ran out and settles what they left: their charges are given back in the
 * transaction that claims them (two processes claiming at once settle each once), then their payments. Quick when
 * none ran out: one statement.
 */
export async function settleGone(input: Dependencies, options: { now?: number; leaseMs?: number; own?: string | undefined } = {}): Promise<void> {
  const { store, logger } = input;
  const now = options.now ?? Date.now();
  // What the claimed instances took until now is theirs to settle; one that comes back takes anew under its id.
  const claimedAt = Date.now();
  const claimed = await store.transaction(async (tx) => {
    // Never this process itself: its lease may have lapsed while it stood still, and it is plainly running now.
    const instances = await tx.instances.expire(now - (options.leaseMs ?? Instance.leaseMs), { except: options.own });
    const reversed = instances.length > 0 ? await Charging.reconcile(tx, { now, instances, claimedAt }) : 0;
    return { instances, reversed };
  });
  if (claimed.instances.length === 0) return;
  logger.warn('instances gone (their lease ran out): what they left part-way is settled', { instances: claimed.instances, reversedCharges: claimed.reversed });
  await reconcile(input, { instances: claimed.instances, claimedAt, now });
}
