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

/** The store's id, made on first use: a snapshot names the store it was made from. */
async function storeId(store: Store): Promise<string> {
  return (await store.meta.get('store_id')) ?? store.meta.claim('store_id', Ids.random('store'));
}

/** What this store is now, for a snapshot to be checked against. */
async function expected(store: Store): Promise<{ store: string; analysis: string }> {
  return { store: await storeId(store), analysis: (await store.search.analysis()) ?? analysisVersion };
}

/**
 * The index of the current snapshot and the log position it covers; undefined when there is none. Throws
 * `Snapshot.Refused` when there is one that must not be used: of another format, store or analysis, damaged, or older
 * than what the write log still holds (it could not be brought up to date).
 */
export async function read(store: Store, onProgress?: (progress: Progress) => void): Promise<{ index: InvertedIndex; position: number } | undefined> {
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
async function readRow(store: Store, row: SnapshotRow, now: { store: string; analysis: string }, onProgress?: (progress: Progress) => void): Promise<{ index: InvertedIndex; position: number } | undefined> {
  let header: Snapshot.Header;
  try {
    header = JSON.parse(row.header) as Snapshot.Header;
  } catch {
    throw new Snapshot.Refused('its header is not JSON');
  }
  if (header.position !== row.position || header.bytes !== row.bytes) throw new Snapshot.Refused('its header disagrees with its row');
  const { first, last } = await store.search.logBounds();
  const followable = (last ?? 0) === row.position || (last !== null && first !== null && last > row.position && first <= row.position + 1);
  if (!followable) throw new Snapshot.Refused(`it covers the write log to ${row.position}, and the log now holds ${first ?? '-'} to ${last ?? '-'}`);
  const body = new Uint8Array(row.bytes);
  for (let part = 0, at = 0; part < row.parts; part++) {
    const bytes = await store.searchSnapshots.part(row.id, part);
    if (!bytes) return undefined;
    if (at + bytes.length > body.length) throw new Snapshot.Refused(`its parts hold more than its ${row.bytes} bytes`);
    body.set(bytes, at);
    at += bytes.length;
    onProgress?.({ source: 'snapshot', done: at, total: row.bytes });
  }
  return { index: Snapshot.decode(header, body, now), position: row.position };
}

/**
 * Makes an index the store's snapshot, and returns its size in bytes and the log position it covers. `take` gives the
 * index with the position it covers; it is encoded in the same turn, before anything can change it.
 */
export async function write(store: Store, take: () => { index: InvertedIndex; position: number }): Promise<{ bytes: number; position: number }> {
  const now = await expected(store);
  const { index, position } = take();
  const { header, body } = Snapshot.encode(index, { ...now, position });
  await store.searchSnapshots.replace({ id: Ids.random('snap'), position, header: JSON.stringify(header), createdAt: Date.now() }, body);
  return { bytes: body.length, position };
}
