import * as SignCodes from '../../store/SignCodes.js';
import type { Store } from '../../store/Store.js';
import { type IndexInfo, logKept, type StoredVector } from '../../store/VectorIndex.js';
import * as LogHoles from '../LogHoles.js';
import { Refused } from '../Sections.js';
import type * as SnapshotKeeper from '../SnapshotKeeper.js';
import * as VectorSnapshot from './VectorSnapshot.js';

/**
 * Every stored vector's signs, held in memory per store for the nearest-neighbour scan (see SignCodes), and the
 * exact re-scoring of the scan's candidates with the stored floats. sqlite-vec's own KNN over the same codes took 30 ms
 * at 100k chunks, a scan of these 0.4. Before each scan the vector log since the last is read, so vectors written or
 * deleted by any process are held as they are now; a rebuilt index (a new generation) or a log pruned past this
 * process is read anew, and codes of which a fifth are dead are compacted in memory. Reading anew starts from the
 * store's snapshot of the codes when one fits (VectorSnapshot: tenths of a second at a million chunks), else from the
 * stored floats (about a second a 100k chunks).
 */

/** A nearest-neighbour question to the index. */
export type NearestQuery = {
  vector: Float32Array;
  /** How many chunks to return at most. */
  limit: number;
  /** The channels chunks may come from: the scan is constrained to them, so no other chunk is found or counted. */
  channelIds: Iterable<string>;
  /** Candidates scanned by their signs per chunk returned, before exact re-scoring; 16 unless given. */
  oversample?: number | undefined;
};

/** The most chunks one scan keeps for re-scoring with their floats. */
const maxK = 4096;
/** Candidates scanned per chunk returned, before re-scoring with the floats. */
const defaultOversample = 16;
/** Rows read from the store at a time. */
const pageSize = 8192;

type Held = {
  key: string;
  /** The last vector log entry applied. */
  seq: number;
  /** Positions below it that were empty when passed (writes in flight on PostgreSQL), looked at again at each read. */
  holes: LogHoles.Holes;
  codes: SignCodes.SignCodes;
};

/** Where the codes held were read from, and the snapshot refused on the way, if one was. */
export type Origin = { source: 'snapshot' | 'rows'; refused?: { id: string | undefined; reason: string } };

/** What a listener is told each time the codes are read anew: how many, where from, and how long it took. */
export type Loaded = { held: number; origin: Origin; ms: number };

type State = { current?: Held; origin?: Origin; reading?: Promise<SignCodes.SignCodes>; listeners: Set<(loaded: Loaded) => void> };

const held = new WeakMap<Store, State>();

function stateOf(store: Store): State {
  let state = held.get(store);
  if (!state) held.set(store, (state = { listeners: new Set() }));
  return state;
}

/** The index's identity: codes of another generation, embedder or dimension are never used for it. */
const keyOf = (index: IndexInfo) => `${index.generation ?? ''}|${index.embedderId}|${index.dimensions}`;

/** The zero vector has no direction: cosine similarity is undefined for it. */
const directionless = (v: Float32Array) => v.every((x) => x === 0);

/** A stored vector's floats, as a view where the bytes allow it. */
function floatsOf(bytes: Buffer): Float32Array {
  // A view needs 4-byte alignment, which a pooled Buffer need not have: then a copy.
  return bytes.byteOffset % 4 === 0 ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) : new Float32Array(Uint8Array.from(bytes).buffer);
}

/** Holds a stored vector's code, or forgets the chunk's when it has none (deleted, or of another dimension). */
function apply(codes: SignCodes.SignCodes, row: StoredVector): void {
  const bytes = row.embedding;
  if (!bytes || row.channel === null || bytes.byteLength !== codes.dimensions * 4) return codes.remove(row.rowid);
  codes.put(row.rowid, row.channel, floatsOf(bytes));
}

/**
 * Every stored vector's code: from the store's snapshot when one fits (then the log is followed from its position),
 * else from the rows. A snapshot that does not fit is refused with the reason (in the origin), and the rows are read.
 */
async function load(store: Store, index: IndexInfo, key: string, state: State): Promise<Held> {
  try {
    const restored = await VectorSnapshot.read(store, { index: key, dimensions: index.dimensions });
    if (restored) {
      state.origin = { source: 'snapshot' };
      const c: Held = { key, seq: restored.position, holes: new LogHoles.Holes(), codes: restored.codes };
      c.holes.adopt(restored.holes);
      // Holes below the log's start when the snapshot was written do not count as pruned past later.
      c.holes.prunedPast(restored.holesFloor);
      await follow(store, c);
      return c;
    }
    state.origin = { source: 'rows' };
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    state.origin = { source: 'rows', refused: { id: error.snapshotId, reason: error.message } };
  }
  return loadRows(store, index, key);
}

/**
 * Every stored vector's code, from the rows. The log position is read first: a vector written while the rows are read
 * is in them or after that position, and applying it again replaces it.
 */
async function loadRows(store: Store, index: IndexInfo, key: string): Promise<Held> {
  const { first, last } = await store.vectors.logBounds();
  const seq = last ?? 0;
  // Writes numbered below `seq` and still in flight are not in the rows read next: their positions are holes; those
  // below the log's first position were pruned before this load, not passed by it.
  const below = Math.max(0, seq - LogHoles.loadWindow);
  const present = await store.vectors.present(below, seq);
  const c: Held = { key, seq, holes: new LogHoles.Holes(), codes: SignCodes.create(index.dimensions) };
  c.holes.missingFrom(below, seq, present);
  c.holes.prunedPast(first);
  for (let after = 0; ; ) {
    const rows = await store.vectors.page(after, pageSize);
    if (rows.length === 0) break;
    for (const row of rows) apply(c.codes, row);
    after = rows.at(-1)!.rowid;
  }
  return c;
}

/**
 * Applies the log since the codes were last current, and what has since filled a hole below it. Applying an entry
 * reads its chunk's vector as it is now, so an entry applied late, or twice, leaves what applying it in order would.
 */
async function follow(store: Store, c: Held): Promise<void> {
  const look = c.holes.look();
  const late = look.seqs.length > 0 ? await store.vectors.changesAt(look.seqs) : [];
  for (const row of late) {
    c.holes.fill(row.seq);
    apply(c.codes, row);
  }
  look.done(late.map((row) => row.seq));
  for (;;) {
    const rows = await store.vectors.changes(c.seq, pageSize);
    if (rows.length === 0) break;
    for (const row of rows) {
      c.holes.between(c.seq, row.seq);
      apply(c.codes, row);
      c.seq = row.seq;
    }
  }
}

/** The codes of the stored index, current to the last write: read anew, or brought up to date from the log. */
async function codesOf(store: Store, index: IndexInfo): Promise<SignCodes.SignCodes> {
  const s = stateOf(store);
  // One reader at a time: questions arriving meanwhile wait for it rather than read the log again.
  if (s.reading) return s.reading;
  s.reading = (async () => {
    const key = keyOf(index);
    const anew = async () => {
      const started = performance.now();
      s.current = await load(store, index, key, s);
      const loaded = { held: s.current.codes.size, origin: s.origin ?? { source: 'rows' as const }, ms: performance.now() - started };
      for (const listener of s.listeners) listener(loaded);
      return s.current.codes;
    };
    const c = s.current;
    if (!c || c.key !== key) return anew();
    if (c.codes.dead > Math.max(1024, c.codes.size / 4)) c.codes.compact();
    // A log pruned past these codes, or past a write they still wait for (a hole), cannot bring them up to date.
    const { first } = await store.vectors.logBounds();
    if (first !== null && first > c.seq + 1) return anew();
    if (c.holes.prunedPast(first)) return anew();
    await follow(store, c);
    return c.codes;
  })().finally(() => (s.reading = undefined));
  return s.reading;
}

/** Tells `listener` each time the store's codes are read anew (at the first question or `warm`, and after a rebuild). */
export function onLoad(store: Store, listener: (loaded: Loaded) => void): void {
  stateOf(store).listeners.add(listener);
}

/**
 * Reads the index's codes into memory now, so the first question after a start does not wait for them: how many, and
 * where from (undefined when there is no index).
 */
export async function warm(store: Store): Promise<{ held: number; origin: Origin } | undefined> {
  const index = await store.vectors.info();
  if (!index) return undefined;
  await store.vectors.upgrade();
  const held = (await codesOf(store, index)).size;
  return { held, origin: stateOf(store).origin ?? { source: 'rows' } };
}

/**
 * The codes as the snapshot keeper sees them: held once read (for the store's index as it is now), fitting a snapshot
 * of that index that this process did not refuse, written (compacted first) with the log position they cover.
 */
export function subject(store: Store): SnapshotKeeper.Subject {
  const s = stateOf(store);
  const indexOf = (raw: string) => {
    try {
      return (JSON.parse(raw) as { index?: unknown }).index;
    } catch {
      return undefined;
    }
  };
  return {
    kind: 'vectors',
    job: 'vector_snapshot',
    name: 'vector index',
    chunks: () => s.current?.codes.size,
    // A snapshot fits when this process did not refuse it and it is of the store's index as it is now (this process
    // may still hold the codes of the index before a rebuild: the snapshot another wrote since is not due again).
    fits: async (row) => {
      const index = await store.vectors.info();
      return row.id !== s.origin?.refused?.id && index !== undefined && indexOf(row.header) === keyOf(index);
    },
    logBounds: () => store.vectors.logBounds(),
    logKept,
    async write() {
      // What is written is current: the codes follow the log only when a question reads them, and a quiet process
      // (or one still holding the index before a rebuild) would write what it last read.
      const index = await store.vectors.info();
      if (!index) throw new Error('the store has no vector index any more');
      await codesOf(store, index);
      const c = s.current;
      if (!c || keyOf(index) !== c.key) throw new Error('the vector index was rebuilt while its codes were read: the next check writes its snapshot');
      return VectorSnapshot.write(store, { index: c.key, dimensions: c.codes.dimensions }, () => {
        c.codes.compact();
        return { codes: c.codes, position: c.seq, holes: c.holes.carry(), holesFloor: c.holes.logStart() };
      });
    },
  };
}

/** The cosine similarity of two vectors of one dimension. */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * The exact cosine similarity of each given chunk to a vector, from the stored floats; a chunk without a vector (or
 * one of another dimension) is left out. What reranking reads for every candidate, wherever it was found.
 */
export async function similarities(store: Store, vector: Float32Array, rowids: number[]): Promise<Map<number, number>> {
  if (rowids.length === 0 || directionless(vector) || !(await store.vectors.info())) return new Map();
  const found = new Map<number, number>();
  for (const [rowid, bytes] of await store.vectors.embeddings(rowids)) {
    if (bytes.byteLength === vector.length * 4) found.set(rowid, cosine(vector, floatsOf(bytes)));
  }
  return found;
}

/**
 * The chunks nearest a vector within the given channels, best first, with their exact cosine similarity; ties go to
 * the earlier chunk. The scan compares signs (Hamming distance) over the scope's chunks only and keeps the
 * `limit × oversample` nearest (of the last distance's chunks, those held first), which are re-scored with the stored
 * floats. None for the zero vector.
 */
export async function nearest(store: Store, query: NearestQuery): Promise<{ rowid: number; similarity: number }[]> {
  const index = await store.vectors.info();
  if (!index || directionless(query.vector) || query.limit < 1) return [];
  await store.vectors.upgrade();
  const wanted = Math.min(maxK, Math.max(query.limit, Math.ceil(query.limit * (query.oversample ?? defaultOversample))));
  const candidates = (await codesOf(store, index)).nearest(query.vector, new Set(query.channelIds), wanted);
  // A chunk deleted since the codes were read has no floats left: it is not re-scored, so never returned.
  const scored = await similarities(store, query.vector, candidates);
  return [...scored]
    .map(([rowid, similarity]) => ({ rowid, similarity }))
    .sort((a, b) => b.similarity - a.similarity || a.rowid - b.rowid)
    .slice(0, query.limit);
}
