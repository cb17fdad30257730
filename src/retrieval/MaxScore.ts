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

export function topK(options: { terms: ScoredTerm[]; k: number; scoring: Scoring; accept: (doc: number) => boolean; exhaustive?: boolean }): Ranked[] {
  const { terms, k, accept } = options;
  const n = terms.length;
  if (n === 0 || k <= 0) return [];
  const { k1, b, averageLength, docLength } = options.scoring;
  const norm0 = k1 * (1 - b);
  const norm1 = (k1 * b) / averageLength;
  const weight = (count: number, length: number) => (count * (k1 + 1)) / (count + norm0 + norm1 * length);

  // The most each term can add: the best block bound of its list.
  const bounds = terms.map(({ list, idf }) => {
    let best = 0;
    for (let block = 0; block < list.blocks; block++) best = Math.max(best, weight(list.blockMaxCount[block]!, list.blockMinLength[block]!));
    return best * idf;
  });
  const order = [...terms.keys()].sort((x, y) => bounds[x]! - bounds[y]! || x - y);
  const lists = order.map((t) => terms[t]!.list);
  const idfs = Float64Array.from(order, (t) => terms[t]!.idf);
  /** cumulative[i]: the most the i+1 weakest terms can add together. */
  const cumulative = new Float64Array(n);
  order.forEach((t, i) => (cumulative[i] = (i > 0 ? cumulative[i - 1]! : 0) + bounds[t]!));
  /** Where each term of the query sits in `order`. */
  const slot = new Int32Array(n);
  order.forEach((t, i) => (slot[t] = i));
  const position = new Int32Array(n);
  const contribution = new Float64Array(n);
  const heap = new Heap(k);
  let threshold = -Infinity;
  /** Terms below this index are non-essential: together they cannot lift a document past the threshold. */
  let essential = 0;
  const end = 2147483647;

  for (;;) {
    let doc = end;
    for (let i = essential; i < n; i++) {
      const p = position[i]!;
      if (p < lists[i]!.length) {
        const d = lists[i]!.docs[p]!;
        if (d < doc) doc = d;
      }
    }
    if (doc === end) break;
    const admitted = accept(doc);
    const length = docLength[doc]!;
    let partial = 0;
    for (let i = essential; i < n; i++) {
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
    if (!admitted) continue;
    let competitive = true;
    for (let i = essential - 1; i >= 0; i--) {
      if (partial + cumulative[i]! <= threshold - margin(threshold)) {
        competitive = false;
        break;
      }
      const list = lists[i]!;
      const p = list.seek(position[i]!, doc);
      position[i] = p;
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
        if (heap.full && !options.exhaustive) {
          threshold = heap.minScore;
          while (essential < n && cumulative[essential]! <= threshold - margin(threshold)) essential += 1;
        } else if (heap.full) threshold = heap.minScore;
      }
    }
    contribution.fill(0);
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
