import * as Ids from '../store/Ids.js';
import type { Kind, SnapshotRow } from '../store/Snapshots.js';
import type { Store } from '../store/Store.js';
import * as LogHoles from './LogHoles.js';
import { type Layout, Refused } from './Sections.js';

/**
 * Reading and writing a snapshot of derived state in the store, whatever it holds: the current one's row, its header
 * checked against the row, the log it was stamped against still reaching back to it, and its bytes read whole. What
 * the bytes mean is the caller's (`decode`).
 */

/**
 * What every snapshot's header says, beside what its owner adds (`holes`: positions below it still empty then;
 * `holesFloor`: the log's first position they were noted against, absent in snapshots written before it was kept).
 */
export type Stamped = { position: number; bytes: number; crc32: number; sections: Layout; holes: number[]; holesSince?: number[]; holesFloor?: number };

/** A log's first and last positions (null when it is empty). */
type LogBounds = { first: number | null; last: number | null };

const storeIdKey = 'store_id';

/**
 * This store's id, for a snapshot to be checked against: made by the first snapshot written (of either kind), so
 * reading writes nothing; a store without one has no snapshot of its own.
 */
export async function storeId(store: Store, makeId = false): Promise<string> {
  return (await store.meta.get(storeIdKey)) ?? (makeId ? await store.meta.claim(storeIdKey, Ids.random('store')) : 'none');
}

/**
 * Whether a snapshot covering a log to `position` can be brought up to date from the log as it is now: it is at the
 * log's end, or the log still holds the entry after it.
 */
export function followable(position: number, { first, last }: LogBounds): boolean {
  return (last ?? 0) === position || (last !== null && first !== null && last > position && first <= position + 1);
}

/** What a kind of snapshot is read with. */
export type Reading<H extends Stamped, T> = {
  /** The log the snapshot follows. */
  logBounds(): Promise<LogBounds>;
  /** Throws `Refused` for a header of other state (another store, format, index): checked before any byte is read. */
  check(header: H): void;
  /** What the bytes hold (throws `Refused` when they do not read as it). */
  decode(header: H, body: Uint8Array, row: SnapshotRow): T;
  onProgress?: ((done: number, total: number) => void) | undefined;
};

/**
 * What `decode` makes of the current snapshot of a kind; undefined when there is none. Throws `Refused` (with the
 * snapshot's id) when there is one that must not be used: its header does not read, disagrees with its row or is of
 * other state, it is older than what the log still holds, its bytes are damaged, or they do not decode. A snapshot
 * replaced while it is read loses its parts: it is read again from the new one's row, three times at most.
 */
export async function read<H extends Stamped, T>(store: Store, kind: Kind, reading: Reading<H, T>): Promise<T | undefined> {
  const { logBounds, check, decode, onProgress } = reading;
  let lastId: string | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const row = await store.snapshots.current(kind);
    if (!row) return undefined;
    lastId = row.id;
    try {
      const header = headerOf<H>(row);
      check(header);
      const bounds = await logBounds();
      if (!followable(row.position, bounds)) throw new Refused(`it covers the write log to ${row.position}, and the log now holds ${bounds.first ?? '-'} to ${bounds.last ?? '-'}`);
      // A write it was waiting for that committed late may have been pruned from the log since: it cannot be had. A
      // hole already below the log's start when noted (a store copy's log keeps only its last entry) was not pruned since.
      const floor = LogHoles.carriedFloor(header.holesFloor, row.position);
      const lost = LogHoles.carried(header.holes, header.holesSince, row.position).find(({ seq }) => seq >= floor && bounds.first !== null && seq < bounds.first);
      if (lost !== undefined) throw new Refused(`the log was pruned past position ${lost.seq}, a write in flight when it was made`);
      const got = await store.snapshots.read(kind, row, (done) => onProgress?.(done, row.bytes));
      if ('missing' in got) continue;
      if ('damaged' in got) throw new Refused(got.damaged);
      return decode(header, got.body, row);
    } catch (error) {
      if (error instanceof Refused) error.snapshotId = row.id;
      throw error;
    }
  }
  const refused = new Refused('its parts were missing (or it was replaced) at each of three reads');
  refused.snapshotId = lastId;
  throw refused;
}

/** A row's header, if it reads as one and agrees with its row. */
function headerOf<H extends Stamped>(row: SnapshotRow): H {
  let header: H;
  try {
    header = JSON.parse(row.header) as H;
  } catch {
    throw new Refused('its header is not JSON');
  }
  if (typeof header !== 'object' || header === null || typeof header.sections !== 'object' || header.sections === null) throw new Refused('its header is not a snapshot header');
  if (header.position !== row.position || header.bytes !== row.bytes) throw new Refused('its header disagrees with its row');
  if (!Number.isSafeInteger(row.position) || row.position < 0) throw new Refused(`its log position ${row.position} is not a whole number`);
  return header;
}

/** Makes a header and body the current snapshot of a kind, under a new id. */
export async function write(store: Store, kind: Kind, header: Stamped, body: Uint8Array): Promise<void> {
  await store.snapshots.replace(kind, { id: Ids.random('snap'), position: header.position, header: JSON.stringify(header), createdAt: Date.now() }, body);
}
