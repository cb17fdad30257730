import { ServiceError } from '../errors/ServiceError.js';
import * as Ledger from './Ledger.js';
import { type Sql, within } from './Sql.js';

/**
 * A query's balance charge as the ledger tells it: a `query_charge` row, then a `query_answered` marker (the charge
 * stands) or a `query_reversal` (it was given back). Each step reads and writes in one transaction that holds the
 * query (SQLite: the write lock BEGIN IMMEDIATE takes; PostgreSQL: a transaction lock on the query's id), so a reversal
 * and an answer racing on one query cannot both land. The account's row is not held: its next query's charge does not
 * wait for this one's bookkeeping after the answer has left.
 */

/** The class of PostgreSQL's transaction locks on one query's charge (the second key is the query id's hash). */
const chargeLocks = 0x63686731;

/** Where a charged query stands: open, answered (the charge stands), or reversed. */
export type Standing = 'open' | 'answered' | 'reversed';

async function holdQuery(tx: Sql, queryId: string): Promise<void> {
  if (tx.dialect === 'postgres') await tx.get('SELECT pg_advisory_xact_lock(?, hashtext(?)) AS locked', [chargeLocks, queryId]);
}

async function standingOf(sql: Sql, queryId: string): Promise<Standing> {
  const kinds = (await sql.all<{ kind: string }>(`SELECT kind FROM ledger WHERE query_id = ? AND kind IN ('query_answered', 'query_reversal')`, [queryId])).map((r) => r.kind);
  return kinds.includes('query_reversal') ? 'reversed' : kinds.includes('query_answered') ? 'answered' : 'open';
}

/** Where a query's charge stands. */
export async function standing(sql: Sql, queryId: string): Promise<Standing> {
  return standingOf(sql, queryId);
}

/**
 * Gives a query's charge back, once, as its own ledger row: what the charge took, not today's price. A query already
 * answered or reversed is left alone. Returns the reversal's ledger id, or undefined when there was nothing to reverse.
 */
export async function reverse(sql: Sql, input: { accountId: string; queryId: string; reason: string }): Promise<number | undefined> {
  return within(sql, async (tx) => {
    await holdQuery(tx, input.queryId);
    const open = await tx.get<{ unlocksDelta: number; creditsDelta: number }>(
      `SELECT c.unlocks_delta AS unlocksDelta, c.credits_delta AS creditsDelta FROM ledger c
       WHERE c.query_id = ? AND c.account_id = ? AND c.kind = 'query_charge'
         AND NOT EXISTS (SELECT 1 FROM ledger o WHERE o.query_id = c.query_id AND o.kind IN ('query_answered', 'query_reversal'))`,
      [input.queryId, input.accountId],
    );
    if (!open) return undefined;
    return Ledger.move(tx, {
      accountId: input.accountId,
      kind: 'query_reversal',
      unlocksDelta: -open.unlocksDelta,
      creditsDelta: -open.creditsDelta,
      queryId: input.queryId,
      memo: input.reason,
    });
  });
}

/**
 * Marks a charged query answered: the charge stands. One already given back is not answered after all: 503, so the
 * caller asks again rather than get an answer for free. The marker is written unless a reversal is there, in one
 * statement: SQLite runs it alone, PostgreSQL after taking the query's lock.
 */
export async function markAnswered(sql: Sql, input: { accountId: string; queryId: string }): Promise<void> {
  const mark = async (tx: Sql) => {
    await holdQuery(tx, input.queryId);
    const marked = await tx.get<{ id: number }>(
      `INSERT INTO ledger (created_at, account_id, kind, query_id, memo) SELECT ?, ?, 'query_answered', ?, ?
       WHERE NOT EXISTS (SELECT 1 FROM ledger WHERE query_id = ? AND kind = 'query_reversal') RETURNING id`,
      [Date.now(), input.accountId, input.queryId, 'answered; the charge stands', input.queryId],
    );
    if (!marked) throw new ServiceError('service_unavailable', 'This query ran so long that its charge was already given back; ask again.');
  };
  await (sql.dialect === 'sqlite' ? mark(sql) : within(sql, mark));
}

/** A charge with neither an answer nor a reversal. */
export type Orphan = { accountId: string; unlocksDelta: number; creditsDelta: number; queryId: string; createdAt: number };

/**
 * Reverses the charges that have neither an answer nor a reversal and whose process is not serving: made in [since,
 * before) by a process that is gone or by none (a charge of a live instance is its own to answer or give back, however
 * long it takes), or taken by one of `instances` whatever their age, up to `claimedAt` (processes whose lease ran out,
 * claimed by the caller in this transaction: one that comes back charges anew under the same id). Each gets the memo
 * `why` gives it. One transaction, under a store-wide lock on
 * PostgreSQL: two processes reconciling at once reverse each charge once. Returns how many were reversed.
 */
export async function reverseOrphans(sql: Sql, input: { since: number; before: number; instances?: readonly string[]; claimedAt?: number; why: (orphan: Orphan) => string }): Promise<number> {
  const instances = input.instances ?? [];
  return sql.transaction(async (tx) => {
    if (tx.dialect === 'postgres') await tx.get('SELECT pg_advisory_xact_lock(?) AS locked', [0x6f727068]); // "orph"
    const claimed = instances.length > 0 ? ` OR (c.instance_id IN (${instances.map(() => '?').join(', ')}) AND c.created_at <= ?)` : '';
    const orphans = await tx.all<Orphan>(
      `SELECT c.account_id AS accountId, c.unlocks_delta AS unlocksDelta, c.credits_delta AS creditsDelta, c.query_id AS queryId, c.created_at AS createdAt
       FROM ledger c
       WHERE c.kind = 'query_charge' AND c.query_id IS NOT NULL
         AND ((c.created_at >= ? AND c.created_at < ? AND (c.instance_id IS NULL OR NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = c.instance_id)))${claimed})
         AND NOT EXISTS (SELECT 1 FROM ledger o WHERE o.query_id = c.query_id AND o.kind IN ('query_answered', 'query_reversal'))
       ORDER BY c.id`,
      [input.since, input.before, ...(instances.length > 0 ? [...instances, input.claimedAt ?? Number.MAX_SAFE_INTEGER] : [])],
    );
    let reversed = 0;
    for (const o of orphans) {
      // Read again under the query's lock: an answer may have landed since the list was read.
      await holdQuery(tx, o.queryId);
      if ((await standingOf(tx, o.queryId)) !== 'open') continue;
      await Ledger.move(tx, { accountId: o.accountId, kind: 'query_reversal', unlocksDelta: -o.unlocksDelta, creditsDelta: -o.creditsDelta, queryId: o.queryId, memo: input.why(o) });
      reversed += 1;
    }
    return reversed;
  });
}
