import { ServiceError } from '../errors/ServiceError.js';
import type { Param, Sql } from './Sql.js';

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

export type NewEntry = Partial<Omit<Entry, 'id' | 'createdAt' | 'kind'>> & {
  kind: string;
  /** The serving process that took a query's charge: reconciliation settles only what a process that is gone left. */
  instanceId?: string | undefined;
};

/** The columns a new row is written with, and one row's placeholders for them. */
const written = 'created_at, account_id, profile_id, channel_id, kind, unlocks_delta, credits_delta, usd_micros, query_id, reference, memo, instance_id';
const marks = written.split(',').map(() => '?').join(', ');

/** A row's values in the order of `written`. */
function values(entry: NewEntry, at: number): Param[] {
  return [
    at,
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
    entry.instanceId ?? null,
  ];
}

/** Appends a row. Callers that also move a balance do both inside one transaction. */
export async function append(sql: Sql, entry: NewEntry): Promise<number> {
  const row = await sql.get<{ id: number }>(`INSERT INTO ledger (${written}) VALUES (${marks}) RETURNING id`, values(entry, Date.now()));
  return row!.id;
}

/** Rows one statement appends at most: each takes 12 of the engines' bound values (SQLite allows 32,766). */
const rowsPerStatement = 1_000;

/** Appends rows in the order given, in one statement as a rule: all land or none do. */
export async function appendMany(sql: Sql, entries: readonly NewEntry[]): Promise<void> {
  const at = Date.now();
  const insert = async (s: Sql, rows: readonly NewEntry[]) => {
    await s.run(`INSERT INTO ledger (${written}) VALUES ${rows.map(() => `(${marks})`).join(', ')}`, rows.flatMap((e) => values(e, at)));
  };
  if (entries.length <= rowsPerStatement) {
    if (entries.length > 0) await insert(sql, entries);
    return;
  }
  await sql.transaction(async (tx) => {
    for (let i = 0; i < entries.length; i += rowsPerStatement) await insert(tx, entries.slice(i, i + rowsPerStatement));
  });
}

/**
 * Moves an account's balances and records why, atomically. A move that would take a balance below zero fails with
 * `insufficient_balance` and changes nothing: the guarded UPDATE is one statement, so concurrent moves on one account
 * (in any process) are applied one after another and none overdraws. On PostgreSQL the update and its row are one
 * statement (a round trip, and no savepoint inside a caller's transaction); SQLite, which cannot update in a WITH,
 * runs the two in a transaction of their own.
 */
export async function move(sql: Sql, entry: NewEntry & { accountId: string }): Promise<number> {
  const unlocks = entry.unlocksDelta ?? 0;
  const credits = entry.creditsDelta ?? 0;
  const update = `UPDATE accounts SET unlock_balance = unlock_balance + ?, credit_balance = credit_balance + ?
    WHERE id = ? AND unlock_balance + ? >= 0 AND credit_balance + ? >= 0`;
  const guard = [unlocks, credits, entry.accountId, unlocks, credits];
  const refused = async (s: Sql): Promise<never> => {
    const exists = await s.get('SELECT 1 AS found FROM accounts WHERE id = ?', [entry.accountId]);
    if (!exists) throw new ServiceError('not_found', `no account "${entry.accountId}"`);
    throw new ServiceError('insufficient_balance');
  };
  if (sql.dialect === 'postgres') {
    const row = await sql.get<{ id: number }>(
      `WITH moved AS (${update} RETURNING id) INSERT INTO ledger (${written}) SELECT ${marks} FROM moved RETURNING id`,
      [...guard, ...values(entry, Date.now())],
    );
    return row?.id ?? refused(sql);
  }
  return sql.transaction(async (tx) => {
    if ((await tx.run(update, guard)) === 0) return refused(tx);
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
