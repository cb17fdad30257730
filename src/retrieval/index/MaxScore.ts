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

/**
 * How many documents of the strongest short list are scored in full to start the threshold: 250 read the 1M bench's
 * questions 0.3 ms faster than 1,000 did (their full scores cost more than the pruning they bought), and as fast as
 * 100 or none.
 */
const seedSize = 250;

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

/**
 * One question's search, made once before any document is read: its lists strongest first with their IDFs and
 * bounds, and a first k-th best known from below. Searches of parts of the documents (`search`, in threads of
 * their own) share it.
 */
export type Plan = {
  /** The lists, strongest first. */
  lists: PostingList[];
  idfs: Float64Array;
  bounds: Float64Array;
  /** The question's terms, in its own order, as positions in `lists`: finalists are summed in this order. */
  termOrder: Int32Array;
  k: number;
  scoring: Scoring;
  exhaustive: boolean;
  /** A bound from below on the k-th best score (-Infinity when none is known). */
  threshold: number;
};

/** What a search of some of the documents keeps: its finalists (ascending) with their exact scores. */
export type Finalists = { docs: Int32Array<ArrayBuffer>; scores: Float64Array<ArrayBuffer>; postings: number };

const weightOf = (scoring: Scoring) => {
  const { k1, b, averageLength } = scoring;
  const norm0 = k1 * (1 - b);
  const norm1 = (k1 * b) / averageLength;
  return (count: number, length: number) => (count * (k1 + 1)) / (count + norm0 + norm1 * length);
};

/** The full scores of documents (ascending), summed in the question's term order. */
function fullScores(plan: Plan, docs: ArrayLike<number>): Float64Array<ArrayBuffer> {
  const weight = weightOf(plan.scoring);
  const { docLength } = plan.scoring;
  const full = new Float64Array(docs.length);
  for (const t of plan.termOrder) {
    const probe = new Probe(plan.lists[t]!);
    const idf = plan.idfs[t]!;
    for (let d = 0; d < docs.length; d++) {
      const count = probe.countOf(docs[d]!);
      if (count > 0) full[d]! += idf * weight(count, docLength[docs[d]!]!);
    }
  }
  return full;
}

/** Orders a question's lists and finds a first threshold; undefined when there is nothing to search. */
export function plan(options: { terms: ScoredTerm[]; k: number; scoring: Scoring; accept: (doc: number) => boolean; exhaustive?: boolean }): Plan | undefined {
  const { terms, k, scoring } = options;
  const n = terms.length;
  if (n === 0 || k <= 0) return undefined;
  const bounds = terms.map(({ list, idf }) => list.bound(scoring) * idf);
  const order = [...terms.keys()].sort((x, y) => bounds[y]! - bounds[x]! || x - y);
  const termOrder = new Int32Array(n);
  order.forEach((t, position) => (termOrder[t] = position));
  const made: Plan = {
    lists: order.map((t) => terms[t]!.list),
    idfs: Float64Array.from(order, (t) => terms[t]!.idf),
    bounds: Float64Array.from(order, (t) => bounds[t]!),
    termOrder,
    k,
    scoring,
    exhaustive: options.exhaustive === true,
    threshold: -Infinity,
  };
  // A first bound from below: the full scores of the first documents of the strongest short list, likely among the best.
  if (!made.exhaustive) {
    const seed = made.lists.slice(0, 3).sort((x, y) => x.length - y.length)[0]!;
    const docs = new Cursor(seed).firstDocs(seedSize).filter(options.accept);
    if (docs.length >= k) {
      // Not offered: the search meets these documents again. The k-th best of them is a bound from below.
      const full = fullScores(made, docs).sort();
      counters.postings += docs.length * n;
      const value = full[full.length - k]!;
      made.threshold = value - margin(value);
    }
  }
  return made;
}

/** A range of documents, `from` to below `to`. */
export type Range = { from: number; to: number };

/**
 * The ranges a search takes, one after another, each above the last: one range, or those a thread claims of a
 * question's documents as it goes (`SearchShards`), so that the threads share the work however fast each one is.
 */
export type Ranges = () => Range | undefined;

/** One range, once. */
export const once = (range: Range): Ranges => {
  let taken = false;
  return () => (taken ? undefined : ((taken = true), range));
};

/**
 * The finalists among the documents of `ranges`: every document of them that may be among the k best of the whole
 * index. With `shared`, the threshold is the best any thread's search has reached (each is a bound from below on the
 * k-th best of all), read between windows and raised as this one's rises.
 */
export function search(plan: Plan, ranges: Ranges, accept: (doc: number) => boolean, shared?: SharedThreshold): Finalists {
  const { lists, idfs, k, exhaustive } = plan;
  const n = lists.length;
  const { docLength } = plan.scoring;
  const weight = weightOf(plan.scoring);
  /** rest[i]: the most the lists from the i-th strongest on can add together. */
  const rest = new Float64Array(n + 1);
  for (let i = n - 1; i >= 0; i--) rest[i] = rest[i + 1]! + plan.bounds[i]!;

  /** The k best scores so far, a heap with the lowest on top; the threshold is its top once it holds k. */
  const heap = new Float64Array(k);
  let held = 0;
  let threshold = exhaustive ? -Infinity : Math.max(plan.threshold, shared?.value() ?? -Infinity);
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
    if (held === k && !exhaustive) {
      const raised = heap[0]! - margin(heap[0]!);
      if (raised > threshold) {
        threshold = raised;
        shared?.raise(raised);
      }
    }
  };

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
  for (let range = ranges(); range; range = ranges()) {
    // The essential lists from the range on: ranges only ever move forward.
    for (let i = 0; i < essential; i++) {
      const cursor = cursors[i]!;
      if (positions[i]! < cursor.length && cursor.doc(positions[i]!) < range.from) positions[i] = cursor.seek(range.from);
    }
    for (let low = range.from; low < range.to; ) {
      // Windows no essential list has a document in are skipped.
      let next = end;
      for (let i = 0; i < essential; i++) if (positions[i]! < cursors[i]!.length) next = Math.min(next, cursors[i]!.doc(positions[i]!));
      if (next >= range.to) break;
      if (next >= low + windowSize) low = next - (next % windowSize);
      const high = Math.min(low + windowSize, range.to);
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
      // A list stops being essential between windows: documents of this one were all met. Another thread's search may
      // have raised the threshold meanwhile.
      if (shared) threshold = Math.max(threshold, shared.value());
      settle();
      low = high;
    }
  }

  // Finalists: the k best, and any within rounding of the k-th; each scored again in the question's term order.
  const last = held < k ? -Infinity : heap[0]! - 2 * margin(heap[0]!);
  const finalists = Int32Array.from(contenders.filter((_, c) => contenderScores[c]! >= last)).sort();
  return { docs: finalists, scores: fullScores(plan, finalists), postings };
}

/** The k best of the finalists of every thread: best first, ties to the earlier document. */
export function best(parts: Finalists[], k: number): Ranked[] {
  return parts
    .flatMap(({ docs, scores }) => Array.from(docs, (doc, f) => ({ doc, score: scores[f]! })))
    .sort((x, y) => y.score - x.score || x.doc - y.doc)
    .slice(0, k);
}

export function topK(options: {
  terms: ScoredTerm[];
  k: number;
  scoring: Scoring;
  /** Documents are numbered from 0 to below this. */
  documents: number;
  accept: (doc: number) => boolean;
  exhaustive?: boolean;
}): Ranked[] {
  const made = plan(options);
  if (!made) return [];
  const found = search(made, once({ from: 0, to: options.documents }), options.accept);
  counters.postings += found.postings;
  return best([found], options.k);
}

/**
 * A k-th best score known from below, shared by the threads that search parts of one question's documents: each
 * raises it as its own k-th best rises (any thread's is a bound from below on the whole index's) and reads it between
 * windows. A float's bits in a shared 64-bit cell, changed only by compare-and-swap, so it only ever rises.
 */
export class SharedThreshold {
  private static readonly float = new Float64Array(1);
  private static readonly bits = new BigInt64Array(SharedThreshold.float.buffer);
  private readonly cell: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = SharedThreshold.fresh()) {
    this.cell = new BigInt64Array(buffer, 0, 1);
  }

  value(): number {
    SharedThreshold.bits[0] = Atomics.load(this.cell, 0);
    return SharedThreshold.float[0]!;
  }

  raise(score: number): void {
    SharedThreshold.float[0] = score;
    const next = SharedThreshold.bits[0]!;
    for (;;) {
      const seen = Atomics.load(this.cell, 0);
      SharedThreshold.bits[0] = seen;
      if (SharedThreshold.float[0]! >= score) return;
      if (Atomics.compareExchange(this.cell, 0, seen, next) === seen) return;
    }
  }

  private static fresh(): SharedArrayBuffer {
    const buffer = new SharedArrayBuffer(8);
    new Float64Array(buffer)[0] = -Infinity;
    return buffer;
  }
}
