import type { Config } from '../config/Config.js';
import type { PaymentMode } from '../contract/Query.js';
import type { Database } from '../store/Database.js';
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
