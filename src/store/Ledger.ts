import type { Database } from './Database.js';
import { ServiceError } from '../errors/ServiceError.js';

/** One append-only ledger row. */
export type Entry = {
  id: number;
  createdAt: number;
  accountId: string | null;
  profileId: string | null;
  channelId: string | null;
  kind: string;
  unlocksDelta: number;
  creditsDelta: number;
  usdMicros: number;
  queryId: string | null;
  reference: string | null;
  memo: string;
};

export type NewEntry = Partial<Omit<Entry, 'id' | 'createdAt' | 'kind'>> & { kind: string };

/** Appends a row. Callers that also move a balance do both inside one transaction. */
export function append(db: Database, entry: NewEntry): number {
  const result = db
    .prepare(
      `INSERT INTO ledger (created_at, account_id, profile_id, channel_id, kind, unlocks_delta, credits_delta, usd_micros, query_id, reference, memo)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(
      Date.now(),
      entry.accountId ?? null,
      entry.profileId ?? null,
      entry.channelId ?? null,
      entry.kind,
      entry.unlocksDelta ?? 0,
      entry.creditsDelta ?? 0,
      entry.usdMicros ?? 0,
      entry.queryId ?? null,
      entry.reference ?? null,
      entry.memo ?? '',
    );
  return Number(result.lastInsertRowid);
}

/**
 * Moves an account's balances and records why, atomically. A move that would take a balance below zero fails with
 * `insufficient_balance` and changes nothing.
 */
export function move(db: Database, entry: NewEntry & { accountId: string }): number {
  return db.transaction(() => {
    const unlocks = entry.unlocksDelta ?? 0;
    const credits = entry.creditsDelta ?? 0;
    const result = db
      .prepare(
        `UPDATE accounts SET unlock_balance = unlock_balance + ?, credit_balance = credit_balance + ?
         WHERE id = ? AND unlock_balance + ? >= 0 AND credit_balance + ? >= 0`,
      )
      .run(unlocks, credits, entry.accountId, unlocks, credits);
    if (result.changes === 0) {
      const exists = db.prepare('SELECT 1 FROM accounts WHERE id = ?').get(entry.accountId);
      if (!exists) throw new ServiceError('not_found', `no account "${entry.accountId}"`);
      throw new ServiceError('insufficient_balance');
    }
    return append(db, entry);
  }).immediate();
}

/** The newest entries, optionally of one account. */
export function entries(db: Database, options: { accountId?: string | undefined; limit?: number } = {}): Entry[] {
  const limit = options.limit ?? 100;
  const columns = `id, created_at AS createdAt, account_id AS accountId, profile_id AS profileId, channel_id AS channelId, kind,
    unlocks_delta AS unlocksDelta, credits_delta AS creditsDelta, usd_micros AS usdMicros, query_id AS queryId, reference, memo`;
  return (
    options.accountId
      ? db.prepare(`SELECT ${columns} FROM ledger WHERE account_id = ? ORDER BY id DESC LIMIT ?`).all(options.accountId, limit)
      : db.prepare(`SELECT ${columns} FROM ledger ORDER BY id DESC LIMIT ?`).all(limit)
  ) as Entry[];
}
