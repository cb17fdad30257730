
import { Cursor, type PostingList } from './Postings.js';

/**
 * Exact top-k BM25 by MaxScore (Turtle and Flood, 1995), term at a time within ranges of documents. The documents
 * are taken a block at a time (a block's scores fit in the core's own cache, where reading whole lists one after the
 * other would miss it at every posting). Within a block, the lists are read strongest first (by the most a posting
 * of theirs can add), scores accumulating per document, while any document not yet met could still reach the k-th
 * best score known; once the lists left cannot lift an unmet document that far, they are only consulted for the
 * documents that still could, and those that no longer can are dropped as the lists are read. The block's survivors
 * then have full scores, and the k-th best full score so far is the bar for every later block. The result is the
 * exhaustive top k, the same documents with the same scores: each finalist's score is summed again in the question's
 * term order, and ties go to the earlier document.
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

/**
 * Documents per block: their cells take 1 MB, half this machine's per-core cache. At 4M chunks, blocks of 64k to 256k
 * documents all took the first stage from 54 to 23 ms p50; one block per list read (the plain term-at-a-time order)
 * misses the cache on most postings once the scores outgrow it.
 */
export const blockSize = 1 << 17;

/** How many documents of the strongest short list are scored in full to start the threshold. */
const seedSize = 1_000;

/** How many of the documents met first the running k-th best is taken over, until k documents have full scores. */
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

export function topK(options: {
  terms: ScoredTerm[];
  k: number;
  scoring: Scoring;
  /** Documents are numbered from 0 to below this. */
  documents: number;
  /** Documents per block, `blockSize` unless given. */
  blockSize?: number;
  accept: (doc: number) => boolean;
  scratch: Scratch;
  exhaustive?: boolean;
}): Ranked[] {
  const { terms, k, accept } = options;
  const n = terms.length;
  if (n === 0 || k <= 0) return [];
  const { k1, b, averageLength, docLength } = options.scoring;
  const norm0 = k1 * (1 - b);
  const norm1 = (k1 * b) / averageLength;
  const weight = (count: number, length: number) => (count * (k1 + 1)) / (count + norm0 + norm1 * length);
  /** The full scores of documents (ascending), in 64 bits, summed in the question's term order. */
  const fullScores = (docs: ArrayLike<number>): Float64Array => {
    const full = new Float64Array(docs.length);
    for (const { list, idf } of terms) {
      const cursor = new Cursor(list);
      let p = 0;
      for (let d = 0; d < docs.length; d++) {
        const doc = docs[d]!;
        p = cursor.seek(p, doc);
        if (p < cursor.length && cursor.doc(p) === doc) full[d]! += idf * weight(cursor.countAt(p), docLength[doc]!);
      }
    }
    return full;
  };
  const { cells, mark, touched, values } = options.scratch;
  const exhaustive = options.exhaustive === true;

  const bounds = terms.map(({ list, idf }) => list.bound(options.scoring) * idf);
  const order = [...terms.keys()].sort((x, y) => bounds[y]! - bounds[x]! || x - y);
  const lists = order.map((t) => new Cursor(terms[t]!.list));
  const idfs = order.map((t) => terms[t]!.idf);
  /** rest[i]: the most the lists from the i-th strongest on can add together. */
  const rest = new Float64Array(n + 1);
  for (let i = n - 1; i >= 0; i--) rest[i] = rest[i + 1]! + bounds[order[i]!]!;
  let threshold = -Infinity;
  const beaten = (bound: number) => !exhaustive && bound < threshold - margin(threshold);

  // A first bound from below: the full scores of the first documents of the strongest short list, likely among the best.
  if (!exhaustive) {
    const seed = lists.slice(0, 3).sort((x, y) => x.length - y.length)[0]!;
    const docs = seed.firstDocs(seedSize).filter(accept);
    if (docs.length >= k) {
      const full = fullScores(docs);
      counters.postings += docs.length * n;
      // Summed in another order than the final scores: a hair lower, so it never excludes a tie.
      const value = select(full, full.length, k);
      threshold = value - 2 * margin(value);
    }
  }

  /** The k-th best partial score among the given documents: a lower bound of the k-th best final score. */
  const kth = (docs: Int32Array, count: number, wanted: number): number => {
    let m = 0;
    for (let i = 0; i < count; i++) if (mark[docs[i]!] === wanted) values[m++] = cells[docs[i]! << 1]!;
    return m < k ? -Infinity : select(values, m, k);
  };

  // Documents with full scores (in 32 bits) that may be among the k best.
  let contenders: number[] = [];
  let contenderScores: number[] = [];
  const kthContender = (): number => {
    if (contenderScores.length < k) return -Infinity;
    contenderScores.forEach((score, c) => (values[c] = score));
    return select(values, contenderScores.length, k);
  };
  /** The k-th best full score so far (or the threshold, when higher): contenders below it are dropped. */
  let bar = -Infinity;
  /** Where each list's next block starts. */
  const positions = new Int32Array(n);

  const block = options.blockSize ?? blockSize;
  for (let low = 0; low < options.documents; low += block) {
    const high = Math.min(options.documents, low + block);
    let met = 0;
    let i = 0;
    // Any document of the block may still enter: read the lists' whole stretch in the block.
    for (; i < n; i++) {
      if (beaten(rest[i]!)) break;
      const cursor = lists[i]!;
      const idf = idfs[i]!;
      const from = positions[i]!;
      let p = from;
      while (p < cursor.length) {
        cursor.load(p);
        const { docs, counts, start, count } = cursor;
        let q = p - start;
        for (; q < count; q++) {
          const doc = docs[q]!;
          if (doc >= high) break;
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
          cells[at] = sum + idf * weight(counts[q]!, cells[at + 1]!);
        }
        p = start + q;
        if (q < count) break;
      }
      counters.postings += p - from;
      positions[i] = p;
      // Until k documents have full scores, any k met bound the k-th best from below; those met first (in the
      // strongest lists) are the likeliest.
      if (!exhaustive && contenders.length < k) threshold = Math.max(threshold, kth(touched, Math.min(met, sampleSize), inScope));
    }

    // No unmet document of the block can enter: only those that still could are scored further.
    let size = 0;
    for (let x = 0; x < met; x++) {
      const doc = touched[x]!;
      if (mark[doc] === inScope && !beaten(cells[doc << 1]! + rest[i]!)) values[size++] = doc;
    }
    let pool = Int32Array.from(values.subarray(0, size));
    if (i < n) pool.sort();
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
      const cursor = lists[i]!;
      const idf = idfs[i]!;
      const from = positions[i]!;
      const end = cursor.seek(from, high);
      // A few candidates are looked up; many are met by reading the list's stretch in the block.
      if (pool.length * 4 < end - from) {
        let p = from;
        for (const doc of pool) {
          p = cursor.seek(p, doc);
          if (p < end && cursor.doc(p) === doc) cells[doc << 1]! += idf * weight(cursor.countAt(p), cells[(doc << 1) + 1]!);
        }
        counters.postings += pool.length;
      } else {
        for (let p = from; p < end; ) {
          cursor.load(p);
          const { docs, counts, start } = cursor;
          const stop = Math.min(end - start, cursor.count);
          for (let q = p - start; q < stop; q++) {
            const doc = docs[q]!;
            if (mark[doc] === candidate) cells[doc << 1]! += idf * weight(counts[q]!, cells[(doc << 1) + 1]!);
          }
          p = start + stop;
        }
        counters.postings += end - from;
      }
      positions[i] = end;
    }

    // The survivors' scores are full: the k-th best of them is the bar for the blocks after.
    if (pool.length >= k) {
      pool.forEach((doc, x) => (values[x] = cells[doc << 1]!));
      bar = Math.max(bar, select(values, pool.length, k));
    }
    for (const doc of pool) {
      const score = cells[doc << 1]!;
      if (score >= bar - 2 * margin(bar)) {
        contenders.push(doc);
        contenderScores.push(score);
      }
    }
    for (let x = 0; x < met; x++) {
      cells[touched[x]! << 1] = 0;
      mark[touched[x]!] = 0;
    }
    bar = Math.max(bar, threshold, kthContender());
    if (!exhaustive) threshold = bar;
    // Those below the bar are dropped (by the exhaustive search too: it scores every match, but keeps only the best).
    if (contenders.length > 4 * k) {
      const kept = contenders.flatMap((_, c) => (contenderScores[c]! >= bar - 2 * margin(bar) ? [c] : []));
      contenders = kept.map((c) => contenders[c]!);
      contenderScores = kept.map((c) => contenderScores[c]!);
    }
  }

  // Finalists: the k best, and any within rounding of the k-th; each scored again in the question's term order.
  const last = kthContender();
  const finalists = contenders.filter((_, c) => last === -Infinity || contenderScores[c]! >= last - 2 * margin(last)).sort((x, y) => x - y);
  const exact = fullScores(finalists);
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
