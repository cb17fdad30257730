import type { Sql } from './Sql.js';

/**
 * The search index's snapshot as the store keeps it (migration 18): the current one's header, and its bytes in parts
 * read one at a time, so neither engine holds more than a part in a result. What the bytes mean is the index's own
 * (`retrieval/index/Snapshot.ts`).
 */

/** The current snapshot: its id, the write-log position it covers, its size, and the index's own header (JSON). */
export type SnapshotRow = { id: string; position: number; bytes: number; parts: number; header: string; createdAt: number };

/** Bytes a part holds: well under PostgreSQL's limit for a value, and little to hold in memory at once. */
export const partBytes = 8 << 20;

/** The current snapshot's row, if one was written. */
export async function current(sql: Sql): Promise<SnapshotRow | undefined> {
  return sql.get<SnapshotRow>('SELECT id, position, bytes, parts, header, created_at AS createdAt FROM search_snapshot WHERE slot = 1');
}

/**
 * One part of a snapshot, or undefined when that snapshot was replaced (its parts are gone). PostgreSQL sends it raw,
 * by a binary COPY: four times as fast as bytea's hex text, three times as fast as base64.
 */
export async function part(sql: Sql, id: string, index: number): Promise<Uint8Array | undefined> {
  return sql.blob('SELECT bytes FROM search_snapshot_parts WHERE snapshot_id = ? AND part = ?', [id, index]);
}

/**
 * Makes `body` the current snapshot: its parts (`size` bytes each but the last) under its own id, each written on its
 * own so no write holds the database for long (a snapshot of a million chunks is hundreds of megabytes: in one
 * transaction SQLite's write lock would stall every other writer for seconds); then, in one short transaction, its row
 * replaces the old one and every other part goes, the old snapshot's and any a writer stopped part-way left behind.
 * Until then readers read the old one whole; one part-way through it then finds a part missing and reads the new one.
 */
export async function replace(sql: Sql, snapshot: Omit<SnapshotRow, 'bytes' | 'parts'>, body: Uint8Array, size = partBytes): Promise<void> {
  const parts = Math.ceil(body.length / size);
  for (let i = 0; i < parts; i++) {
    await sql.run('INSERT INTO search_snapshot_parts (snapshot_id, part, bytes) VALUES (?, ?, ?)', [snapshot.id, i, asBuffer(body.subarray(i * size, (i + 1) * size))]);
  }
  await sql.transaction(async (tx) => {
    await tx.run(
      `INSERT INTO search_snapshot (slot, id, position, bytes, parts, header, created_at) VALUES (1, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (slot) DO UPDATE SET id = excluded.id, position = excluded.position, bytes = excluded.bytes, parts = excluded.parts,
         header = excluded.header, created_at = excluded.created_at`,
      [snapshot.id, snapshot.position, body.length, parts, snapshot.header, snapshot.createdAt],
    );
    await tx.run('DELETE FROM search_snapshot_parts WHERE snapshot_id <> ?', [snapshot.id]);
  });
}

/** The same bytes as a Buffer, which both drivers bind as a blob. */
const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);

/** Deletes the snapshot (tests, and a store whose rows were reset). */
export async function drop(sql: Sql): Promise<void> {
  await sql.transaction(async (tx) => {
    await tx.run('DELETE FROM search_snapshot_parts');
    await tx.run('DELETE FROM search_snapshot');
  });
}
