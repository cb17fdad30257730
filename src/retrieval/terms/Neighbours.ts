import * as BlockDots from './BlockDots.js';

/**
 * Each term's nearest other terms in a space, by exact cosine similarity: the lists the model stores and a question's
 * soft matches read.
 */

const neighbourCount = 20;
// Real corpora put a term's 20th neighbour well above this (≥ 0.2 on SciFact); a tiny corpus fills lists with noise.
const minSimilarity = 0.1;

/** Each row's nearest other rows, best first (cosine above `minSimilarity`; -1 pads a short list). */
export class TopLists {
  readonly ids: Int32Array;
  readonly sims: Float32Array;
  /** What a candidate must beat to enter a row's list: `minSimilarity`, then the list's last entry once it is full. */
  readonly floor: Float32Array;
  private readonly filled: Uint8Array;

  constructor(rows: number) {
    this.ids = new Int32Array(rows * neighbourCount).fill(-1);
    this.sims = new Float32Array(rows * neighbourCount);
    this.floor = new Float32Array(rows).fill(minSimilarity);
    this.filled = new Uint8Array(rows);
  }

  /** Puts row `j` at similarity `s` into row `i`'s list; the caller has checked `s > floor[i]`. */
  offer(i: number, j: number, s: number): void {
    const K = neighbourCount;
    const base = i * K;
    let p = Math.min(this.filled[i]!, K - 1);
    if (this.filled[i]! < K) this.filled[i]! += 1;
    while (p > 0 && this.sims[base + p - 1]! < s) {
      this.sims[base + p] = this.sims[base + p - 1]!;
      this.ids[base + p] = this.ids[base + p - 1]!;
      p -= 1;
    }
    this.sims[base + p] = s;
    this.ids[base + p] = j;
    if (this.filled[i] === K) this.floor[i] = this.sims[base + K - 1]!;
  }

  /** Row `i`'s list as stored: `[[term, similarity], ...]`. */
  json(i: number, nameOf: (row: number) => string): string {
    const list: [string, number][] = [];
    for (let n = 0; n < neighbourCount; n++) {
      const at = i * neighbourCount + n;
      if (this.ids[at]! < 0) break;
      list.push([nameOf(this.ids[at]!), Math.round(this.sims[at]! * 1e4) / 1e4]);
    }
    return JSON.stringify(list);
  }
}

/**
 * Fills in each term's nearest other terms. Exact, so quadratic in the vocabulary (which `vocabulary` caps): every
 * pair once, by blocks of 64 × 256 rows that stay in cache.
 */
export function nearest(top: TopLists, space: { vectors: Float32Array; dims: number; count: number }): void {
  const { floor } = top;
  const n = space.count;
  if (space.dims === 0) return;
  const dots = BlockDots.over(space.vectors, { rows: n, dims: space.dims });
  for (let i0 = 0; i0 < n; i0 += 64) {
    const ni = Math.min(64, n - i0);
    for (let j0 = i0; j0 < n; j0 += 256) {
      const nj = Math.min(256, n - j0);
      const { values, stride } = dots(i0, ni, j0, nj);
      for (let a = 0; a < ni; a++) {
        const i = i0 + a;
        for (let b = Math.max(0, i + 1 - j0); b < nj; b++) {
          const s = values[a * stride + b]!;
          if (s > floor[i]!) top.offer(i, j0 + b, s);
          if (s > floor[j0 + b]!) top.offer(j0 + b, i, s);
        }
      }
    }
  }
}

/** Fills in the lists of rows `from` and after only, against every other row (the lists of the others stay). */
export function nearestTo(top: TopLists, space: { vectors: Float32Array; dims: number; count: number; from: number }): void {
  const { count, from } = space;
  if (space.dims === 0) return;
  const dots = BlockDots.over(space.vectors, { rows: count, dims: space.dims });
  for (let i0 = from; i0 < count; i0 += 64) {
    const ni = Math.min(64, count - i0);
    for (let j0 = 0; j0 < count; j0 += 256) {
      const nj = Math.min(256, count - j0);
      const { values, stride } = dots(i0, ni, j0, nj);
      for (let a = 0; a < ni; a++) {
        const i = i0 + a;
        for (let b = 0; b < nj; b++) {
          const s = values[a * stride + b]!;
          if (s > top.floor[i]! && j0 + b !== i) top.offer(i, j0 + b, s);
        }
      }
    }
  }
}
