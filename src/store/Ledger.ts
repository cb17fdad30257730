import { ServiceError } from '../errors/ServiceError.js';
import type { Sql } from './Sql.js';

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
export async function append(sql: Sql, entry: NewEntry): Promise<number> {
  const row = await sql.get<{ id: number }>(
    `INSERT INTO ledger (created_at, account_id, profile_id, channel_id, kind, unlocks_delta, credits_delta, usd_micros, query_id, reference, memo)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [
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
    ],
  );
  return row!.id;
}

/**
 * Moves an account's balances and records why, atomically. A move that would take a balance below zero fails with
 * `insufficient_balance` and changes nothing: the guarded UPDATE is one statement, so concurrent moves on one account
 * (in any process) are applied one after another and none overdraws.
 */
export async function move(sql: Sql, entry: NewEntry & { accountId: string }): Promise<number> {
  return sql.transaction(async (tx) => {
    const unlocks = entry.unlocksDelta ?? 0;
    const credits = entry.creditsDelta ?? 0;
    const changed = await tx.run(
      `UPDATE accounts SET unlock_balance = unlock_balance + ?, credit_balance = credit_balance + ?
       WHERE id = ? AND unlock_balance + ? >= 0 AND credit_balance + ? >= 0`,
      [unlocks, credits, entry.accountId, unlocks, credits],
    );
    if (changed === 0) {
      const exists = await tx.get('SELECT 1 AS found FROM accounts WHERE id = ?', [entry.accountId]);
      if (!exists) throw new ServiceError('not_found', `no account "${entry.accountId}"`);
      throw new ServiceError('insufficient_balance');
    }
    return append(tx, entry);
  });
}

/** The newest entries, optionally of one account. */
export async function entries(sql: Sql, options: { accountId?: string | undefined; limit?: number } = {}): Promise<Entry[]> {
  const limit = options.limit ?? 100;
  const columns = `id, created_at AS createdAt, account_id AS accountId, profile_id AS profileId, channel_id AS channelId, kind,
    unlocks_delta AS unlocksDelta, credits_delta AS creditsDelta, usd_micros AS usdMicros, query_id AS queryId, reference, memo`;
  return options.accountId
    ? sql.all<Entry>(`SELECT ${columns} FROM ledger WHERE account_id = ? ORDER BY id DESC LIMIT ?`, [options.accountId, limit])
    : sql.all<Entry>(`SELECT ${columns} FROM ledger ORDER BY id DESC LIMIT ?`, [limit]);
}
