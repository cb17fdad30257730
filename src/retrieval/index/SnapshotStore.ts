import * as Ids from '../../store/Ids.js';
import type { SnapshotRow } from '../../store/SearchSnapshots.js';
import type { Store } from '../../store/Store.js';
import type { InvertedIndex } from './InvertedIndex.js';
import * as Snapshot from './Snapshot.js';
import { analysisVersion } from './SearchTerms.js';

/**
 * The lexical index's snapshot in the store: read whole into one allocation (part by part, telling how far it got)
 * when the write log still reaches back to it, and written by one instance for the others.
 */

/** How far a load has got: bytes of a snapshot, or chunks read from rows. */
export type Progress = { source: 'snapshot' | 'rows'; done: number; total: number };

const storeIdKey = 'store_id';

/**
 * What this store is now, for a snapshot to be checked against: its id (made by the first snapshot written, so reading
 * writes nothing; a store without one has no snapshot of its own) and its analysis.
 */
async function expected(store: Store, makeId = false): Promise<{ store: string; analysis: string }> {
  const id = (await store.meta.get(storeIdKey)) ?? (makeId ? await store.meta.claim(storeIdKey, Ids.random('store')) : 'none');
  return { store: id, analysis: (await store.search.analysis()) ?? analysisVersion };
}

/**
 * The index of the current snapshot and the log position it covers; undefined when there is none. Throws
 * `Snapshot.Refused` when there is one that must not be used: of another format, store or analysis, damaged, or older
 * than what the write log still holds (it could not be brought up to date).
 */
export async function read(store: Store, onProgress?: (progress: Progress) => void): Promise<{ index: InvertedIndex; position: number; holes: number[] } | undefined> {
  const now = await expected(store);
  // A snapshot replaced while it is read loses its parts: read again from the new one's row.
  let lastId: string | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const row = await store.searchSnapshots.current();
    if (!row) return undefined;
    lastId = row.id;
    try {
      const read = await readRow(store, row, now, onProgress);
      if (read) return read;
    } catch (error) {
      if (error instanceof Snapshot.Refused) error.snapshotId = row.id;
      throw error;
    }
  }
  const refused = new Snapshot.Refused('its parts were missing (or it was replaced) at each of three reads');
  refused.snapshotId = lastId;
  throw refused;
}

/** The index of one snapshot row; undefined when it was replaced part-way through the read. */
async function readRow(store: Store, row: SnapshotRow, now: { store: string; analysis: string }, onProgress?: (progress: Progress) => void): Promise<{ index: InvertedIndex; position: number; holes: number[] } | undefined> {
  let header: Snapshot.Header;
  try {
    header = JSON.parse(row.header) as Snapshot.Header;
  } catch {
    throw new Snapshot.Refused('its header is not JSON');
  }
  if (typeof header !== 'object' || header === null || typeof header.sections !== 'object' || header.sections === null) throw new Snapshot.Refused('its header is not a snapshot header');
  if (header.position !== row.position || header.bytes !== row.bytes) throw new Snapshot.Refused('its header disagrees with its row');
  // Sizes a store could hold (and an allocation could take): anything else is damage.
  const whole = (n: unknown, max: number) => Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= max;
  if (!whole(row.bytes, 2 ** 32) || !whole(row.parts, 2 ** 32) || !whole(row.position, Number.MAX_SAFE_INTEGER)) throw new Snapshot.Refused(`its sizes are not whole numbers a store holds (${row.bytes} bytes, ${row.parts} parts)`);
  const { first, last } = await store.search.logBounds();
  const followable = (last ?? 0) === row.position || (last !== null && first !== null && last > row.position && first <= row.position + 1);
  if (!followable) throw new Snapshot.Refused(`it covers the write log to ${row.position}, and the log now holds ${first ?? '-'} to ${last ?? '-'}`);
  const body = new Uint8Array(row.bytes);
  // Every part but the last is as long as the first: it says where the others go.
  const opening = await store.searchSnapshots.part(row.id, 0);
  if (!opening) return undefined;
  const size = opening.length;
  if (size === 0 || size > row.bytes || row.parts !== Math.ceil(row.bytes / size)) throw new Snapshot.Refused(`its ${row.parts} parts do not hold its ${row.bytes} bytes`);
  body.set(opening);
  let done = size;
  onProgress?.({ source: 'snapshot', done, total: row.bytes });
  // The rest a few at a time: the database encodes the next while this process decodes the last (on PostgreSQL).
  let next = 1;
  let missing = false;
  const reader = async () => {
    for (let part = next++; part < row.parts && !missing; part = next++) {
      const bytes = await store.searchSnapshots.part(row.id, part);
      if (!bytes) {
        missing = true;
        return;
      }
      const at = part * size;
      const expected = Math.min(size, row.bytes - at);
      if (bytes.length !== expected) throw new Snapshot.Refused(`part ${part} holds ${bytes.length} bytes, not ${expected}`);
      body.set(bytes, at);
      done += bytes.length;
      onProgress?.({ source: 'snapshot', done, total: row.bytes });
    }
  };
  await Promise.all(Array.from({ length: Math.min(3, row.parts) }, reader));
  if (missing) return undefined;
  const holes = Array.isArray(header.holes) && header.holes.every((seq) => Number.isSafeInteger(seq) && seq <= row.position) ? header.holes : [];
  return { index: Snapshot.decode(header, body, now), position: row.position, holes };
}

/**
 * Makes an index the store's snapshot, and returns its size in bytes and the log position it covers. `take` gives the
 * index with the position it covers; it is encoded in the same turn, before anything can change it.
 */
export async function write(store: Store, take: () => { index: InvertedIndex; position: number; holes: number[] }): Promise<{ bytes: number; position: number }> {
  const now = await expected(store, true);
  const { index, position, holes } = take();
  const { header, body } = Snapshot.encode(index, { ...now, position, holes });
  await store.searchSnapshots.replace({ id: Ids.random('snap'), position, header: JSON.stringify(header), createdAt: Date.now() }, body);
  return { bytes: body.length, position };
}
