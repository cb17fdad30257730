import type { Sql } from './Sql.js';

/**
 * Derived state as one instance held it, kept for the others to start from: the search index's (migration 18) and the
 * vector codes' (migration 19), each the current one's header and its bytes in parts read one at a time, so neither
 * engine holds more than a part in a result. What the bytes mean is their owner's (`retrieval/index/Snapshot.ts`,
 * `retrieval/vectors/VectorSnapshot.ts`).
 */

/** Whose snapshot: each kind has tables of its own. */
export type Kind = 'search' | 'vectors';

const tables: Record<Kind, { head: string; parts: string }> = {
  search: { head: 'search_snapshot', parts: 'search_snapshot_parts' },
  vectors: { head: 'vector_snapshot', parts: 'vector_snapshot_parts' },
};

/** The current snapshot: its id, the log position it covers, its size, and its owner's own header (JSON). */
export type SnapshotRow = { id: string; position: number; bytes: number; parts: number; header: string; createdAt: number };

/** Bytes a part holds: well under PostgreSQL's limit for a value, and little to hold in memory at once. */
export const partBytes = 8 << 20;

/** The current snapshot's row, if one was written. */
export async function current(sql: Sql, kind: Kind): Promise<SnapshotRow | undefined> {
  return sql.get<SnapshotRow>(`SELECT id, position, bytes, parts, header, created_at AS createdAt FROM ${tables[kind].head} WHERE slot = 1`);
}

/**
 * One part of a snapshot, or undefined when that snapshot was replaced (its parts are gone). PostgreSQL sends it raw,
 * by a binary COPY: four times as fast as bytea's hex text, three times as fast as base64.
 */
export async function part(sql: Sql, kind: Kind, id: string, index: number): Promise<Uint8Array | undefined> {
  return sql.blob(`SELECT bytes FROM ${tables[kind].parts} WHERE snapshot_id = ? AND part = ?`, [id, index]);
}

/** A snapshot's bytes read whole, or why not: its parts went (it was replaced) or do not add up to its row. */
export type Read = { body: Uint8Array } | { missing: true } | { damaged: string };

/**
 * A snapshot's bytes, read part by part into one allocation (8-byte aligned, as a fresh one is), a few parts in flight
 * so the database encodes the next while this process copies the last; `onProgress` is told the bytes read so far.
 */
export async function read(sql: Sql, kind: Kind, row: SnapshotRow, onProgress?: (done: number) => void): Promise<Read> {
  const whole = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= 2 ** 32;
  if (!whole(row.bytes) || !whole(row.parts)) return { damaged: `its sizes are not whole numbers a store holds (${row.bytes} bytes, ${row.parts} parts)` };
  // Every part but the last is as long as the first: it says where the others go.
  const opening = await part(sql, kind, row.id, 0);
  if (!opening) return { missing: true };
  const size = opening.length;
  if (size === 0 || size > row.bytes || row.parts !== Math.ceil(row.bytes / size)) return { damaged: `its ${row.parts} parts do not hold its ${row.bytes} bytes` };
  let body: Uint8Array;
  try {
    // Shared memory: the search index's threads read the views a snapshot is decoded into where they lie.
    body = new Uint8Array(new SharedArrayBuffer(row.bytes));
  } catch (error) {
    // A size the process cannot hold (or a damaged row claiming one): the state is rebuilt from rows instead.
    return { damaged: `its ${row.bytes} bytes cannot be held here (${error instanceof Error ? error.message : String(error)})` };
  }
  body.set(opening);
  let done = size;
  onProgress?.(done);
  let next = 1;
  let missing = false;
  let damaged: string | undefined;
  const reader = async () => {
    for (let index = next++; index < row.parts && !missing && damaged === undefined; index = next++) {
      const bytes = await part(sql, kind, row.id, index);
      if (!bytes) {
        missing = true;
        return;
      }
      const at = index * size;
      const expected = Math.min(size, row.bytes - at);
      if (bytes.length !== expected) {
        damaged = `part ${index} holds ${bytes.length} bytes, not ${expected}`;
        return;
      }
      body.set(bytes, at);
      done += bytes.length;
      onProgress?.(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(3, row.parts) }, reader));
  if (damaged !== undefined) return { damaged };
  return missing ? { missing: true } : { body };
}

/**
 * Makes `body` the current snapshot of its kind: its parts (`size` bytes each but the last) under its own id, each
 * written on its own so no write holds the database for long (a snapshot of a million chunks is hundreds of megabytes:
 * in one transaction SQLite's write lock would stall every other writer for seconds); then, in one short transaction,
 * its row replaces the old one and every other part of that kind goes, the old snapshot's and any a writer stopped
 * part-way left behind. Until then readers read the old one whole; one part-way through it then finds a part missing
 * and reads the new one.
 */
export async function replace(sql: Sql, kind: Kind, snapshot: Omit<SnapshotRow, 'bytes' | 'parts'>, body: Uint8Array, size = partBytes): Promise<void> {
  const { head, parts: partsTable } = tables[kind];
  const parts = Math.ceil(body.length / size);
  for (let i = 0; i < parts; i++) {
    await sql.run(`INSERT INTO ${partsTable} (snapshot_id, part, bytes) VALUES (?, ?, ?)`, [snapshot.id, i, asBuffer(body.subarray(i * size, (i + 1) * size))]);
  }
  await sql.transaction(async (tx) => {
    await tx.run(
      `INSERT INTO ${head} (slot, id, position, bytes, parts, header, created_at) VALUES (1, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (slot) DO UPDATE SET id = excluded.id, position = excluded.position, bytes = excluded.bytes, parts = excluded.parts,
         header = excluded.header, created_at = excluded.created_at`,
      [snapshot.id, snapshot.position, body.length, parts, snapshot.header, snapshot.createdAt],
    );
    await tx.run(`DELETE FROM ${partsTable} WHERE snapshot_id <> ?`, [snapshot.id]);
  });
}

/** The same bytes as a Buffer, which both drivers bind as a blob. */
const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);

/** Deletes the snapshot of a kind (tests, and a store whose rows were reset). */
export async function drop(sql: Sql, kind: Kind): Promise<void> {
  await sql.transaction(async (tx) => {
    await tx.run(`DELETE FROM ${tables[kind].parts}`);
    await tx.run(`DELETE FROM ${tables[kind].head}`);
  });
}
