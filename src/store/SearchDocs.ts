import type { Sql } from './Sql.js';

/**
 * The search index's rows, derived from chunks: each chunk's distinct stems with their weighted counts, written in
 * the transaction that writes the chunk (the analysis itself is the search index's, `retrieval/index/SearchTerms.ts`).
 * Stems are stored as ids into `search_terms`; an id, once committed, never changes, so any process may cache it.
 * Every document that comes or goes, and every change of who may read a channel, is appended to `search_log` by
 * triggers: an index in memory catches up from it.
 */

/** A chunk's row as it is written: its stems with their weighted counts. */
export type SearchDoc = { rowid: number; channelId: string; length: number; terms: Map<string, number> };

/** A stored document: its distinct term ids, ascending, with their weighted counts. */
export type StoredDoc = { rowid: number; channelId: string; length: number; terms: Uint8Array };

/** One entry of the write log, with the document it added (if it is still there). */
export type LogEntry = {
  seq: number;
  kind: 'add' | 'remove' | 'audiences' | 'reset';
  chunk: number | null;
  /** What a removed document held. */
  oldTerms: Uint8Array | null;
  channelId: string | null;
  length: number | null;
  terms: Uint8Array | null;
};

/** A chunk without its row, as the analysis reads it. */
export type Unindexed = { rowid: number; channelId: string; title: string; text: string; length: number };

/** Counts are stored in 16 bits. */
const maxCount = 65_535;

const versionKey = 'search_index_version';

/** Encodes (id, count) pairs, ascending by id, as varint id deltas each followed by a varint count. */
export function encode(pairs: [number, number][]): Buffer {
  pairs.sort((a, b) => a[0] - b[0]);
  const out = Buffer.allocUnsafe(pairs.length * 8);
  let at = 0;
  const varint = (n: number) => {
    while (n >= 0x80) {
      out[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    out[at++] = n;
  };
  let last = 0;
  for (const [id, count] of pairs) {
    varint(id - last);
    varint(Math.min(count, maxCount));
    last = id;
  }
  return out.subarray(0, at);
}

/** Calls `each(termId, count)` for every pair of an encoded document, ascending by term id. */
export function decode(terms: Uint8Array, each: (termId: number, count: number) => void): void {
  let at = 0;
  let id = 0;
  while (at < terms.length) {
    let delta = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = terms[at++]!;
      delta |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    let count = 0;
    shift = 0;
    do {
      byte = terms[at++]!;
      count |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    id += delta;
    each(id, count);
  }
}

/** Term ids known to be committed in this database. */
function committed(sql: Sql): Map<string, number> {
  let ids = sql.memo.get('search_terms') as Map<string, number> | undefined;
  if (!ids || ids.size > 500_000) sql.memo.set('search_terms', (ids = new Map()));
  return ids;
}

/**
 * The id of each stem, giving new ids where needed; `learned` collects ids given or read here, to be trusted once the
 * write commits. On PostgreSQL in two round trips; a stem another writer adds meanwhile is taken as theirs.
 */
async function idsOf(sql: Sql, stems: string[], learned: Map<string, number>): Promise<Map<string, number>> {
  const known = committed(sql);
  const ids = new Map<string, number>();
  const unknown: string[] = [];
  for (const stem of stems) {
    const id = known.get(stem) ?? learned.get(stem);
    if (id === undefined) unknown.push(stem);
    else ids.set(stem, id);
  }
  if (unknown.length === 0) return ids;
  if (sql.dialect === 'postgres') {
    // Only stems not there yet are inserted: a conflicting insert would still take a number from the sequence, and
    // term ids index arrays in memory.
    await sql.run(
      `INSERT INTO search_terms (term) SELECT t FROM unnest(CAST(? AS TEXT[])) AS t
       WHERE NOT EXISTS (SELECT 1 FROM search_terms s WHERE s.term = t) ON CONFLICT (term) DO NOTHING`,
      [unknown],
    );
    for (const row of await sql.all<{ id: number; term: string }>('SELECT id, term FROM search_terms WHERE term = ANY(CAST(? AS TEXT[]))', [unknown])) {
      ids.set(row.term, row.id);
      learned.set(row.term, row.id);
    }
    return ids;
  }
  for (const stem of unknown) {
    const id =
      (await sql.get<{ id: number }>('SELECT id FROM search_terms WHERE term = ?', [stem]))?.id ??
      (await sql.get<{ id: number }>('INSERT INTO search_terms (term) VALUES (?) RETURNING id', [stem]))!.id;
    ids.set(stem, id);
    learned.set(stem, id);
  }
  return ids;
}

/**
 * Writes the index rows of chunks, replacing any they had: inside the transaction that wrote the chunks. Term ids it
 * gives are remembered once that transaction commits (a caller's outer transaction could still roll them back).
 */
export async function put(sql: Sql, docs: SearchDoc[]): Promise<void> {
  if (docs.length === 0) return;
  // The log is kept short as writes go: an index further behind than what is kept reloads in full.
  const writes = ((sql.memo.get('search_writes') as number | undefined) ?? 0) + 1;
  sql.memo.set('search_writes', writes);
  if (writes % 1000 === 0) await trimLog(sql);
  const learned = new Map<string, number>();
  await sql.transaction(async (tx) => {
    const ids = await idsOf(tx, [...new Set(docs.flatMap((d) => [...d.terms.keys()]))], learned);
    for (const doc of docs) {
      // A row replaced is logged as removed and added again, so indexes in memory take its old terms out.
      await tx.run('DELETE FROM search_docs WHERE rowid = ?', [doc.rowid]);
      await tx.run('INSERT INTO search_docs (rowid, channel_id, length, terms) VALUES (?, ?, ?, ?)', [
        doc.rowid,
        doc.channelId,
        doc.length,
        encode([...doc.terms].map(([stem, n]) => [ids.get(stem)!, n])),
      ]);
    }
  });
  if (!sql.inTransaction) for (const [stem, id] of learned) committed(sql).set(stem, id);
}

/** The id of each stem some chunk ever had; others are left out. */
export async function termIds(sql: Sql, stems: string[]): Promise<Map<string, number>> {
  const known = committed(sql);
  const ids = new Map<string, number>();
  const unknown = stems.filter((stem) => {
    const id = known.get(stem);
    if (id !== undefined) ids.set(stem, id);
    return id === undefined;
  });
  if (unknown.length === 0) return ids;
  const rows =
    sql.dialect === 'postgres'
      ? await sql.all<{ id: number; term: string }>('SELECT id, term FROM search_terms WHERE term = ANY(CAST(? AS TEXT[]))', [unknown])
      : await sql.all<{ id: number; term: string }>('SELECT id, term FROM search_terms WHERE term IN (SELECT value FROM json_each(?))', [unknown]);
  for (const row of rows) {
    ids.set(row.term, row.id);
    if (!sql.inTransaction) known.set(row.term, row.id);
  }
  return ids;
}

/** How many chunks have a row. */
export async function count(sql: Sql): Promise<number> {
  return Number((await sql.get<{ n: number }>('SELECT count(*) AS n FROM search_docs'))!.n);
}

/** Up to `limit` stored documents after `afterRowid`, in rowid order: the index loads page by page. */
export async function page(sql: Sql, afterRowid: number, limit: number): Promise<StoredDoc[]> {
  return sql.all<StoredDoc>('SELECT rowid, channel_id AS channelId, length, terms FROM search_docs WHERE rowid > ? ORDER BY rowid LIMIT ?', [afterRowid, limit]);
}

/**
 * The first and last position of the write log (null when it is empty): one subquery each, which SQLite answers from
 * the key alone (min and max in one SELECT make it scan the log, 5 ms per question at 100k writes).
 */
export async function logBounds(sql: Sql): Promise<{ first: number | null; last: number | null }> {
  return (await sql.get<{ first: number | null; last: number | null }>('SELECT (SELECT min(seq) FROM search_log) AS first, (SELECT max(seq) FROM search_log) AS last'))!;
}

/** Up to `limit` log entries after `afterSeq`, in order, each added document with its row. */
export async function changes(sql: Sql, afterSeq: number, limit: number): Promise<LogEntry[]> {
  return sql.all<LogEntry>(
    `SELECT l.seq, l.kind, l.chunk, l.terms AS oldTerms, d.channel_id AS channelId, d.length, d.terms
     FROM search_log l LEFT JOIN search_docs d ON l.kind = 'add' AND d.rowid = l.chunk WHERE l.seq > ? ORDER BY l.seq LIMIT ?`,
    [afterSeq, limit],
  );
}

/** The log entries at the given positions that are there (committed since they were found missing), in order. */
export async function changesAt(sql: Sql, seqs: number[]): Promise<LogEntry[]> {
  const select = `SELECT l.seq, l.kind, l.chunk, l.terms AS oldTerms, d.channel_id AS channelId, d.length, d.terms
     FROM search_log l LEFT JOIN search_docs d ON l.kind = 'add' AND d.rowid = l.chunk`;
  return sql.dialect === 'postgres'
    ? sql.all<LogEntry>(`${select} WHERE l.seq = ANY(CAST(? AS BIGINT[])) ORDER BY l.seq`, [seqs])
    : sql.all<LogEntry>(`${select} WHERE l.seq IN (SELECT value FROM json_each(?)) ORDER BY l.seq`, [seqs]);
}

/** Which of the positions from `after` (excluded) to `upTo` (included) hold an entry now. */
export async function present(sql: Sql, after: number, upTo: number): Promise<number[]> {
  return (await sql.all<{ seq: number }>('SELECT seq FROM search_log WHERE seq > ? AND seq <= ? ORDER BY seq', [after, upTo])).map((r) => r.seq);
}

/** The analysis the stored rows were written with. */
export async function analysis(sql: Sql): Promise<string | undefined> {
  return (await sql.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [versionKey]))?.value;
}

/** Drops every row, to be written again with analysis `version`: every index in memory reloads. */
export async function reset(sql: Sql, version: string): Promise<void> {
  await sql.transaction(async (tx) => {
    await tx.run('DELETE FROM search_docs');
    await tx.run('DELETE FROM search_log');
    await tx.run(`INSERT INTO search_log (kind) VALUES ('reset')`);
    await tx.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [versionKey, version]);
  });
}

/** How many chunks have no row. */
export async function unindexedCount(sql: Sql): Promise<number> {
  return (await sql.get<{ n: number }>('SELECT count(*) AS n FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM search_docs d WHERE d.rowid = c.rowid)'))!.n;
}

/** Up to `limit` chunks without a row after `afterRowid`, in rowid order. */
export async function unindexed(sql: Sql, afterRowid: number, limit: number): Promise<Unindexed[]> {
  return sql.all<Unindexed>(
    `SELECT c.rowid AS rowid, i.channel_id AS channelId, i.title, c.text, c.token_count AS length
     FROM chunks c JOIN items i ON i.id = c.item_id
     WHERE c.rowid > ? AND NOT EXISTS (SELECT 1 FROM search_docs d WHERE d.rowid = c.rowid) ORDER BY c.rowid LIMIT ?`,
    [afterRowid, limit],
  );
}

/** Log entries kept: an index further behind than that reloads in full. */
export const logKept = 200_000;

/** Keeps the last `keep` log entries. */
export async function trimLog(sql: Sql, keep = logKept): Promise<void> {
  await sql.run('DELETE FROM search_log WHERE seq <= (SELECT max(seq) FROM search_log) - ?', [keep]);
}
