import * as SignCodes from '../../store/SignCodes.js';
import type { Store } from '../../store/Store.js';
import type { IndexInfo, StoredVector } from '../../store/VectorIndex.js';

/**
 * Every stored vector's signs, held in memory per store for the nearest-neighbour scan (see SignCodes), and the
 * exact re-scoring of the scan's candidates with the stored floats. sqlite-vec's own KNN over the same codes took 30 ms
 * at 100k chunks, a scan of these 0.4. Before each scan the vector log since the last is read, so vectors written or
 * deleted by any process are held as they are now; a rebuilt index (a new generation) or a log pruned past this
 * process is read anew (about a second a 100k chunks), and codes of which a fifth are dead are compacted in memory.
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
  codes: SignCodes.SignCodes;
};

const held = new WeakMap<Store, { current?: Held; reading?: Promise<SignCodes.SignCodes> }>();

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
 * Every stored vector's code. The log position is read first: a vector written while the rows are read is in them or
 * after that position, and applying it again replaces it.
 */
async function load(store: Store, index: IndexInfo, key: string): Promise<Held> {
  const seq = (await store.vectors.logBounds()).last ?? 0;
  const c: Held = { key, seq, codes: SignCodes.create(index.dimensions) };
  for (let after = 0; ; ) {
    const rows = await store.vectors.page(after, pageSize);
    if (rows.length === 0) break;
    for (const row of rows) apply(c.codes, row);
    after = rows.at(-1)!.rowid;
  }
  return c;
}

/** Applies the log since the codes were last current. */
async function follow(store: Store, c: Held): Promise<void> {
  for (;;) {
    const rows = await store.vectors.changes(c.seq, pageSize);
    if (rows.length === 0) break;
    for (const row of rows) apply(c.codes, row);
    c.seq = rows.at(-1)!.seq;
  }
}

/** The codes of the stored index, current to the last write: read anew, or brought up to date from the log. */
async function codesOf(store: Store, index: IndexInfo): Promise<SignCodes.SignCodes> {
  let state = held.get(store);
  if (!state) held.set(store, (state = {}));
  // One reader at a time: questions arriving meanwhile wait for it rather than read the log again.
  if (state.reading) return state.reading;
  const s = state;
  s.reading = (async () => {
    const key = `${index.generation ?? ''}|${index.embedderId}|${index.dimensions}`;
    const c = s.current;
    if (!c || c.key !== key) {
      s.current = await load(store, index, key);
      return s.current.codes;
    }
    if (c.codes.dead > Math.max(1024, c.codes.size / 4)) c.codes.compact();
    const { first } = await store.vectors.logBounds();
    if (first !== null && first > c.seq + 1) {
      s.current = await load(store, index, key);
      return s.current.codes;
    }
    await follow(store, c);
    return c.codes;
  })().finally(() => (s.reading = undefined));
  return s.reading;
}

/** Reads the index's codes into memory now, so the first question after a start does not wait for them. */
export async function warm(store: Store): Promise<number> {
  const index = await store.vectors.info();
  if (!index) return 0;
  await store.vectors.upgrade();
  return (await codesOf(store, index)).size;
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
