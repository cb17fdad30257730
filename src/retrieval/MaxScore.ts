
import type { PostingList } from './Postings.js';

/**
 * Exact top-k BM25 by MaxScore (Turtle and Flood, 1995), term at a time: the lists are read strongest first (by the
 * most a posting of theirs can add), scores accumulating per document, while any document not yet met could still
 * reach the k-th best partial score. Once the lists left cannot lift an unmet document that far, no new document
 * can enter the top k; the remaining lists are then only consulted for the documents that still could, and those
 * that no longer can are dropped as the lists are read. The result is the exhaustive top k, the same documents with
 * the same scores: each finalist's score is summed again in the question's term order, and ties go to the earlier
 * document.
 */

export type ScoredTerm = { list: PostingList; idf: number };

export type Scoring = { k1: number; b: number; averageLength: number; docLength: Int32Array };

export type Ranked = { doc: number; score: number };

/**
 * Per-document working space, reused by every search of one index (searches run one at a time). `cells` holds each
 * document's partial score beside its length, so reading a posting costs one cache line, not two; the index fills in
 * the lengths.
 */
export type Scratch = { cells: Float32Array; mark: Uint8Array; touched: Int32Array; values: Float64Array };

export function scratch(size: number): Scratch {
  return { cells: new Float32Array(2 * size), mark: new Uint8Array(size), touched: new Int32Array(size), values: new Float64Array(size) };
}

/** Postings read, since the process started: what the benchmark reports as work per query. */
export const counters = { postings: 0 };

/** How many documents of the strongest short list are scored in full to start the threshold. */
const seedSize = 5_000;

/** How many of the documents met first the running k-th best is taken over. */
const sampleSize = 20_000;

/**
 * Partial scores add up in 32 bits (half the memory traffic of the accumulation, which is most of the work), so
 * they may sit a few parts in ten million off: a document is only ever pruned, or left out of the finalists, by more
 * than that. Finalists are scored again in 64 bits.
 */
const margin = (threshold: number) => 1e-5 * Math.max(1, Math.abs(threshold));

// Marks: a document met and in scope, met and out of scope, or still a candidate after the lists turned selective.
const inScope = 1;
const outOfScope = 2;
const candidate = 3;

export function topK(options: { terms: ScoredTerm[]; k: number; scoring: Scoring; accept: (doc: number) => boolean; scratch: Scratch; exhaustive?: boolean }): Ranked[] {
  const { terms, k, accept } = options;
  const n = terms.length;
  if (n === 0 || k <= 0) return [];
  const { k1, b, averageLength, docLength } = options.scoring;
  const norm0 = k1 * (1 - b);
  const norm1 = (k1 * b) / averageLength;
  const weight = (count: number, length: number) => (count * (k1 + 1)) / (count + norm0 + norm1 * length);
  const { cells, mark, touched, values } = options.scratch;
  const exhaustive = options.exhaustive === true;

  const bounds = terms.map(({ list, idf }) => list.bound(options.scoring) * idf);
  const order = [...terms.keys()].sort((x, y) => bounds[y]! - bounds[x]! || x - y);
  /** rest[i]: the most the lists from the i-th strongest on can add together. */
  const rest = new Float64Array(n + 1);
  for (let i = n - 1; i >= 0; i--) rest[i] = rest[i + 1]! + bounds[order[i]!]!;
  let met = 0;
  let threshold = -Infinity;
  const beaten = (bound: number) => !exhaustive && bound < threshold - margin(threshold);
  function seedThreshold(): number {
    const seed = order.slice(0, 3).map((t) => terms[t]!.list).sort((x, y) => x.length - y.length)[0]!;
    const docs = seed.docs.subarray(0, Math.min(seed.length, seedSize)).filter(accept);
    if (docs.length < k) return -Infinity;
    const full = new Float64Array(docs.length);
    for (const { list, idf } of terms) {
      let p = 0;
      docs.forEach((doc, d) => {
        p = list.seek(p, doc);
        if (p < list.length && list.docs[p] === doc) full[d]! += idf * weight(list.counts[p]!, docLength[doc]!);
      });
    }
    counters.postings += docs.length * n;
    // Summed in another order than the final scores: a hair lower, so it never excludes a tie.
    const value = select(full, full.length, k);
    return value - 2 * margin(value);
  }

  /** The k-th best partial score among the given documents: a lower bound of the k-th best final score. */
  const kth = (docs: Int32Array, count: number, wanted: number): number => {
    let m = 0;
    for (let i = 0; i < count; i++) if (mark[docs[i]!] === wanted) values[m++] = cells[docs[i]! << 1]!;
    return m < k ? -Infinity : select(values, m, k);
  };

  // A first bound from below: the full scores of the documents of the strongest short list, likely among the best.
  if (!exhaustive) threshold = seedThreshold();
  let i = 0;
  // Any document may still enter: read whole lists.
  for (; i < n; i++) {
    if (beaten(rest[i]!)) break;
    const { list, idf } = terms[order[i]!]!;
    const { docs, counts, length } = list;
    for (let p = 0; p < length; p++) {
      const doc = docs[p]!;
      // One read decides: 0 is a document not met yet (every match adds above 0), below 0 one out of scope.
      const at = doc << 1;
      const sum = cells[at]!;
      if (sum === 0) {
        touched[met++] = doc;
        if (!accept(doc)) {
          cells[at] = -1;
          mark[doc] = outOfScope;
          continue;
        }
        mark[doc] = inScope;
      } else if (sum < 0) continue;
      cells[at] = sum + idf * weight(counts[p]!, cells[at + 1]!);
    }
    counters.postings += length;
    // Any k documents bound the k-th best from below; those met first (in the strongest lists) are the likeliest.
    if (!exhaustive) threshold = kth(touched, Math.min(met, sampleSize), inScope);
  }

  // No unmet document can enter: only those that still could are scored further.
  let pool: Int32Array = new Int32Array(0);
  let poolMark = inScope;
  if (i < n) {
    let size = 0;
    const all = new Int32Array(met);
    for (let x = 0; x < met; x++) {
      const doc = touched[x]!;
      if (mark[doc] === inScope && !beaten(cells[doc << 1]! + rest[i]!)) all[size++] = doc;
    }
    pool = all.subarray(0, size).sort();
    poolMark = candidate;
    for (; i < n; i++) {
      let kept = 0;
      for (const doc of pool) {
        if (beaten(cells[doc << 1]! + rest[i]!)) mark[doc] = inScope;
        else {
          mark[doc] = candidate;
          pool[kept++] = doc;
        }
      }
      pool = pool.subarray(0, kept);
      const { list, idf } = terms[order[i]!]!;
      const { docs, counts, length } = list;
      if (pool.length * 16 < length) {
        let p = 0;
        for (const doc of pool) {
          p = list.seek(p, doc);
          if (p < length && docs[p] === doc) cells[doc << 1]! += idf * weight(counts[p]!, docLength[doc]!);
        }
        counters.postings += pool.length;
      } else {
        for (let p = 0; p < length; p++) {
          const doc = docs[p]!;
          if (mark[doc] === candidate) cells[doc << 1]! += idf * weight(counts[p]!, docLength[doc]!);
        }
        counters.postings += length;
      }
      threshold = Math.max(threshold, kth(pool, pool.length, candidate));
    }
  } else {
    pool = touched.subarray(0, met);
  }

  // Finalists: the k best, and any within rounding of the k-th; each scored again in the question's term order.
  const last = kth(pool, pool.length, poolMark);
  const finalists: number[] = [];
  for (const doc of pool) if (mark[doc] === poolMark && (last === -Infinity || cells[doc << 1]! >= last - 2 * margin(last))) finalists.push(doc);
  finalists.sort((x, y) => x - y);
  const exact = new Float64Array(finalists.length);
  for (let t = 0; t < n; t++) {
    const { list, idf } = terms[t]!;
    let p = 0;
    finalists.forEach((doc, f) => {
      p = list.seek(p, doc);
      if (p < list.length && list.docs[p] === doc) exact[f]! += idf * weight(list.counts[p]!, docLength[doc]!);
    });
  }
  for (let x = 0; x < met; x++) {
    cells[touched[x]! << 1] = 0;
    mark[touched[x]!] = 0;
  }
  return finalists
    .map((doc, f) => ({ doc, score: exact[f]! }))
    .sort((x, y) => y.score - x.score || x.doc - y.doc)
    .slice(0, k);
}

/** The k-th largest of the first `count` values (which it reorders), by quickselect. */
function select(values: Float64Array, count: number, k: number): number {
  let lo = 0;
  let hi = count - 1;
  const target = k - 1;
  while (lo < hi) {
    const pivot = values[(lo + hi) >>> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i]! > pivot) i++;
      while (values[j]! < pivot) j--;
      if (i <= j) {
        const t = values[i]!;
        values[i] = values[j]!;
        values[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else return values[target]!;
  }
  return values[target]!;
}
