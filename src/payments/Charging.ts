import type { Config } from '../config/Config.js';
import type { PaymentMode } from '../contract/Query.js';
import type { Database } from '../store/Database.js';
import { ServiceError } from '../errors/ServiceError.js';
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

/** Where a charged query stands in the ledger: open, answered (the charge stands), or reversed. */
function standing(db: Database, queryId: string): 'open' | 'answered' | 'reversed' {
  const kinds = db.prepare(`SELECT kind FROM ledger WHERE query_id = ? AND kind IN ('query_answered', 'query_reversal')`).pluck().all(queryId) as string[];
  return kinds.includes('query_reversal') ? 'reversed' : kinds.includes('query_answered') ? 'answered' : 'open';
}

/**
 * Gives a query's charge back, recorded as its own ledger row: when nothing relevant was found, or the query failed.
 * It gives back what the charge took, once: a query already answered or reversed (by start-up reconciliation, say)
 * is left as it is. Returns the reversal's ledger id, or undefined when there was nothing to reverse.
 */
export function reverse(db: Database, input: { accountId: string; queryId: string; reason: string }): number | undefined {
  return db.transaction(() => {
    const charge = db
      .prepare(`SELECT unlocks_delta AS unlocksDelta, credits_delta AS creditsDelta FROM ledger WHERE query_id = ? AND account_id = ? AND kind = 'query_charge'`)
      .get(input.queryId, input.accountId) as { unlocksDelta: number; creditsDelta: number } | undefined;
    if (!charge || standing(db, input.queryId) !== 'open') return undefined;
    return Ledger.move(db, {
      accountId: input.accountId,
      kind: 'query_reversal',
      unlocksDelta: -charge.unlocksDelta,
      creditsDelta: -charge.creditsDelta,
      queryId: input.queryId,
      memo: input.reason,
    });
  }).immediate();
}

/**
 * Records that a charged query was answered: the charge stands, and start-up reconciliation leaves it alone. A charge
 * already given back (a query that ran past the reconciliation window) is not answered after all: 503, so the caller
 * asks again rather than get an answer for free.
 */
export function markAnswered(db: Database, input: { accountId: string; queryId: string }): void {
  db.transaction(() => {
    if (standing(db, input.queryId) === 'reversed') {
      throw new ServiceError('service_unavailable', 'This query ran so long that its charge was already given back; ask again.');
    }
    Ledger.append(db, { kind: 'query_answered', accountId: input.accountId, queryId: input.queryId, memo: 'answered; the charge stands' });
  }).immediate();
}

/** How old an unfinished charge must be before it counts as orphaned: no query runs this long. */
export const orphanAfterMs = 10 * 60_000;

/**
 * Reverses balance charges a crash (or a query that never finished) left behind: a `query_charge` with neither a `query_answered` nor a
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
      memo: `reconciled: charged ${new Date(o.createdAt).toISOString()}, neither answered nor reversed within ${orphanAfterMs / 60_000} minutes (the query stopped mid-way)`,
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
