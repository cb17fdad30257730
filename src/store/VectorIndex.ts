import type { Database } from './Database.js';
import { getMeta, setMeta } from './Database.js';

/** Which embedder built the vector index, and its dimension. */
export type IndexInfo = { embedderId: string; dimensions: number };

const infoKey = 'vector_index';

/** The embedder and dimension of the vector index, or undefined when there is none. */
export function info(db: Database): IndexInfo | undefined {
  const raw = getMeta(db, infoKey);
  return raw ? (JSON.parse(raw) as IndexInfo) : undefined;
}

/** Drops the vector index: retrieval is lexical only until the next reindex. */
export function drop(db: Database): void {
  db.transaction(() => {
    db.exec('DROP TRIGGER IF EXISTS chunks_vectors_delete; DROP TABLE IF EXISTS chunk_vectors;');
    db.prepare('DELETE FROM meta WHERE key = ?').run(infoKey);
  })();
}

/**
 * Creates an empty sqlite-vec index (cosine distance) for one embedder, replacing any other. Deleting a chunk deletes
 * its vector by trigger, so replaced content never answers from a stale vector.
 */
export function create(db: Database, index: IndexInfo): void {
  if (!Number.isInteger(index.dimensions) || index.dimensions < 1 || index.dimensions > 8192) throw new Error(`bad vector dimension ${index.dimensions}`);
  db.transaction(() => {
    db.exec('DROP TRIGGER IF EXISTS chunks_vectors_delete; DROP TABLE IF EXISTS chunk_vectors;');
    db.exec(`CREATE VIRTUAL TABLE chunk_vectors USING vec0(embedding float[${index.dimensions}] distance_metric=cosine)`);
    db.exec('CREATE TRIGGER chunks_vectors_delete AFTER DELETE ON chunks BEGIN DELETE FROM chunk_vectors WHERE rowid = old.rowid; END;');
    setMeta(db, infoKey, JSON.stringify(index));
  })();
}

const blob = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
/** The zero vector has no direction; sqlite-vec's cosine distance calls it identical to everything, so it is kept out. */
const directionless = (v: Float32Array) => v.every((x) => x === 0);

/** Records that a rebuild finished: until then the index names an embedder no configuration matches. */
export function markBuilt(db: Database, embedderId: string): void {
  const current = info(db);
  if (current) setMeta(db, infoKey, JSON.stringify({ ...current, embedderId }));
}

/** The id a rebuild in progress carries, so a half-built index is never searched. */
export const building = (embedderId: string): string => `${embedderId} (building)`;

/**
 * Stores vectors for chunks (by rowid), replacing any they had; a chunk whose vector is zero keeps none. Call inside
 * the transaction that wrote the chunks.
 */
export function put(db: Database, rows: { rowid: number; vector: Float32Array }[]): void {
  const current = info(db);
  if (!current || rows.length === 0) return;
  const remove = db.prepare('DELETE FROM chunk_vectors WHERE rowid = ?');
  const insert = db.prepare('INSERT INTO chunk_vectors (rowid, embedding) VALUES (?, ?)');
  for (const row of rows) {
    if (row.vector.length !== current.dimensions) throw new Error(`vector of ${row.vector.length} dimensions for an index of ${current.dimensions}`);
    remove.run(BigInt(row.rowid));
    if (!directionless(row.vector)) insert.run(BigInt(row.rowid), blob(row.vector));
  }
}

/** The k nearest chunks to a vector, with cosine similarity; none for the zero vector. */
export function nearest(db: Database, vector: Float32Array, k: number): { rowid: number; similarity: number }[] {
  if (!info(db) || directionless(vector)) return [];
  const rows = db
    .prepare('SELECT rowid, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance')
    .all(blob(vector), Math.min(4096, Math.max(1, k))) as { rowid: number | bigint; distance: number }[];
  return rows.map((r) => ({ rowid: Number(r.rowid), similarity: 1 - r.distance }));
}

/** How many chunks have a vector. */
export function count(db: Database): number {
  return info(db) ? (db.prepare('SELECT count(*) FROM chunk_vectors').pluck().get() as number) : 0;
}
