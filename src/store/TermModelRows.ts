import type { Sql } from './Sql.js';

/**
 * What the term model reads of the corpus and keeps of itself: public chunks (of live public channels of profiles
 * that are not private), and its terms with their vectors and neighbour lists. The model's arithmetic is retrieval's
 * (`retrieval/terms/TermModel.ts`).
 */

const publicChannel = `ch.status <> 'paused' AND ch.access_level = 'public' AND p.visibility <> 'private'`;
const publicChunks = `FROM chunks c JOIN items i ON i.id = c.item_id JOIN channels ch ON ch.id = i.channel_id JOIN profiles p ON p.id = ch.profile_id WHERE ${publicChannel}`;
const metaKey = 'term_model';

/** One stored term. */
export type TermRow = { term: string; idf: number; lsa: Buffer; lsaNeighbours: string; ppmiNeighbours: string };

/** How many public chunks there are; with `afterRowid`, only those after it. */
export async function publicChunkCount(sql: Sql, afterRowid = 0): Promise<number> {
  return (await sql.get<{ n: number }>(`SELECT count(*) AS n ${publicChunks} AND c.rowid > ?`, [afterRowid]))!.n;
}

/** The rowids of every public chunk. */
export async function publicChunkRowids(sql: Sql): Promise<number[]> {
  return (await sql.all<{ rowid: number }>(`SELECT c.rowid AS rowid ${publicChunks}`)).map((r) => r.rowid);
}

/** Up to `limit` public chunks after `afterRowid`, oldest first, with their items' titles. */
export async function publicChunksAfter(sql: Sql, afterRowid: number, limit: number): Promise<{ rowid: number; text: string; title: string }[]> {
  return sql.all(`SELECT c.rowid AS rowid, c.text AS text, i.title AS title ${publicChunks} AND c.rowid > ? ORDER BY c.rowid LIMIT ?`, [afterRowid, limit]);
}

const ids = { sqlite: 'SELECT value FROM json_each(?)', postgres: 'SELECT unnest(CAST(? AS BIGINT[]))' };

/** The texts and titles of the given chunks that exist, by rowid. */
export async function chunkTexts(sql: Sql, rowids: number[]): Promise<Map<number, { text: string; title: string }>> {
  if (rowids.length === 0) return new Map();
  const rows = await sql.all<{ rowid: number; text: string; title: string }>(
    `SELECT c.rowid AS rowid, c.text AS text, i.title AS title FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid IN (${ids[sql.dialect]})`,
    [sql.dialect === 'sqlite' ? JSON.stringify(rowids) : rowids],
  );
  return new Map(rows.map((r) => [r.rowid, { text: r.text, title: r.title }]));
}

/** The newest chunk's rowid, public or not (0 when there is none). */
export async function lastChunkRowid(sql: Sql): Promise<number> {
  return (await sql.get<{ last: number | null }>('SELECT max(rowid) AS last FROM chunks'))!.last ?? 0;
}

/** The ids of the public channels created by `asOf`, in order. */
export async function publicChannelsAsOf(sql: Sql, asOf: number): Promise<string[]> {
  const rows = await sql.all<{ id: string }>(`SELECT ch.id FROM channels ch JOIN profiles p ON p.id = ch.profile_id WHERE ${publicChannel} AND ch.created_at <= ? ORDER BY ch.id`, [asOf]);
  return rows.map((r) => r.id);
}

/** The stored model's description, as its build wrote it. */
export async function info(sql: Sql): Promise<string | undefined> {
  return (await sql.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [metaKey]))?.value;
}

const order = { sqlite: 'ORDER BY term', postgres: 'ORDER BY term COLLATE "C"' };

/** Every stored term, in the order of their bytes (the same on every engine). */
export async function terms(sql: Sql): Promise<TermRow[]> {
  return sql.all<TermRow>(`SELECT term, idf, lsa, lsa_neighbours AS lsaNeighbours, ppmi_neighbours AS ppmiNeighbours FROM term_model_terms ${order[sql.dialect]}`);
}

async function insert(sql: Sql, rows: TermRow[], foldedAt: number | null): Promise<number> {
  let added = 0;
  for (const r of rows) {
    added += await sql.run(
      'INSERT INTO term_model_terms (term, idf, lsa, lsa_neighbours, ppmi_neighbours, folded_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (term) DO NOTHING',
      [r.term, r.idf, r.lsa, r.lsaNeighbours, r.ppmiNeighbours, foldedAt],
    );
  }
  return added;
}

/** Replaces the model: its terms and its description, in one transaction. */
export async function replace(sql: Sql, rows: TermRow[], description: string): Promise<void> {
  await sql.transaction(async (tx) => {
    await tx.run('DELETE FROM term_model_terms');
    await insert(tx, rows, null);
    await tx.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [metaKey, description]);
  });
}

/**
 * Adds folded-in terms (a term already there is kept) and the new description, unless the stored description is no
 * longer `expected` (a rebuild or another update landed meanwhile): then nothing, and undefined. Returns how many
 * terms were added.
 */
export async function fold(sql: Sql, input: { rows: TermRow[]; expected: string; next: (added: number) => string; at: number }): Promise<number | undefined> {
  return sql.transaction(async (tx) => {
    const current = await tx.get<{ value: string }>(`SELECT value FROM meta WHERE key = ?${tx.dialect === 'postgres' ? ' FOR UPDATE' : ''}`, [metaKey]);
    if (current?.value !== input.expected) return undefined;
    const added = await insert(tx, input.rows, input.at);
    await tx.run('UPDATE meta SET value = ? WHERE key = ?', [input.next(added), metaKey]);
    return added;
  });
}
