import { Cursor, type PostingList, Probe } from './Postings.js';

/**
 * Exact top-k BM25 by MaxScore (Turtle and Flood, 1995), document at a time. The lists are ordered strongest first (by
 * the most a posting of theirs can add). Those whose postings could lift a document to the k-th best score known are
 * essential: every document they hold is met, in document order. Those left (the weakest, whose bounds together fall
 * below the k-th best) are only looked up, strongest first, for a document met, and only while it could still reach
 * the k-th best. As that score rises, lists stop being essential, and fewer documents are met.
 *
 * The essential lists are read a small window of documents at a time, their postings summed per document in a window
 * of scores that stays in the core's fastest cache; the window's documents are then taken in order. Nothing is kept
 * per document of the index, and the lookups go forward only, so memory is read in the order it lies. The result is
 * the exhaustive top k, the same documents with the same scores: each finalist's score is summed again in the
 * question's term order, and ties go to the earlier document.
 */

export type ScoredTerm = { list: PostingList; idf: number };

export type Scoring = { k1: number; b: number; averageLength: number; docLength: Int32Array };

export type Ranked = { doc: number; score: number };

/** Postings read or looked up, since the process started: what the benchmark reports as work per query. */
export const counters = { postings: 0 };

/** How many documents of the strongest short list are scored in full to start the threshold. */
const seedSize = 1_000;

/**
 * Scores summed in another order than the final ones may differ in their last bits: a document is only ever pruned,
 * or left out of the finalists, by more than this. Finalists are scored again in the question's term order.
 */
const margin = (threshold: number) => 1e-9 * Math.max(1, Math.abs(threshold));

/** Past every document. */
const end = 0x7fffffff;

/**
 * Documents per window: the essential lists are read a window at a time into scores that stay in the core's fastest
 * cache (32 KB), and the window's documents are then taken in order from a bitmap, as a merge of the lists would meet
 * them, without the merge's comparisons at every posting.
 */
const windowSize = 4096;

export function topK(options: {
  terms: ScoredTerm[];
  k: number;
  scoring: Scoring;
  /** Documents are numbered from 0 to below this. */
  documents: number;
  accept: (doc: number) => boolean;
  exhaustive?: boolean;
}): Ranked[] {
  const { terms, k, accept } = options;
  const n = terms.length;
  if (n === 0 || k <= 0) return [];
  const { k1, b, averageLength, docLength } = options.scoring;
  const norm0 = k1 * (1 - b);
  const norm1 = (k1 * b) / averageLength;
  const weight = (count: number, length: number) => (count * (k1 + 1)) / (count + norm0 + norm1 * length);
  /** The full scores of documents (ascending), summed in the question's term order. */
  const fullScores = (docs: ArrayLike<number>): Float64Array => {
    const full = new Float64Array(docs.length);
    for (const { list, idf } of terms) {
      const probe = new Probe(list);
      for (let d = 0; d < docs.length; d++) {
        const count = probe.countOf(docs[d]!);
        if (count > 0) full[d]! += idf * weight(count, docLength[docs[d]!]!);
      }
    }
    return full;
  };
  const exhaustive = options.exhaustive === true;

  const bounds = terms.map(({ list, idf }) => list.bound(options.scoring) * idf);
  const order = [...terms.keys()].sort((x, y) => bounds[y]! - bounds[x]! || x - y);
  const lists = order.map((t) => terms[t]!.list);
  const idfs = Float64Array.from(order, (t) => terms[t]!.idf);
  /** rest[i]: the most the lists from the i-th strongest on can add together. */
  const rest = new Float64Array(n + 1);
  for (let i = n - 1; i >= 0; i--) rest[i] = rest[i + 1]! + bounds[order[i]!]!;

  /** The k best scores so far, a heap with the lowest on top; the threshold is its top once it holds k. */
  const heap = new Float64Array(k);
  let held = 0;
  let threshold = -Infinity;
  const offer = (score: number) => {
    if (held < k) {
      let at = held++;
      while (at > 0 && heap[(at - 1) >> 1]! > score) {
        heap[at] = heap[(at - 1) >> 1]!;
        at = (at - 1) >> 1;
      }
      heap[at] = score;
    } else if (score > heap[0]!) {
      let at = 0;
      for (;;) {
        let child = 2 * at + 1;
        if (child >= k) break;
        if (child + 1 < k && heap[child + 1]! < heap[child]!) child += 1;
        if (heap[child]! >= score) break;
        heap[at] = heap[child]!;
        at = child;
      }
      heap[at] = score;
    }
    if (held === k && !exhaustive) threshold = Math.max(threshold, heap[0]! - margin(heap[0]!));
  };

  // A first bound from below: the full scores of the first documents of the strongest short list, likely among the best.
  if (!exhaustive) {
    const seed = lists.slice(0, 3).sort((x, y) => x.length - y.length)[0]!;
    const docs = new Cursor(seed).firstDocs(seedSize).filter(accept);
    if (docs.length >= k) {
      // Not offered: the search meets these documents again. The k-th best of them is a bound from below.
      const full = fullScores(docs).sort();
      counters.postings += docs.length * n;
      const value = full[full.length - k]!;
      threshold = value - margin(value);
    }
  }

  // Documents that may be among the k best, with their scores.
  let contenders: number[] = [];
  let contenderScores: number[] = [];

  const cursors = lists.map((list) => new Cursor(list));
  /** Where each essential list's next window starts. */
  const positions = new Int32Array(n);
  const probes: (Probe | undefined)[] = [];
  /** Lists from `essential` on are only looked up. */
  let essential = n;
  const settle = () => {
    while (essential > 1 && rest[essential - 1]! < threshold) essential -= 1;
  };
  settle();
  /**
   * Contenders are thinned once they have doubled since the last time: chunks tied at the k-th best (the same footer
   * on every page) are never dropped, and thinning at each of them made the search quadratic in their number.
   */
  let thinAt = 4 * k;
  const scores = new Float64Array(windowSize);
  const met = new Int32Array(windowSize >> 5);
  let postings = 0;
  for (let low = 0; low < options.documents; ) {
    // Windows no essential list has a document in are skipped.
    let next = end;
    for (let i = 0; i < essential; i++) if (positions[i]! < cursors[i]!.length) next = Math.min(next, cursors[i]!.doc(positions[i]!));
    if (next >= options.documents) break;
    if (next >= low + windowSize) low = next - (next % windowSize);
    const high = Math.min(low + windowSize, options.documents);
    // The essential lists' postings in the window, summed per document in list order.
    for (let i = 0; i < essential; i++) {
      const cursor = cursors[i]!;
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
          const at = doc - low;
          scores[at]! += idf * weight(counts[q]!, docLength[doc]!);
          met[at >> 5]! |= 1 << (at & 31);
        }
        p = start + q;
        if (q < count) break;
      }
      postings += p - from;
      positions[i] = p;
    }
    // The window's documents in order: each one met is looked up in the other lists while it could still enter.
    for (let word = 0; word < met.length; word++) {
      let bits = met[word]!;
      met[word] = 0;
      while (bits !== 0) {
        const at = (word << 5) | (31 - Math.clz32(bits & -bits));
        bits &= bits - 1;
        let score = scores[at]!;
        scores[at] = 0;
        const doc = low + at;
        if (score + rest[essential]! < threshold || !accept(doc)) continue;
        let i = essential;
        for (; i < n; i++) {
          if (score + rest[i]! < threshold) break;
          const count = (probes[i] ??= new Probe(lists[i]!)).countOf(doc);
          postings += 1;
          if (count > 0) score += idfs[i]! * weight(count, docLength[doc]!);
        }
        if (i < n || score < threshold) continue;
        contenders.push(doc);
        contenderScores.push(score);
        offer(score);
        // Those below the k-th best are dropped (by the exhaustive search too: it scores every match, but keeps the best).
        if (contenders.length > thinAt && held === k) {
          const bar = heap[0]! - 2 * margin(heap[0]!);
          const kept = contenderScores.flatMap((s, c) => (s >= bar ? [c] : []));
          contenders = kept.map((c) => contenders[c]!);
          contenderScores = kept.map((c) => contenderScores[c]!);
          thinAt = Math.max(4 * k, 2 * contenders.length);
        }
      }
    }
    // A list stops being essential between windows: documents of this one were all met.
    settle();
    low = high;
  }
  counters.postings += postings;

  // Finalists: the k best, and any within rounding of the k-th; each scored again in the question's term order.
  const last = held < k ? -Infinity : heap[0]! - 2 * margin(heap[0]!);
  const finalists = contenders.filter((_, c) => contenderScores[c]! >= last).sort((x, y) => x - y);
  const exact = fullScores(finalists);
  return finalists
    .map((doc, f) => ({ doc, score: exact[f]! }))
    .sort((x, y) => y.score - x.score || x.doc - y.doc)
    .slice(0, k);
}
