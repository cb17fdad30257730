import { blockSize } from './Postings.js';
import type { PostingList } from './Postings.js';

/**
 * Exact top-k BM25 by MaxScore (Turtle and Flood, 1995): terms are ordered by the most any posting of theirs can add;
 * once the k-th best score exceeds what the weakest terms can add together, documents holding only those terms cannot
 * enter the top k and are never visited, and their lists are only consulted for documents that still might. The
 * result is the exhaustive top k, the same documents with the same scores: ties go to the earlier document, and each
 * score is summed in the query's term order whichever way it was found.
 */

export type ScoredTerm = { list: PostingList; idf: number };

export type Scoring = { k1: number; b: number; averageLength: number; docLength: Int32Array };

export type Ranked = { doc: number; score: number };

/** Rounding in a sum of bounds must never prune a document whose exact score could still tie or pass. */
const margin = (threshold: number) => 1e-9 * Math.max(1, Math.abs(threshold));

/** Documents whose terms were read, since the process started: what the benchmark reports as work per query. */
export const counters = { scored: 0 };

/** Documents per window: within one, each term is bounded by the best block of its list that overlaps it. */
const windowSize = 4096;

export function topK(options: { terms: ScoredTerm[]; k: number; scoring: Scoring; accept: (doc: number) => boolean; exhaustive?: boolean }): Ranked[] {
  const { terms, k, accept } = options;
  const n = terms.length;
  if (n === 0 || k <= 0) return [];
  const { k1, b, averageLength, docLength } = options.scoring;
  const norm0 = k1 * (1 - b);
  const norm1 = (k1 * b) / averageLength;
  const weight = (count: number, length: number) => (count * (k1 + 1)) / (count + norm0 + norm1 * length);
  const exhaustive = options.exhaustive === true;

  // The most each term can add anywhere, and per block (scaled to this average length and its IDF).
  const bounds = terms.map(({ list, idf }) => list.bound(options.scoring) * idf);
  const order = [...terms.keys()].sort((x, y) => bounds[x]! - bounds[y]! || x - y);
  const lists = order.map((t) => terms[t]!.list);
  const idfs = Float64Array.from(order, (t) => terms[t]!.idf);
  const blockScale = Float64Array.from(order, (t) => terms[t]!.list.boundScale(averageLength) * terms[t]!.idf);
  /** cumulative[i]: the most the i+1 weakest terms can add together. */
  const cumulative = new Float64Array(n);
  order.forEach((t, i) => (cumulative[i] = (i > 0 ? cumulative[i - 1]! : 0) + bounds[t]!));
  /** Where each term of the query sits in `order`. */
  const slot = new Int32Array(n);
  order.forEach((t, i) => (slot[t] = i));
  const position = new Int32Array(n);
  const block = new Int32Array(n);
  const contribution = new Float64Array(n);
  const windowBound = new Float64Array(n);
  /** The window's terms, weakest first within it, and their running sums. */
  const local = new Int32Array(n);
  const localCumulative = new Float64Array(n);
  const heap = new Heap(k);
  let threshold = -Infinity;
  /** Terms below this index (of `order`) are non-essential everywhere: together they cannot lift a document past the threshold. */
  let essential = 0;
  const end = 2147483647;
  const beaten = (bound: number) => !exhaustive && bound <= threshold - margin(threshold);

  for (;;) {
    // The next window starts at the first document an essential term still has.
    let lo = end;
    for (let i = essential; i < n; i++) {
      const p = position[i]!;
      if (p < lists[i]!.length && lists[i]!.docs[p]! < lo) lo = lists[i]!.docs[p]!;
    }
    if (lo === end) break;
    const hi = lo + windowSize - 1;
    // Each term's bound in [lo, hi]: its best block overlapping the window.
    let total = 0;
    for (let i = 0; i < n; i++) {
      const list = lists[i]!;
      const blocks = list.blocks;
      let bk = block[i]!;
      while (bk < blocks && list.docs[Math.min(list.length, (bk + 1) * blockSize) - 1]! < lo) bk++;
      block[i] = bk;
      let best = 0;
      for (let x = bk; x < blocks && list.docs[x * blockSize]! <= hi; x++) if (list.blockBound[x]! > best) best = list.blockBound[x]!;
      windowBound[i] = best * blockScale[i]!;
      total += windowBound[i]!;
    }
    if (!beaten(total)) {
      // MaxScore inside the window, on the window's bounds.
      let m = 0;
      for (let i = 0; i < n; i++) if (windowBound[i]! > 0) local[m++] = i;
      local.subarray(0, m).sort((x, y) => windowBound[x]! - windowBound[y]! || x - y);
      for (let j = 0; j < m; j++) localCumulative[j] = (j > 0 ? localCumulative[j - 1]! : 0) + windowBound[local[j]!]!;
      let localEssential = 0;
      while (localEssential < m && beaten(localCumulative[localEssential]!)) localEssential += 1;
      for (;;) {
        let doc = end;
        for (let j = localEssential; j < m; j++) {
          const i = local[j]!;
          const list = lists[i]!;
          const p = (position[i] = list.seek(position[i]!, lo));
          if (p < list.length && list.docs[p]! < doc) doc = list.docs[p]!;
        }
        if (doc > hi) break;
        const admitted = accept(doc);
        counters.scored += 1;
        const length = docLength[doc]!;
        let partial = 0;
        for (let j = localEssential; j < m; j++) {
          const i = local[j]!;
          const list = lists[i]!;
          const p = position[i]!;
          if (p < list.length && list.docs[p] === doc) {
            if (admitted) {
              const w = idfs[i]! * weight(list.counts[p]!, length);
              contribution[i] = w;
              partial += w;
            }
            position[i] = p + 1;
          }
        }
        if (admitted) {
          let competitive = true;
          for (let j = localEssential - 1; j >= 0; j--) {
            if (beaten(partial + localCumulative[j]!)) {
              competitive = false;
              break;
            }
            const i = local[j]!;
            const list = lists[i]!;
            const p = (position[i] = list.seek(position[i]!, doc));
            if (p < list.length && list.docs[p] === doc) {
              const w = idfs[i]! * weight(list.counts[p]!, length);
              contribution[i] = w;
              partial += w;
            }
          }
          if (competitive) {
            // The canonical sum: in the query's term order, whatever order the terms were visited in.
            let score = 0;
            for (let t = 0; t < n; t++) score += contribution[slot[t]!]!;
            if (!heap.full || score > threshold) {
              heap.push(doc, score);
              if (heap.full) {
                threshold = heap.minScore;
                while (essential < n && beaten(cumulative[essential]!)) essential += 1;
                while (localEssential < m && beaten(localCumulative[localEssential]!)) localEssential += 1;
              }
            }
          }
          contribution.fill(0);
        }
        lo = doc + 1;
      }
    }
    // Past the window: every essential term resumes after it.
    for (let i = essential; i < n; i++) position[i] = lists[i]!.seek(position[i]!, hi + 1);
  }
  return heap.sorted();
}

/** The k best so far; its root is the worst of them: the lowest score, or of equal scores the later document. */
class Heap {
  private docs: Int32Array;
  private scores: Float64Array;
  private size = 0;

  constructor(private readonly capacity: number) {
    this.docs = new Int32Array(capacity);
    this.scores = new Float64Array(capacity);
  }

  get full(): boolean {
    return this.size === this.capacity;
  }

  get minScore(): number {
    return this.scores[0]!;
  }

  private worse(a: number, b: number): boolean {
    return this.scores[a]! < this.scores[b]! || (this.scores[a] === this.scores[b] && this.docs[a]! > this.docs[b]!);
  }

  private swap(a: number, b: number): void {
    const d = this.docs[a]!;
    const s = this.scores[a]!;
    this.docs[a] = this.docs[b]!;
    this.scores[a] = this.scores[b]!;
    this.docs[b] = d;
    this.scores[b] = s;
  }

  push(doc: number, score: number): void {
    if (this.size < this.capacity) {
      let i = this.size++;
      this.docs[i] = doc;
      this.scores[i] = score;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.worse(i, parent)) break;
        this.swap(i, parent);
        i = parent;
      }
      return;
    }
    this.docs[0] = doc;
    this.scores[0] = score;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let worst = i;
      if (left < this.size && this.worse(left, worst)) worst = left;
      if (right < this.size && this.worse(right, worst)) worst = right;
      if (worst === i) break;
      this.swap(i, worst);
      i = worst;
    }
  }

  sorted(): Ranked[] {
    const out: Ranked[] = [];
    for (let i = 0; i < this.size; i++) out.push({ doc: this.docs[i]!, score: this.scores[i]! });
    return out.sort((a, b) => b.score - a.score || a.doc - b.doc);
  }
}
