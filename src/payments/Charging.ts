import type { Config } from '../config/Config.js';
import type { PaymentMode } from '../contract/Query.js';
import type { Store } from '../store/Store.js';

/** What one query costs in the chosen balance, from configuration (the same figures the quote shows). */
export function cost(config: Config, mode: PaymentMode): { unlocksDelta: number; creditsDelta: number } {
  return mode === 'unlocks' ? { unlocksDelta: -config.pricing.costUnlocks, creditsDelta: 0 } : { unlocksDelta: 0, creditsDelta: -config.pricing.costCredits };
}

/**
 * Debits the key owner's balance for one query and records it, in one transaction. Concurrent queries on one account
 * cannot overdraw it: the debit is a conditional update, refused with `insufficient_balance` when it would go below zero.
 */
export async function charge(store: Store, input: { config: Config; accountId: string; mode: PaymentMode; queryId: string; memo: string; instance?: string | undefined }): Promise<number> {
  return store.ledger.move({ accountId: input.accountId, kind: 'query_charge', ...cost(input.config, input.mode), queryId: input.queryId, memo: input.memo, instanceId: input.instance });
}

/**
 * Gives a query's charge back, recorded as its own ledger row: when nothing relevant was found, or the query failed.
 * It gives back what the charge took, once: a query already answered or reversed (by start-up reconciliation, say)
 * is left as it is. Returns the reversal's ledger id, or undefined when there was nothing to reverse.
 */
export async function reverse(store: Store, input: { accountId: string; queryId: string; reason: string }): Promise<number | undefined> {
  return store.charges.reverse(input);
}

/**
 * Records that a charged query was answered: the charge stands, and start-up reconciliation leaves it alone. A charge
 * already given back (a query that ran past the reconciliation window) is not answered after all: 503, so the caller
 * asks again rather than get an answer for free.
 */
export async function markAnswered(store: Store, input: { accountId: string; queryId: string }): Promise<void> {
  await store.charges.markAnswered(input);
}

/** How old an unfinished charge must be before it counts as orphaned: no query runs this long. */
export const orphanAfterMs = 10 * 60_000;

/**
 * Reverses balance charges a crash (or a query that never finished) left behind: a `query_charge` with neither a
 * `query_answered` nor a `query_reversal` row, made since answers were marked, and either older than `orphanAfterMs`
 * and taken by no process still serving, or taken by one of `instances` up to `claimedAt` (processes whose lease ran
 * out, claimed by the caller: one that comes back charges anew under its id). A live instance's charge is never touched. The reversal gives back what the row took (not today's price)
 * and says why. Returns how many were reversed.
 */
export async function reconcile(store: Store, options: { now?: number | undefined; instances?: readonly string[]; claimedAt?: number } = {}): Promise<number> {
  const since = Number((await store.meta.get('answer_markers_since')) ?? Number.POSITIVE_INFINITY);
  const before = (options.now ?? Date.now()) - orphanAfterMs;
  return store.charges.reverseOrphans({
    since,
    before,
    instances: options.instances,
    claimedAt: options.claimedAt,
    why: (o) =>
      options.instances
        ? `reconciled: charged ${new Date(o.createdAt).toISOString()} by an instance that stopped before answering (its lease ran out)`
        : `reconciled: charged ${new Date(o.createdAt).toISOString()}, neither answered nor reversed within ${orphanAfterMs / 60_000} minutes (the query stopped mid-way)`,
  });
}

/** One returned chunk's claim on a creator's earnings. */
export type Usage = { channelId: string; profileId: string; ownerAccountId: string | null; profileTokens: number; ratePerMillionTokens: number };

/**
 * Credits each creator for the evidence returned: profile tokens times the channel's dollars per million tokens,
 * one ledger row per channel, in micro-dollars, written in one statement.
 */
export async function creditCreators(store: Store, input: { queryId: string; usage: Usage[] }): Promise<void> {
  const perChannel = new Map<string, Usage & { tokens: number }>();
  for (const u of input.usage) {
    const found = perChannel.get(u.channelId);
    if (found) found.tokens += u.profileTokens;
    else perChannel.set(u.channelId, { ...u, tokens: u.profileTokens });
  }
  await store.ledger.appendMany(
    [...perChannel.values()].map((u) => ({
      kind: 'creator_earning',
      accountId: u.ownerAccountId,
      profileId: u.profileId,
      channelId: u.channelId,
      usdMicros: Math.round(u.tokens * u.ratePerMillionTokens),
      queryId: input.queryId,
      memo: `${u.tokens} profile tokens at $${u.ratePerMillionTokens}/M`,
    })),
  );
}
