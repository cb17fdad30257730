import type { Config } from '../config/Config.js';
import type { PaymentMode } from '../contract/Query.js';
import type { Database } from '../store/Database.js';
import * as Store from '../store/Database.js';
import * as Ledger from '../store/Ledger.js';

/** What one query costs in the chosen balance, from configuration (the same figures the quote shows). */
export function cost(config: Config, mode: PaymentMode): { unlocksDelta: number; creditsDelta: number } {
  return mode === 'unlocks' ? { unlocksDelta: -config.pricing.costUnlocks, creditsDelta: 0 } : { unlocksDelta: 0, creditsDelta: -config.pricing.costCredits };
}

/**
 * Debits the key owner's balance for one query and records it, in one transaction. Concurrent queries on one account
 * cannot overdraw it: the debit is a conditional update, refused with `insufficient_balance` when it would go below zero.
 */
export function charge(db: Database, input: { config: Config; accountId: string; mode: PaymentMode; queryId: string; memo: string }): number {
  return Ledger.move(db, { accountId: input.accountId, kind: 'query_charge', ...cost(input.config, input.mode), queryId: input.queryId, memo: input.memo });
}

/** Gives a query's charge back, recorded as its own ledger row: when nothing relevant was found, or the query failed. */
export function reverse(db: Database, input: { config: Config; accountId: string; mode: PaymentMode; queryId: string; reason: string }): number {
  const debit = cost(input.config, input.mode);
  return Ledger.move(db, {
    accountId: input.accountId,
    kind: 'query_reversal',
    unlocksDelta: -debit.unlocksDelta,
    creditsDelta: -debit.creditsDelta,
    queryId: input.queryId,
    memo: input.reason,
  });
}

/** Records that a charged query was answered: the charge stands, and start-up reconciliation leaves it alone. */
export function markAnswered(db: Database, input: { accountId: string; queryId: string }): void {
  Ledger.append(db, { kind: 'query_answered', accountId: input.accountId, queryId: input.queryId, memo: 'answered; the charge stands' });
}

/** How old an unfinished charge must be before it counts as orphaned: no query runs this long. */
export const orphanAfterMs = 10 * 60_000;

/**
 * Reverses balance charges a crash left behind: a `query_charge` with neither a `query_answered` nor a
 * `query_reversal` row, older than `orphanAfterMs` and made since answers were marked. The reversal gives back what
 * the row took (not today's price) and says why. Returns how many were reversed.
 */
export function reconcile(db: Database, options: { now?: number } = {}): number {
  const since = Number(Store.getMeta(db, 'answer_markers_since') ?? Number.POSITIVE_INFINITY);
  const cutoff = (options.now ?? Date.now()) - orphanAfterMs;
  // One write transaction for finding and reversing: two processes starting at once cannot both reverse a charge.
  return db.transaction(() => reverseOrphans(db, since, cutoff)).immediate();
}

function reverseOrphans(db: Database, since: number, cutoff: number): number {
  const orphans = db
    .prepare(
      `SELECT c.account_id AS accountId, c.unlocks_delta AS unlocksDelta, c.credits_delta AS creditsDelta, c.query_id AS queryId, c.created_at AS createdAt
       FROM ledger c
       WHERE c.kind = 'query_charge' AND c.query_id IS NOT NULL AND c.created_at >= ? AND c.created_at < ?
         AND NOT EXISTS (SELECT 1 FROM ledger o WHERE o.query_id = c.query_id AND o.kind IN ('query_answered', 'query_reversal'))`,
    )
    .all(since, cutoff) as { accountId: string; unlocksDelta: number; creditsDelta: number; queryId: string; createdAt: number }[];
  for (const o of orphans) {
    Ledger.move(db, {
      accountId: o.accountId,
      kind: 'query_reversal',
      unlocksDelta: -o.unlocksDelta,
      creditsDelta: -o.creditsDelta,
      queryId: o.queryId,
      memo: `reconciled at start: charged ${new Date(o.createdAt).toISOString()} but never answered nor reversed (the server stopped mid-query)`,
    });
  }
  return orphans.length;
}

/** One returned chunk's claim on a creator's earnings. */
export type Usage = { channelId: string; profileId: string; ownerAccountId: string | null; profileTokens: number; ratePerMillionTokens: number };

/**
 * Credits each creator for the evidence returned: profile tokens times the channel's dollars per million tokens,
 * one ledger row per channel, in micro-dollars.
 */
export function creditCreators(db: Database, input: { queryId: string; usage: Usage[] }): void {
  const perChannel = new Map<string, Usage & { tokens: number }>();
  for (const u of input.usage) {
    const found = perChannel.get(u.channelId);
    if (found) found.tokens += u.profileTokens;
    else perChannel.set(u.channelId, { ...u, tokens: u.profileTokens });
  }
  db.transaction(() => {
    for (const u of perChannel.values()) {
      Ledger.append(db, {
        kind: 'creator_earning',
        accountId: u.ownerAccountId,
        profileId: u.profileId,
        channelId: u.channelId,
        usdMicros: Math.round(u.tokens * u.ratePerMillionTokens),
        queryId: input.queryId,
        memo: `${u.tokens} profile tokens at $${u.ratePerMillionTokens}/M`,
      });
    }
  })();
}
