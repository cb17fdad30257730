import { logKept as searchLogKept } from '../../store/SearchDocs.js';
import type { Store } from '../../store/Store.js';
import type * as SnapshotKeeper from '../SnapshotKeeper.js';
import * as LogHoles from '../LogHoles.js';
import * as StoredSnapshots from '../StoredSnapshots.js';
import type { InvertedIndex } from './InvertedIndex.js';
import * as Snapshot from './Snapshot.js';
import { analysisVersion } from './SearchTerms.js';

/**
 * The lexical index's snapshot in the store: read whole into one allocation (part by part, telling how far it got)
 * when the write log still reaches back to it, and written by one instance for the others.
 */

/** How far a load has got: bytes of a snapshot, or chunks read from rows. */
export type Progress = { source: 'snapshot' | 'rows'; done: number; total: number };

/** What this store is now, for a snapshot to be checked against: its id and its analysis. */
async function expected(store: Store, makeId = false): Promise<{ store: string; analysis: string }> {
  return { store: await StoredSnapshots.storeId(store, makeId), analysis: (await store.search.analysis()) ?? analysisVersion };
}

/** An index with the log position it covers, the positions below it still empty then, and the log's first position they were noted against. */
export type Taken = { index: InvertedIndex; position: number; holes: LogHoles.Carried[]; holesFloor: number };

/**
 * The index of the current snapshot and the log position it covers; undefined when there is none. Throws
 * `Snapshot.Refused` when there is one that must not be used: of another format, store or analysis, damaged, or older
 * than what the write log still holds (it could not be brought up to date).
 */
export async function read(store: Store, onProgress?: (progress: Progress) => void): Promise<Taken | undefined> {
  const now = await expected(store);
  return StoredSnapshots.read<Snapshot.Header, Taken>(store, 'search', {
    logBounds: () => store.search.logBounds(),
    check: (header) => Snapshot.check(header, now),
    decode(header, body, row) {
      return {
        index: Snapshot.decode(header, body, now),
        position: row.position,
        holes: LogHoles.carried(header.holes, header.holesSince, row.position),
        holesFloor: LogHoles.carriedFloor(header.holesFloor, row.position),
      };
    },
    onProgress: (done, total) => onProgress?.({ source: 'snapshot', done, total }),
  });
}

/**
 * Makes an index the store's snapshot, and returns its size in bytes and the log position it covers. `take` gives the
 * index with the position it covers; it is encoded in the same turn, before anything can change it.
 */
export async function write(store: Store, take: () => Taken): Promise<{ bytes: number; position: number }> {
  const now = await expected(store, true);
  const { index, position, holes, holesFloor } = take();
  const { header, body } = Snapshot.encode(index, { ...now, position, ...LogHoles.header(holes), holesFloor });
  await StoredSnapshots.write(store, 'search', header, body);
  return { bytes: body.length, position };
}

/** What the keeper asks of a loaded lexical index. */
type Kept = { size(): { chunks: number }; origin(): { refused?: string }; writeSnapshot(): Promise<{ bytes: number; position: number }> };

/** The lexical index as the snapshot keeper sees it, once loaded (`index` gives undefined while it loads). */
export function subject(store: Store, index: () => Kept | undefined): SnapshotKeeper.Subject {
  return {
    kind: 'search',
    job: 'search_snapshot',
    name: 'search index',
    chunks: () => index()?.size().chunks,
    fits: (row) => row.id !== index()?.origin().refused,
    logBounds: () => store.search.logBounds(),
    logKept: searchLogKept,
    write: async () => {
      const loaded = index();
      if (!loaded) throw new Error('the search index is not loaded');
      return loaded.writeSnapshot();
    },
  };
}
