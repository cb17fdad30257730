import type { Corpus } from './Corpus.js';
import { TopLists } from './Neighbours.js';
import { PairCounts } from './PairCounts.js';
import * as Svd from './Svd.js';

/** The term model's two spaces, learnt from the sampled corpus: LSA of the TF-IDF term×chunk matrix and PPMI-SVD. */

/** A space of unit term vectors (`dims` per term, row-major) with each term's nearest other terms. */
export type Space = { terms: number[]; dims: number; vectors: Float32Array; neighbours: TopLists };

const windowSize = 5;

/**
 * LSA: chunks as unit (1 + ln tf)·idf columns over the vocabulary; term vectors are unit rows of U. The matrix has a
 * row for each of `terms`, the most frequent of `all`; a chunk's column is normalized over all of them, so capping
 * the vocabulary leaves every value it keeps as it was.
 */
export function lsa(corpus: Corpus, options: { all: number[]; terms: number[]; idf: (id: number) => number; dimensions: number; seed: number }): Space {
  const weight = new Float64Array(corpus.terms.length);
  for (const id of options.all) weight[id] = options.idf(id);
  const row = new Int32Array(corpus.terms.length).fill(-1);
  options.terms.forEach((id, r) => (row[id] = r));
  const ptr = [0];
  const idx: number[] = [];
  const val: number[] = [];
  const tf = new Map<number, number>();
  for (const chunk of corpus.chunks) {
    tf.clear();
    for (const id of chunk.ids) if (weight[id]! > 0) tf.set(id, (tf.get(id) ?? 0) + 1);
    const start = val.length;
    let norm = 0;
    for (const [id, f] of tf) {
      const w = (1 + Math.log(f)) * weight[id]!;
      norm += w * w;
      if (row[id]! < 0) continue;
      idx.push(row[id]!);
      val.push(w);
    }
    norm = Math.sqrt(norm) || 1;
    for (let p = start; p < val.length; p++) val[p]! /= norm;
    ptr.push(val.length);
  }
  const matrix: Svd.Sparse = { rows: options.terms.length, cols: corpus.chunks.length, ptr: Int32Array.from(ptr), idx: Int32Array.from(idx), val: Float64Array.from(val) };
  const { U, sigma } = Svd.randomized(matrix, options);
  return unitSpace(options.terms, U, sigma.length);
}

/**
 * PPMI-SVD: co-occurrence of the terms of `all` within ±5 positions inside a sentence (the title is one sentence),
 * PPMI with context-distribution smoothing 0.75, term vectors U·√S. As in the prototype the window counts only those
 * terms, and column a holds PPMI(a, b) at row b, so the rows of U are the context side. Rows are kept for `terms`
 * only, the most frequent of `all`: each keeps every context it has, so capping the vocabulary changes no PMI value.
 */
export function ppmi(corpus: Corpus, options: { all: number[]; terms: number[]; dimensions: number; seed: number }): Space {
  const slot = new Int32Array(corpus.terms.length).fill(-1);
  options.all.forEach((id, s) => (slot[id] = s));
  const rowOf = new Int32Array(options.all.length).fill(-1);
  options.terms.forEach((id, r) => (rowOf[slot[id]!] = r));
  const w = options.all.length;
  const v = options.terms.length;
  const pairs = new PairCounts();
  const sequence: number[] = [];
  for (const chunk of corpus.chunks) {
    let start = 0;
    for (const end of chunk.ends) {
      sequence.length = 0;
      for (let p = start; p < end; p++) if (slot[chunk.ids[p]!]! >= 0) sequence.push(slot[chunk.ids[p]!]!);
      start = end;
      for (let i = 0; i < sequence.length; i++) {
        for (let j = i + 1; j <= i + windowSize && j < sequence.length; j++) if (sequence[i] !== sequence[j]) pairs.add(sequence[i]!, sequence[j]!);
      }
    }
  }
  const rowSum = new Float64Array(w);
  pairs.forEach((a, b, n) => {
    rowSum[a]! += n;
    rowSum[b]! += n;
  });
  const context = rowSum.map((s) => s ** 0.75);
  const contextTotal = context.reduce((a, b) => a + b, 0);
  const pmi = (a: number, b: number, n: number) => Math.log((n * contextTotal) / (rowSum[a]! * context[b]!));
  // Column a, row b: PPMI(a, b), for the rows kept.
  const ptr = new Int32Array(w + 1);
  pairs.forEach((a, b, n) => {
    if (rowOf[b]! >= 0 && pmi(a, b, n) > 0) ptr[a + 1]! += 1;
    if (rowOf[a]! >= 0 && pmi(b, a, n) > 0) ptr[b + 1]! += 1;
  });
  for (let a = 0; a < w; a++) ptr[a + 1]! += ptr[a]!;
  const fill = ptr.slice(0, w);
  const idx = new Int32Array(ptr[w]!);
  const val = new Float64Array(ptr[w]!);
  const put = (a: number, b: number, value: number) => {
    if (rowOf[b]! < 0 || value <= 0) return;
    idx[fill[a]!] = rowOf[b]!;
    val[fill[a]!] = value;
    fill[a]! += 1;
  };
  pairs.forEach((a, b, n) => {
    put(a, b, pmi(a, b, n));
    put(b, a, pmi(b, a, n));
  });
  const { U, sigma } = Svd.randomized({ rows: v, cols: w, ptr, idx, val }, options);
  const k = sigma.length;
  for (let r = 0; r < v; r++) for (let c = 0; c < k; c++) U[r * k + c]! *= Math.sqrt(sigma[c]!);
  return unitSpace(options.terms, U, k);
}

function unitSpace(terms: number[], U: Float64Array, dims: number): Space {
  const vectors = new Float32Array(terms.length * dims);
  for (let r = 0; r < terms.length; r++) {
    let norm = 0;
    for (let c = 0; c < dims; c++) norm += U[r * dims + c]! ** 2;
    norm = Math.sqrt(norm) || 1;
    for (let c = 0; c < dims; c++) vectors[r * dims + c] = U[r * dims + c]! / norm;
  }
  return { terms, dims, vectors, neighbours: new TopLists(terms.length) };
}
