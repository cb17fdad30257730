import { randomUUID } from 'node:crypto';
import { connectionOf } from './engines/Sqlite.js';
import type { Sql } from './Sql.js';

/*
 * Layout. `chunk_embeddings` holds each chunk's float vector: the record exact similarities are computed from, and
 * the nearest-neighbour scan's sign codes are made from when a process loads them (retrieval/vectors/VectorCodes.ts).
 * `vector_log` records, by trigger, every chunk whose vector was written or deleted, in order: what a process holding
 * codes reads to stay current, whichever process wrote. Both tables come from migration 10; which embedder the
 * vectors are of is the `vector_index` meta value, with a generation that changes when the index is rebuilt.
 * Stores from before kept a sqlite-vec table beside them (`chunk_vectors`), and before quantization only that table,
 * of floats: `upgrade` carries such floats over and drops it.
 */

/** Which embedder built the vector index, and its dimension. */
export type IndexInfo = {
  embedderId: string;
  dimensions: number;
  /** Set when the index is created: a process holding an older index's codes in memory sees it was rebuilt. */
  generation?: string;
};

const infoKey = 'vector_index';
const fusionKey = 'vector_fusion';

/**
 * Writes kept in the log: a process further behind than this reads every code anew (about a second at 100k chunks),
 * so the log never grows past a few megabytes.
 */
export const logKept = 100_000;

async function meta(sql: Sql, key: string): Promise<string | undefined> {
  return (await sql.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key]))?.value;
}

async function setMeta(sql: Sql, key: string, value: string): Promise<void> {
  await sql.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
}

/** A meta value parsed once per distinct text: read at every question, the same text gives the same object. */
async function parsed<T>(sql: Sql, key: string): Promise<T | undefined> {
  const raw = await meta(sql, key);
  if (raw === undefined) return undefined;
  const cached = sql.memo.get(key) as { raw: string; value: T } | undefined;
  if (cached?.raw === raw) return cached.value;
  const value = Object.freeze(JSON.parse(raw)) as T;
  sql.memo.set(key, { raw, value });
  return value;
}

/** The embedder and dimension of the vector index, or undefined when there is none. */
export async function info(sql: Sql): Promise<IndexInfo | undefined> {
  return parsed<IndexInfo>(sql, infoKey);
}

/** The index a stored `vector_index` value describes. */
export const describedIn = (raw: string | undefined): IndexInfo | undefined => (raw === undefined ? undefined : (JSON.parse(raw) as IndexInfo));

/** The id a rebuild in progress carries, so a half-built index is never searched. */
export const building = (embedderId: string): string => `${embedderId} (building)`;

/** Empties the vector tables (and drops a store's legacy sqlite-vec table): every process reloads its codes. */
async function clear(tx: Sql): Promise<void> {
  await dropLegacy(tx);
  await tx.run('DELETE FROM chunk_embeddings');
  await tx.run('DELETE FROM vector_log');
}

/** Drops the vector index: retrieval is lexical only until the next reindex. */
export async function drop(sql: Sql): Promise<void> {
  await sql.transaction(async (tx) => {
    await clear(tx);
    await tx.run('DELETE FROM meta WHERE key = ?', [infoKey]);
  });
}

/**
 * Creates an empty vector index for one embedder, replacing any other. Deleting a chunk deletes its vector by trigger,
 * so replaced content never answers from a stale vector.
 */
export async function create(sql: Sql, index: IndexInfo): Promise<void> {
  if (!Number.isInteger(index.dimensions) || index.dimensions < 1) throw new Error(`bad vector dimension ${index.dimensions}`);
  await sql.transaction(async (tx) => {
    await clear(tx);
    await setMeta(tx, infoKey, JSON.stringify({ ...index, generation: randomUUID() }));
  });
}

/** Records that a rebuild finished: until then the index names an embedder no configuration matches. */
export async function markBuilt(sql: Sql, embedderId: string): Promise<void> {
  const current = await info(sql);
  if (current) await setMeta(sql, infoKey, JSON.stringify({ ...current, embedderId }));
}

const blob = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
/** The zero vector has no direction: cosine similarity is undefined for it, so it is kept out. */
const directionless = (v: Float32Array) => v.every((x) => x === 0);

/**
 * Stores vectors for chunks (by rowid), replacing any they had; a chunk whose vector is zero keeps none. Call inside
 * the transaction that wrote the chunks.
 */
export async function put(sql: Sql, rows: { rowid: number; vector: Float32Array }[]): Promise<void> {
  const current = await info(sql);
  if (!current || rows.length === 0) return;
  await upgrade(sql);
  for (const row of rows) {
    if (row.vector.length !== current.dimensions) throw new Error(`vector of ${row.vector.length} dimensions for an index of ${current.dimensions}`);
  }
  await sql.transaction(async (tx) => {
    for (const row of rows) {
      await tx.run('DELETE FROM chunk_embeddings WHERE rowid = ?', [row.rowid]);
      if (!directionless(row.vector)) await tx.run('INSERT INTO chunk_embeddings (rowid, embedding) VALUES (?, ?)', [row.rowid, blob(row.vector)]);
    }
    await tx.run('DELETE FROM vector_log WHERE seq <= (SELECT max(seq) FROM vector_log) - ?', [logKept]);
  });
}

/** How many chunks have a vector. */
export async function count(sql: Sql): Promise<number> {
  if (!(await info(sql))) return 0;
  await upgrade(sql);
  return (await sql.get<{ n: number }>('SELECT count(*) AS n FROM chunk_embeddings'))!.n;
}

/** A stored vector with the channel its chunk is in (null: the chunk or its vector is gone). */
export type StoredVector = { rowid: number; embedding: Buffer | null; channel: string | null };

/** Up to `limit` stored vectors after `afterRowid`, in rowid order, with their chunks' channels. */
export async function page(sql: Sql, afterRowid: number, limit: number): Promise<StoredVector[]> {
  return sql.all<StoredVector>(
    `SELECT e.rowid AS rowid, e.embedding AS embedding, i.channel_id AS channel FROM chunk_embeddings e
     JOIN chunks c ON c.rowid = e.rowid JOIN items i ON i.id = c.item_id WHERE e.rowid > ? ORDER BY e.rowid LIMIT ?`,
    [afterRowid, limit],
  );
}

/**
 * The first and last position of the vector log (null when it is empty): one subquery each, which SQLite answers from
 * the key alone (min and max in one SELECT make it scan the log).
 */
export async function logBounds(sql: Sql): Promise<{ first: number | null; last: number | null }> {
  return (await sql.get<{ first: number | null; last: number | null }>('SELECT (SELECT min(seq) FROM vector_log) AS first, (SELECT max(seq) FROM vector_log) AS last'))!;
}

/** Log entries, each with its chunk's vector and channel as they are now. */
const logged = `SELECT l.seq AS seq, l.chunk AS rowid, e.embedding AS embedding, i.channel_id AS channel FROM vector_log l
  LEFT JOIN chunk_embeddings e ON e.rowid = l.chunk LEFT JOIN chunks c ON c.rowid = e.rowid LEFT JOIN items i ON i.id = c.item_id`;

/** Up to `limit` log entries after `afterSeq`, in order, each with its chunk's vector and channel as they are now. */
export async function changes(sql: Sql, afterSeq: number, limit: number): Promise<(StoredVector & { seq: number })[]> {
  return sql.all<StoredVector & { seq: number }>(
    `${logged} WHERE l.seq > ? ORDER BY l.seq LIMIT ?`,
    [afterSeq, limit],
  );
}

const ids = { sqlite: 'SELECT value FROM json_each(?)', postgres: 'SELECT unnest(CAST(? AS BIGINT[]))' };

/** The log entries at the given positions that exist now (ones that committed late), as `changes` gives them. */
export async function changesAt(sql: Sql, seqs: number[]): Promise<(StoredVector & { seq: number })[]> {
  if (seqs.length === 0) return [];
  return sql.all<StoredVector & { seq: number }>(
    `${logged} WHERE l.seq IN (${ids[sql.dialect]}) ORDER BY l.seq`,
    [sql.dialect === 'sqlite' ? JSON.stringify(seqs) : seqs],
  );
}

/** Which of the log positions from `after` (excluded) to `upTo` (included) hold an entry now. */
export async function present(sql: Sql, after: number, upTo: number): Promise<number[]> {
  return (await sql.all<{ seq: number }>('SELECT seq FROM vector_log WHERE seq > ? AND seq <= ? ORDER BY seq', [after, upTo])).map((r) => r.seq);
}

/** The stored vectors of the given chunks that have one, by rowid. */
export async function embeddings(sql: Sql, rowids: number[]): Promise<Map<number, Buffer>> {
  if (rowids.length === 0) return new Map();
  const rows = await sql.all<{ rowid: number; embedding: Buffer }>(`SELECT rowid, embedding FROM chunk_embeddings WHERE rowid IN (${ids[sql.dialect]})`, [
    sql.dialect === 'sqlite' ? JSON.stringify(rowids) : rowids,
  ]);
  return new Map(rows.map((r) => [r.rowid, r.embedding]));
}

/** How vector similarity joins reranking for one embedder, as `profile-edge fit` measured it (see Fusion). */
export type StoredFusion = { embedderId: string; fusion: unknown };

/** The fusion fitted for an embedder, or undefined when none was (or one was for another embedder). */
export async function fusion(sql: Sql, embedderId: string): Promise<unknown> {
  const stored = await parsed<StoredFusion>(sql, fusionKey);
  return stored?.embedderId === embedderId ? stored.fusion : undefined;
}

/** Stores the fusion fitted for an embedder beside its vector index, replacing any other. */
export async function setFusion(sql: Sql, embedderId: string, fitted: unknown): Promise<void> {
  await setMeta(sql, fusionKey, JSON.stringify({ embedderId, fusion: fitted } satisfies StoredFusion));
}

/** A store's legacy sqlite-vec table, if it has one: 'floats' before quantization (the only copy), 'signs' after. */
function legacyLayout(sql: Sql): 'none' | 'floats' | 'signs' {
  const db = connectionOf(sql);
  const text = db?.prepare("SELECT sql FROM sqlite_master WHERE name = 'chunk_vectors'").pluck().get() as string | undefined;
  if (!text) return 'none';
  return /\bbit\[/i.test(text) ? 'signs' : 'floats';
}

async function dropLegacy(tx: Sql): Promise<void> {
  if (legacyLayout(tx) === 'none') return;
  await tx.script('DROP TRIGGER IF EXISTS chunks_vectors_delete; DROP TABLE IF EXISTS chunk_vectors; DROP TABLE IF EXISTS vector_channels;');
}

/**
 * Brings a SQLite store's vectors from before this layout to it, once: floats kept only in the sqlite-vec table (an
 * index built before quantization) are copied to `chunk_embeddings`, and the sqlite-vec table is dropped. Returns how
 * many vectors were carried over. Nothing to do on another engine, or once done.
 */
export async function upgrade(sql: Sql): Promise<number> {
  if (sql.memo.get('vectors_upgraded') === true || legacyLayout(sql) === 'none') {
    sql.memo.set('vectors_upgraded', true);
    return 0;
  }
  const current = await info(sql);
  const carried = await sql.transaction(async (tx) => {
    // Another process may have finished it while this one waited for the write lock.
    const layout = legacyLayout(tx);
    if (layout === 'none') return 0;
    let moved = 0;
    if (layout === 'floats' && current) {
      moved = await tx.run(
        `INSERT INTO chunk_embeddings (rowid, embedding)
         SELECT v.rowid, v.embedding FROM chunk_vectors v JOIN chunks c ON c.rowid = v.rowid
         WHERE length(v.embedding) = ? AND v.rowid NOT IN (SELECT rowid FROM chunk_embeddings)`,
        [current.dimensions * 4],
      );
      // The zero vector keeps no vector, as `put` does.
      await tx.run('DELETE FROM chunk_embeddings WHERE embedding = zeroblob(length(embedding))');
    }
    await dropLegacy(tx);
    return moved;
  });
  sql.memo.set('vectors_upgraded', true);
  return carried;
}
