import type { Rail } from '../contract/Quote.js';
import { ServiceError } from '../errors/ServiceError.js';
import type { Logger } from '../log/Logger.js';
import type { Metrics } from '../health/Metrics.js';
import type { Breaker } from '../health/Breaker.js';
import type { PaymentRow } from '../store/Payments.js';
import { type Store, Unavailable } from '../store/Store.js';
import type { Config } from '../config/Config.js';
import * as Charging from './Charging.js';
import type { Hold, Payment } from './Hold.js';
import * as Pricing from './Pricing.js';
import { CredentialRejected, PaidButRefused, landingMarginMs } from './Rail.js';
import type { InboundCredential, OutboundReceipt, PaymentRail, Terms, Verified } from './Rail.js';
import type { Rails } from './Rails.js';
import { crashPoint } from './CrashPoints.js';


/** Why a credential a payment already accounts for is refused, whoever checks it. */
const alreadyUsed = 'it was already used: each pays for one answer.';

/**
 * A 402 with the rail's fresh challenge: the Error body names the rails, and says why when a credential was refused
 * (the challenge carries the reason too, where its format has room for one). Whether a wallet has a credit is never
 * said: its next signed payment spends it.
 */
async function paymentRequired(input: { rail: PaymentRail; terms: Terms; config: Config; reason?: string; metrics?: Metrics | undefined }): Promise<ServiceError> {
  const { rail, terms, config } = input;
  // A fresh challenge, or one that comes with why the credential sent was refused.
  input.metrics?.payment(rail.rail, input.reason === undefined ? 'challenged' : 'refused');
  const challenge = await rail.challenge(terms, { reason: input.reason });
  const price = `${terms.amountMillicents / Pricing.millicentsPerUsd} USD`;
  // How to pay is the transport's to say (a header over REST, `_meta` over MCP): see the wires.
  const message = `${input.reason ? `${input.reason} ` : ''}Payment of ${price} on ${rail.rail} is required.`;
  return new ServiceError('payment_required', message, {
    details: { supportedRails: Pricing.supportedRails(config), challenges: [challenge.mcp] },
    headers: challenge.headers,
  });
}

/**
 * The on-chain payer behind the gate. Without a credential: 422 when nothing relevant was found (do not pay), else a
 * 402 with the rail's challenge. With one: verify it for these terms, spend it once, and hold it; the money moves in
 * `settle`, only once the answer is ready, or a credit of the wallet that signed it is spent instead.
 */
export function payment(input: {
  store: Store;
  config: Config;
  logger: Logger;
  metrics?: Metrics | undefined;
  rails: Rails;
  rail: Rail;
  terms: Terms;
  credential: InboundCredential | undefined;
  /** The serving process taking the payment, when it holds a lease (see Instance). */
  instance: string | undefined;
  /** The payments whose settlement this process is waiting on: its own reconciliation leaves them to the call. */
  settling?: Set<string> | undefined;
  /** The rail's outside party's breaker. */
  breaker?: Breaker | undefined;
}): Payment {
  const { store, config, logger, terms, credential, metrics } = input;
  return {
    readsRelevance: true,
    async authorize({ queryId, relevant }): Promise<Hold> {
      const rail = await input.rails.get(input.rail);
      if (!rail) throw Pricing.unavailable(config, input.rail);
      const nothingRelevant = (extra = '') =>
        new ServiceError('no_relevant_content', `No indexed content is relevant enough to answer this question; nothing was charged.${extra} Do not pay.`);
      // Refused: with nothing relevant to sell, no challenge (do not pay); otherwise a fresh one with the reason.
      const refuse = async (reason: string) => (relevant ? await paymentRequired({ rail, terms, config, reason, metrics }) : nothingRelevant(` (${reason})`));
      if (!credential) {
        if (!relevant) throw nothingRelevant();
        throw await paymentRequired({ rail, terms, config, metrics });
      }
      if (!rail.accepts(credential)) throw await refuse(`The credential sent is not one for the ${rail.rail} rail.`);
      // The credential this request claims before its rail's first round trip, released once its payment is recorded
      // or refused: a copy sent meanwhile to another request, on any instance, is turned away without one.
      let claimed: string | undefined;
      const claim = async (spendKey: string) => {
        const now = Date.now();
        const outcome = await store.payments.claimCredential({ spendKey, claimant: queryId, now, staleBefore: now - claimLifetimeMs });
        if (outcome === 'spent') throw new CredentialRejected(alreadyUsed);
        if (outcome === 'busy') throw new CredentialRejected('another request is redeeming it right now: each pays for one answer.');
        claimed = spendKey;
      };
      const unspent = async (spendKey: string) => {
        if (await store.payments.spent(spendKey)) throw new CredentialRejected(alreadyUsed);
      };
      // The rail's outside party (facilitator, RPC) failing again and again is skipped for a while: a payer learns at
      // once, rather than after a timeout per attempt. Settlement is never skipped: a verified payment goes through.
      const breaker = input.breaker;
      if (breaker && !breaker.allow()) {
        metrics?.dependencyFailure(rail.rail, 'skipped');
        const wait = Math.max(1, breaker.retryAfterSeconds());
        throw new ServiceError('service_unavailable', `The ${rail.rail} rail's payment service failed repeatedly and is not called for about ${wait} s; nothing was charged. Retry then, or pay on another rail.`, {
          headers: { 'Retry-After': String(wait) },
        });
      }
      const redeem = async (): Promise<Hold> => {
        let verified: Verified;
        try {
          verified = await rail.verify(credential, terms, { bind: (spendKey, challengeId) => store.payments.bindCredential({ spendKey, rail: rail.rail, challengeId }), claim, unspent });
          breaker?.succeeded();
        } catch (error) {
          if (error instanceof PaidButRefused || error instanceof CredentialRejected) breaker?.succeeded();
          if (error instanceof PaidButRefused) throw await refuse(await creditFor(error, queryId));
          if (!(error instanceof CredentialRejected)) {
            // The database failing under the check says nothing of the rail's party.
            if (error instanceof Unavailable) breaker?.inconclusive();
            else {
              breaker?.failed();
              metrics?.dependencyFailure(rail.rail, 'error');
            }
            logger.warn('payment rail unavailable while verifying a credential', { rail: rail.rail, error });
            throw error;
          }
          throw await refuse(`The payment credential was refused: ${error.message}`);
        }
        if (!relevant && !verified.paid) throw nothingRelevant(' Your payment was not settled.');
        const reserved = await store.payments.reserve({
          id: verified.challengeId,
          spendKey: verified.spendKey,
          transfer: verified.paid?.txHash,
          rail: rail.rail,
          wallet: verified.wallet,
          queryId,
          requestDigest: terms.digest,
          amountMillicents: terms.amountMillicents,
          settleBy: verified.paid ? undefined : verified.settleBy,
          instanceId: input.instance,
        });
        if (!reserved) throw await refuse('This payment credential was already used: each pays for one answer.');
        // A transfer the payer broadcast themselves has moved, and was recorded settled: from here on, however the
        // query ends, it is an answer or a credit.
        metrics?.payment(rail.rail, 'verified');
        if (!relevant) {
          // The payer moved the money themselves, and there is nothing to sell: the wallet keeps it as a credit.
          const creditId = await store.payments.creditWallet(verified.challengeId, { from: ['settled'], reason: 'no relevant content after the payer broadcast the payment' });
          if (creditId === undefined) throw resolvedElsewhere();
          metrics?.payment(rail.rail, 'credited');
          throw new ServiceError(
            'no_relevant_content',
            `No indexed content is relevant enough to answer this question. The payment you broadcast (${verified.paid!.txHash}) is kept as credit ${creditId}: your next ${rail.rail} query signed by ${verified.wallet} (signed, not broadcast) spends it instead of a new transfer.`,
            { details: { creditId } },
          );
        }
        // A transfer the wallet signed but nobody sent yet can be left unsent: its oldest credit pays instead.
        const credit = verified.paid ? undefined : await store.payments.openCredit(rail.rail, verified.wallet);
        const usesCredit = credit !== undefined && (await store.payments.consumeCredit(credit.id, verified.challengeId));
        return hold({ store, config, logger, metrics, breaker, rail, terms, verified, queryId, creditId: usesCredit ? credit.id : undefined, settling: input.settling });
      };
      try {
        return await redeem();
      } finally {
        if (claimed !== undefined) await store.payments.releaseClaim({ spendKey: claimed, claimant: queryId }).catch(() => undefined);
      }
    },
  };

  /** Records a transfer the payer sent for a credential that was then refused, as a credit; says so, or why not. */
  async function creditFor(error: PaidButRefused, queryId: string): Promise<string> {
    const { challengeId, txHash, wallet } = error.paid;
    const id = `${challengeId}:refused:${txHash}`;
    // A transfer another payment already accounts for (answered, credited, or this server's own broadcast) is not
    // credited again.
    if (!(await store.payments.reserve({ id, spendKey: txHash, transfer: txHash, rail: input.rail, wallet, queryId, requestDigest: terms.digest, amountMillicents: terms.amountMillicents }))) {
      return `The payment credential was refused (${error.message}), and its transfer ${txHash} was already used.`;
    }
    const creditId = await store.payments.creditWallet(id, { from: ['settled'], reason: `transfer sent for a credential that was refused: ${error.message}` });
    if (creditId === undefined) return `The payment credential was refused (${error.message}); its transfer ${txHash} is being accounted for by another request.`;
    metrics?.payment(input.rail, 'credited');
    logger.warn('credited a wallet for a transfer whose credential was refused', { rail: input.rail, txHash, credit: creditId });
    return `The payment credential was refused (${error.message}), but its transfer ${txHash} reached this server and is kept as credit ${creditId}: your next ${input.rail} query signed by ${wallet} (signed, not broadcast) spends it.`;
  }
}

/**
 * A payment another process resolved while this one prepared its answer: this process was taken for stopped (its
 * lease ran out) and reconciliation released the payment or kept its money as a credit. No answer goes out for it.
 */
function resolvedElsewhere(): ServiceError {
  return new ServiceError(
    'service_unavailable',
    'This payment was resolved by reconciliation while its answer was prepared (the instance serving it was taken for stopped): money that moved is kept as a credit your next query signed by the same wallet spends; otherwise nothing moved. Ask again.',
  );
}

/** How long a request's claim on a credential holds if it is never released (its process stopped mid-check). */
const claimLifetimeMs = 2 * 60_000;

/** How old an unfinished payment must be before reconciliation resolves it (as for balance charges). */
export const reconcileAfterMs = Charging.orphanAfterMs;

/**
 * Within how many minutes of its transfer's expiry a settlement whose outcome was lost is looked up and settled: the
 * chain is taken to have refused it a margin after the expiry, and the next reconciliation pass looks.
 */
function lookedUpWithinMinutes(config: Config): number {
  return Math.ceil((config.landingMarginSeconds + config.reconcileIntervalSeconds) / 60);
}

/** USD micro-dollars (the ledger's unit) in one millicent. */
const microsPerMillicent = 10;

function hold(input: {
  store: Store;
  config: Config;
  logger: Logger;
  metrics: Metrics | undefined;
  breaker: Breaker | undefined;
  rail: PaymentRail;
  terms: Terms;
  verified: Verified;
  queryId: string;
  creditId: string | undefined;
  settling: Set<string> | undefined;
}): Hold {
  const { store, config, rail, terms, verified, creditId, metrics, breaker } = input;
  const id = verified.challengeId;
  let receipt: OutboundReceipt | undefined;
  return {
    charge: 'onchain',
    async settle() {
      if (creditId) {
        if (!(await store.payments.advance(id, ['verified'], 'settled', { txHash: creditId, note: `paid with credit ${creditId}` }))) throw resolvedElsewhere();
        receipt = rail.receipt({ txHash: creditId, receipt: { credit: creditId } }, terms);
      } else if (verified.paid) {
        // Settled when it was reserved: the payer broadcast it.
        receipt = rail.receipt({ txHash: verified.paid.txHash, receipt: {} }, terms);
      } else {
        // From here until `settled`, money may be moving: a crash now is resolved by asking the chain, by the hash
        // kept before the transfer leaves (or the authorization it spends), until it can no longer land.
        if (!(await store.payments.advance(id, ['verified'], 'settling'))) throw resolvedElsewhere();
        let settlement;
        input.settling?.add(id);
        try {
          settlement = await rail.settle(verified, terms, {
            sending: async (txHash) => {
              if (!(await store.payments.recordTransfer(id, txHash))) throw new CredentialRejected('the payment was resolved while it was being settled');
              crashPoint(config, 'before_broadcast');
            },
          });
        } catch (error) {
          if (error instanceof CredentialRejected) {
            breaker?.succeeded();
            if (await store.payments.release(id, { from: ['settling'], note: `settlement refused: ${error.message}` })) metrics?.payment(rail.rail, 'released');
            throw await paymentRequired({ rail, terms, config, metrics, reason: `The payment could not be settled: ${error.message}` });
          }
          if (error instanceof Unavailable) breaker?.inconclusive();
          else {
            breaker?.failed();
            metrics?.dependencyFailure(rail.rail, 'error');
          }
          // Nobody said no, and nobody said yes: the payment stays "settling" until reconciliation looks it up.
          input.logger.error('settlement outcome unknown: left for reconciliation', { queryId: input.queryId, rail: rail.rail, wallet: verified.wallet, error });
          throw new ServiceError(
            'service_unavailable',
            `The ${rail.rail} payment was sent for settlement but its outcome is not known yet (${error instanceof Error ? error.message : 'no answer'}). If it went through, it becomes a credit for ${verified.wallet} within about ${lookedUpWithinMinutes(config)} minutes of its expiry, which your next query signed by that wallet spends. Do not pay again for this question before then.`,
            { cause: error },
          );
        } finally {
          input.settling?.delete(id);
        }
        breaker?.succeeded();
        receipt = rail.receipt(settlement, terms);
        if (!(await store.payments.advance(id, ['settling'], 'settled', { txHash: settlement.txHash, receipt: JSON.stringify(receipt.receipt) }))) {
          // Resolved by another process's reconciliation meanwhile (this one was taken for gone): the money that moved
          // is a credit, now or once its transfer is looked up again.
          throw new ServiceError(
            'service_unavailable',
            `The ${rail.rail} payment settled (${settlement.txHash}), but reconciliation had already resolved it while the answer was prepared (the instance serving it was taken for stopped): it is kept as a credit for ${verified.wallet} within about ${lookedUpWithinMinutes(config)} minutes, which your next query signed by that wallet spends. Ask again then.`,
          );
        }
      }
      metrics?.payment(rail.rail, 'settled');
      crashPoint(config, 'after_settle');
      return receipt;
    },
    async capture(tx) {
      if (!(await tx.payments.advance(id, ['settled'], 'answered'))) throw resolvedElsewhere();
      // The operator's ledger shows the revenue beside the creators' earnings for the same query.
      await tx.ledger.append({
        kind: creditId ? 'onchain_credit_spent' : 'onchain_payment',
        usdMicros: terms.amountMillicents * microsPerMillicent,
        queryId: input.queryId,
        reference: receipt?.txHash ?? null,
        memo: `${rail.rail} from ${verified.wallet}`,
      });
    },
    async release(reason) {
      // Ahead of requests waiting for the database: a burst must not leave a payment part-way for reconciliation.
      // Each step moves the payment only from where this request left it: one moved on meanwhile is left as it is.
      const payments = store.urgent.payments;
      // Nothing moved yet, or a credit paid: the payment is let go (and the credit is the wallet's again).
      if (await payments.release(id, { from: creditId ? ['verified', 'settled'] : ['verified'], note: reason })) return metrics?.payment(rail.rail, 'released');
      if (creditId) return;
      // The money moved and no answer went out: the wallet is owed one. (Settling, its outcome is reconciliation's.)
      const credit = await payments.creditWallet(id, { from: ['settled'], reason: `${reason} after payment ${receipt?.txHash ?? verified.paid?.txHash ?? ''}`.trim() });
      if (credit === undefined) return;
      metrics?.payment(rail.rail, 'credited');
      input.logger.warn('paid query not answered: credited the wallet', { queryId: input.queryId, rail: rail.rail, credit });
    },
  };
}

/** How long a credential's binding is kept: longer than any challenge lives (a day at most), so than any authorization. */
const bindingLifetimeMs = 2 * 86_400_000;

/**
 * Settles what a crash or a lost answer left part-way, for payments untouched for `olderThanMs` whose process is not
 * serving, for every payment of `instances` (processes whose lease ran out), and for settlements past their deadline
 * that no other live process holds (the `own` process's, a gone one's): a credential verified but never settled is released (no money moved); one that was settling is
 * looked up on its chain, by the hash kept before its transfer left: landed, it becomes a credit for the wallet;
 * failed, or never sent and expired, it is released; still able to land, it is left for the next pass. Then the
 * credentials this server never settled (released, or answered by a credit), once they can no longer land, are looked
 * up: one that someone else sent moved the wallet's money with no answer of its own, and becomes a credit. A pass for
 * `instances` just claimed does only the first: it is the one in a hurry, and the periodic pass does the rest.
 *
 * Every step moves a payment only from the state it was read in, in the transaction that releases or credits it: a
 * process taken for gone that is in fact still finishing the payment (it captured it meanwhile) keeps it. Returns how
 * many were released, credited and left.
 */
export async function reconcile(
  store: Store,
  rails: Rails,
  options: {
    olderThanMs: number;
    now?: number | undefined;
    instances?: readonly string[] | undefined;
    /** When `instances` were claimed: what they took since is theirs again (they came back). */
    claimedAt?: number | undefined;
    /** This serving process: its own settlements past their deadline are looked up too, and its own payments verified
     * and left for `olderThanMs` (a release that failed) are released. */
    own?: string | undefined;
    /** The payments whose settlement this process is waiting on: left to the call, however late a slow chain makes it. */
    settling?: ReadonlySet<string> | undefined;
    /** How long past its deadline a transfer not found is taken never to land (`Rail.landingMarginMs` by default). */
    landingMarginMs?: number | undefined;
    /** Told of each payment reconciliation released or credited. */
    onResolved?: ((rail: Rail, state: 'released' | 'credited') => void) | undefined;
    /** Told of a payment whose step failed: the pass goes on with the next, and the next pass tries it again. */
    onFailed?: ((payment: PaymentRow, error: unknown) => void) | undefined;
  },
): Promise<{ released: number; credited: number; pending: number }> {
  const now = options.now ?? Date.now();
  const marginMs = options.landingMarginMs ?? landingMarginMs;
  const cutoff = now - options.olderThanMs;
  const tally = { released: 0, credited: 0, pending: 0 };
  const resolved = (rail: Rail, state: 'released' | 'credited') => {
    tally[state] += 1;
    options.onResolved?.(rail, state);
  };
  const landedFor = async (row: PaymentRow, txHash: string | null) => {
    const rail = await rails.get(row.rail);
    return rail ? await rail.landed({ spendKey: row.spendKey, wallet: row.wallet, txHash, settleBy: row.settleBy }, { now, marginMs }).catch(() => undefined) : undefined;
  };
  const release = async (row: PaymentRow, note: string) => {
    if (await store.payments.release(row.id, { from: [row.state], note })) resolved(row.rail, 'released');
  };
  const credit = async (row: PaymentRow, reason: string, txHash?: string) => {
    if ((await store.payments.creditWallet(row.id, { from: [row.state], reason, txHash })) !== undefined) resolved(row.rail, 'credited');
  };
  const step = async (row: PaymentRow, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      // A database or chain that failed under one payment leaves it for the next pass; the others go ahead.
      if (!options.onFailed) throw error;
      options.onFailed(row, error);
    }
  };
  // A claimed instance's payments as they were when it was claimed: one it took since, having come back (it was only
  // frozen), is its own again.
  for (const row of await store.payments.unfinished({ cutoff, instances: options.instances, claimedAt: options.claimedAt, own: options.own, settledBy: now })) {
    if (options.settling?.has(row.id)) continue;
    await step(row, async () => {
      if (row.state === 'verified') return release(row, 'reconciled: verified, never settled (the query stopped mid-way)');
      if (row.state === 'settled') {
        // A credit spent on an answer that never went out is the wallet's again; money that moved is owed an answer.
        if (row.creditId) return release(row, 'reconciled: answer not delivered');
        return credit(row, 'reconciled: paid, but the answer was not delivered (the server stopped, or the outcome was lost)');
      }
      const landed = await landedFor(row, row.txHash);
      if (landed === null) return release(row, 'reconciled: the transfer never landed');
      // Payments from before transfers were kept (no settleBy) cannot be told, as then: the wallet is credited.
      if (landed === undefined && row.settleBy !== null) {
        tally.pending += 1;
        return;
      }
      return credit(row, 'reconciled: the transfer landed, but its outcome was lost and no answer went out', landed?.txHash ?? row.txHash ?? row.spendKey);
    });
  }
  if (options.instances !== undefined) return tally;
  for (const row of await store.payments.lapsed(now - marginMs)) {
    await step(row, async () => {
      // A credit's id stands where a transaction hash would: only a hash this server broadcast is looked up.
      const landed = await landedFor(row, row.creditId ? null : row.txHash);
      if (landed === undefined) return;
      if (landed) {
        const reason = `its signed transfer was sent by someone else (${landed.txHash}) after this server ${row.creditId ? 'spent a credit instead' : 'let it go unsettled'}`;
        // Answered with a credit, the answer stands: the transfer is a payment of its own, credited.
        const granted = row.creditId
          ? await store.payments.creditSentTransfer(row, { txHash: landed.txHash, reason })
          : await store.payments.creditWallet(row.id, { from: ['released'], reason, txHash: landed.txHash });
        if (granted !== undefined) resolved(row.rail, 'credited');
      }
      await store.payments.stopWatching(row.id);
    });
  }
  await store.payments.pruneBindings(now - bindingLifetimeMs);
  return tally;
}
