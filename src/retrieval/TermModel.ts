import type { Database } from '../store/Database.js';
import { getMeta, setMeta } from '../store/Database.js';
import * as Text from './Text.js';

/**
 * Soft term matching learnt from the indexed corpus itself: which words stand in for a question's words (PPMI-SVD
 * embeddings of co-occurrence within sentences, and LSA of the TF-IDF term×chunk matrix), and how close a chunk is
 * to the topic of the first stage's best candidates. Built offline by `build`, read at query time through `load`.
 */

/** The names of the features `TermModel.features` computes, in order. */
export const featureNames = ['softPpmi', 'softLsa', 'sentenceSoft', 'feedback'] as const;

export type TermFeatures = Record<(typeof featureNames)[number], number>;

/** One candidate and its question, as stems (`Text.stemsOf`), so they match the index. */
export type FeatureInput = {
  /** The question's key stems, stopwords left out (`Text.queryTerms`). */
  queryStems: string[];
  /** The IDF of each query stem and their sum, as the other features weigh them. */
  idf: Map<string, number>;
  totalIdf: number;
  /** The candidate's stems: its item title and its text. */
  chunkStems: string[];
  /** The stems of each sentence of the candidate's text. */
  sentenceStems: string[][];
  /** The stems (title and text) of the first stage's top 5 candidates: the feedback set. */
  topChunkStems: string[][];
};

export type BuildOptions = {
  /** Above this many chunks, an even sample by rowid is used. Default 50,000. */
  maxChunks?: number;
  /** Dimensions of both spaces; fewer when the corpus has fewer terms or chunks. Default 200. */
  dimensions?: number;
  /** Seed of the randomized SVD: the same seed and corpus give the same model. Default 7. */
  seed?: number;
  onProgress?: (stage: string) => void;
};

/** What a build produced; kept in the meta table under `term_model`. */
export type BuildInfo = {
  /** Dimensions of the stored LSA term vectors. */
  dimensions: number;
  ppmiDimensions: number;
  /** Chunks the model was built from (the sample). */
  chunks: number;
  /** Terms with an LSA vector; `ppmiTerms` of them also have PPMI neighbours. */
  terms: number;
  ppmiTerms: number;
  seed: number;
  builtAt: number;
};

export type TermModel = {
  info: BuildInfo;
  /** The soft-matching features of one candidate; cheap when called for many candidates of the same question. */
  features(input: FeatureInput): TermFeatures;
};

const metaKey = 'term_model';
const neighbourCount = 20;
// Real corpora put a term's 20th neighbour well above this (≥ 0.2 on SciFact); a tiny corpus fills lists with noise.
const minSimilarity = 0.1;
const windowSize = 5;
const oversample = 20;
const powerIterations = 2;
const rowCacheSize = 50_000;
const neighbourCacheSize = 2_000;
const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });
// Stems as well as words: "was" and "this" stem to "wa" and "thi", which would otherwise enter the vocabulary.
const stopStems = new Set([...Text.stopwords, ...[...Text.stopwords].map(Text.stem)]);

// ---------------------------------------------------------------------------------------------------------------------
// Build

/** The sampled corpus as term ids: per chunk, its title and then each sentence of its text, as segments. */
type Corpus = { terms: string[]; df: Int32Array; chunks: { ids: Int32Array; ends: Int32Array }[]; indexedChunks: number };

/** A sparse matrix by columns: column j has rows `idx[ptr[j]..ptr[j+1])` with values `val[...]`. */
type Sparse = { rows: number; cols: number; ptr: Int32Array; idx: Int32Array; val: Float64Array };

/** A space of unit term vectors (`dims` per term, row-major) with each term's nearest other terms. */
type Space = { terms: number[]; dims: number; vectors: Float32Array; neighbours: Int32Array; similarities: Float32Array };

/** Stores up to this many chunks get their term model built automatically (about a minute at the limit). */
export const automaticLimit = 20_000;

/**
 * Builds the term model when the store is small enough to do it now (on start, after a sync or an upload batch);
 * a larger store is left to `profile-edge reindex`.
 */
export function buildIfSmall(db: Database, limit = automaticLimit): 'built' | 'empty' | 'too_large' {
  const chunks = db.prepare('SELECT count(*) FROM chunks').pluck().get() as number;
  if (chunks === 0) return 'empty';
  if (chunks > limit) return 'too_large';
  build(db);
  return 'built';
}

/**
 * Builds the term model from the indexed chunks and stores it, replacing any earlier one, in one transaction.
 * Synchronous and CPU-bound: time grows with the vocabulary squared (nearest neighbours), so run it offline.
 */
export function build(db: Database, options: BuildOptions = {}): BuildInfo {
  const maxChunks = options.maxChunks ?? 50_000;
  const dimensions = options.dimensions ?? 200;
  const seed = options.seed ?? 7;
  if (!Number.isInteger(maxChunks) || maxChunks < 1) throw new Error(`maxChunks must be a positive integer, not ${maxChunks}`);
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 1000) throw new Error(`dimensions must be an integer in 1..1000, not ${dimensions}`);
  if (!Number.isInteger(seed)) throw new Error(`seed must be an integer, not ${seed}`);
  const progress = options.onProgress ?? (() => undefined);

  progress('reading chunks');
  const corpus = readCorpus(db, maxChunks);
  progress('lsa');
  const lsaTerms = corpus.terms.flatMap((t, id) => (corpus.df[id]! >= 2 && !stopStems.has(t) ? [id] : []));
  const idf = indexIdf(db, corpus, lsaTerms);
  const lsa = lsaSpace(corpus, { terms: lsaTerms, idf, dimensions, seed });
  progress('ppmi');
  const ppmiTerms = corpus.terms.flatMap((t, id) => (corpus.df[id]! >= 3 && !stopStems.has(t) && !/^\d+$/.test(t) ? [id] : []));
  const ppmi = ppmiSpace(corpus, { terms: ppmiTerms, dimensions, seed });
  progress('neighbours');
  nearest(lsa);
  nearest(ppmi);

  progress('saving');
  const info: BuildInfo = {
    dimensions: lsa.dims,
    ppmiDimensions: ppmi.dims,
    chunks: corpus.chunks.length,
    terms: lsa.terms.length,
    ppmiTerms: ppmi.terms.length,
    seed,
    builtAt: Date.now(),
  };
  const listOf = (space: Space, row: number) => {
    const list: [string, number][] = [];
    for (let n = 0; n < neighbourCount; n++) {
      const at = row * neighbourCount + n;
      if (space.neighbours[at]! < 0) break;
      list.push([corpus.terms[space.terms[space.neighbours[at]!]!]!, Math.round(space.similarities[at]! * 1e4) / 1e4]);
    }
    return JSON.stringify(list);
  };
  const ppmiRow = new Map(ppmi.terms.map((id, row) => [id, row]));
  db.transaction(() => {
    db.exec(`DROP TABLE IF EXISTS term_model_terms;
      CREATE TABLE term_model_terms (
        term TEXT PRIMARY KEY,
        idf REAL NOT NULL,
        lsa BLOB NOT NULL,
        lsa_neighbours TEXT NOT NULL,
        ppmi_neighbours TEXT NOT NULL
      ) STRICT;`);
    const insert = db.prepare('INSERT INTO term_model_terms (term, idf, lsa, lsa_neighbours, ppmi_neighbours) VALUES (?, ?, ?, ?, ?)');
    lsa.terms.forEach((id, row) => {
      const vector = lsa.vectors.subarray(row * lsa.dims, (row + 1) * lsa.dims);
      const p = ppmiRow.get(id);
      insert.run(corpus.terms[id]!, idf[row]!, Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength), listOf(lsa, row), p === undefined ? '[]' : listOf(ppmi, p));
    });
    setMeta(db, metaKey, JSON.stringify(info));
  })();
  return info;
}

function readCorpus(db: Database, maxChunks: number): Corpus {
  const rowids = db.prepare('SELECT rowid FROM chunks ORDER BY rowid').pluck().all() as number[];
  const picked = rowids.length <= maxChunks ? rowids : Array.from({ length: maxChunks }, (_, i) => rowids[Math.floor((i * rowids.length) / maxChunks)]!);
  const read = db.prepare('SELECT c.text AS text, i.title AS title FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid = ?');
  const dictionary = new Map<string, number>();
  const terms: string[] = [];
  const df: number[] = [];
  const lastChunk: number[] = [];
  const chunks: Corpus['chunks'] = [];
  for (const rowid of picked) {
    const row = read.get(rowid) as { text: string; title: string } | undefined;
    if (!row) continue;
    const ids: number[] = [];
    const ends: number[] = [];
    for (const segment of [row.title, ...Array.from(sentenceSegmenter.segment(row.text), (s) => s.segment)]) {
      for (const stem of Text.stemsOf(segment)) {
        let id = dictionary.get(stem);
        if (id === undefined) {
          id = terms.length;
          dictionary.set(stem, id);
          terms.push(stem);
          df.push(0);
          lastChunk.push(-1);
        }
        if (lastChunk[id] !== chunks.length) {
          lastChunk[id] = chunks.length;
          df[id]! += 1;
        }
        ids.push(id);
      }
      ends.push(ids.length);
    }
    chunks.push({ ids: Int32Array.from(ids), ends: Int32Array.from(ends) });
  }
  return { terms, df: Int32Array.from(df), chunks, indexedChunks: rowids.length };
}

/** IDF over the whole index, as `Stats.idf` computes it, so a sample weighs terms as queries do. */
function indexIdf(db: Database, corpus: Corpus, termIds: number[]): Float64Array {
  const vocab = db.prepare('SELECT doc FROM chunk_vocab WHERE term = ?').pluck();
  const n = corpus.indexedChunks;
  const scale = n / Math.max(1, corpus.chunks.length);
  return Float64Array.from(termIds, (id) => {
    const indexed = (vocab.get(corpus.terms[id]!) as number | undefined) ?? 0;
    const d = Math.min(n, indexed > 0 ? indexed : Math.round(corpus.df[id]! * scale));
    return Math.log(1 + (n - d + 0.5) / (d + 0.5));
  });
}

/** LSA: chunks as unit (1 + ln tf)·idf columns over the vocabulary; term vectors are unit rows of U. */
function lsaSpace(corpus: Corpus, options: { terms: number[]; idf: Float64Array; dimensions: number; seed: number }): Space {
  const row = new Int32Array(corpus.terms.length).fill(-1);
  options.terms.forEach((id, r) => (row[id] = r));
  const ptr = [0];
  const idx: number[] = [];
  const val: number[] = [];
  const tf = new Map<number, number>();
  for (const chunk of corpus.chunks) {
    tf.clear();
    for (const id of chunk.ids) if (row[id]! >= 0) tf.set(row[id]!, (tf.get(row[id]!) ?? 0) + 1);
    const start = val.length;
    let norm = 0;
    for (const [r, f] of tf) {
      const w = (1 + Math.log(f)) * options.idf[r]!;
      idx.push(r);
      val.push(w);
      norm += w * w;
    }
    norm = Math.sqrt(norm) || 1;
    for (let p = start; p < val.length; p++) val[p]! /= norm;
    ptr.push(val.length);
  }
  const matrix: Sparse = { rows: options.terms.length, cols: corpus.chunks.length, ptr: Int32Array.from(ptr), idx: Int32Array.from(idx), val: Float64Array.from(val) };
  const { U, sigma } = randomizedSvd(matrix, options);
  return unitSpace(options.terms, U, sigma.length);
}

/**
 * PPMI-SVD: co-occurrence of vocabulary terms within ±5 positions inside a sentence (the title is one sentence),
 * PPMI with context-distribution smoothing 0.75, term vectors U·√S. As in the prototype the window counts only
 * vocabulary terms, and column a holds PPMI(a, b) at row b, so the rows of U are the context side.
 */
function ppmiSpace(corpus: Corpus, options: { terms: number[]; dimensions: number; seed: number }): Space {
  const row = new Int32Array(corpus.terms.length).fill(-1);
  options.terms.forEach((id, r) => (row[id] = r));
  const v = options.terms.length;
  const pairs = new PairCounts();
  const sequence: number[] = [];
  for (const chunk of corpus.chunks) {
    let start = 0;
    for (const end of chunk.ends) {
      sequence.length = 0;
      for (let p = start; p < end; p++) if (row[chunk.ids[p]!]! >= 0) sequence.push(row[chunk.ids[p]!]!);
      start = end;
      for (let i = 0; i < sequence.length; i++) {
        for (let j = i + 1; j <= i + windowSize && j < sequence.length; j++) if (sequence[i] !== sequence[j]) pairs.add(sequence[i]!, sequence[j]!);
      }
    }
  }
  const rowSum = new Float64Array(v);
  pairs.forEach((a, b, n) => {
    rowSum[a]! += n;
    rowSum[b]! += n;
  });
  const context = rowSum.map((s) => s ** 0.75);
  const contextTotal = context.reduce((a, b) => a + b, 0);
  const pmi = (a: number, b: number, n: number) => Math.log((n * contextTotal) / (rowSum[a]! * context[b]!));
  const ptr = new Int32Array(v + 1);
  pairs.forEach((a, b, n) => {
    if (pmi(a, b, n) > 0) ptr[a + 1]! += 1;
    if (pmi(b, a, n) > 0) ptr[b + 1]! += 1;
  });
  for (let a = 0; a < v; a++) ptr[a + 1]! += ptr[a]!;
  const fill = ptr.slice(0, v);
  const idx = new Int32Array(ptr[v]!);
  const val = new Float64Array(ptr[v]!);
  const put = (a: number, b: number, value: number) => {
    if (value <= 0) return;
    idx[fill[a]!] = b;
    val[fill[a]!] = value;
    fill[a]! += 1;
  };
  pairs.forEach((a, b, n) => {
    put(a, b, pmi(a, b, n));
    put(b, a, pmi(b, a, n));
  });
  const { U, sigma } = randomizedSvd({ rows: v, cols: v, ptr, idx, val }, options);
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
  return { terms, dims, vectors, neighbours: new Int32Array(0), similarities: new Float32Array(0) };
}

/** Counts of unordered pairs of small integers, in open addressing over typed arrays (a large corpus has too many pairs for Maps). */
class PairCounts {
  private first = new Int32Array(1 << 16).fill(-1);
  private second = new Int32Array(1 << 16);
  private counts = new Uint32Array(1 << 16);
  private size = 0;

  add(x: number, y: number): void {
    const a = Math.min(x, y);
    const b = Math.max(x, y);
    const mask = this.first.length - 1;
    let h = PairCounts.hash(a, b) & mask;
    while (this.first[h] !== -1) {
      if (this.first[h] === a && this.second[h] === b) {
        this.counts[h]! += 1;
        return;
      }
      h = (h + 1) & mask;
    }
    this.first[h] = a;
    this.second[h] = b;
    this.counts[h] = 1;
    this.size += 1;
    if (this.size * 10 > this.first.length * 7) this.grow();
  }

  forEach(fn: (a: number, b: number, count: number) => void): void {
    for (let h = 0; h < this.first.length; h++) if (this.first[h] !== -1) fn(this.first[h]!, this.second[h]!, this.counts[h]!);
  }

  private static hash(a: number, b: number): number {
    let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x632be5ab, 0x85ebca6b);
    h ^= h >>> 15;
    return Math.imul(h, 0x2c1b3c6d) ^ (h >>> 13);
  }

  private grow(): void {
    const { first, second, counts } = this;
    const mask = first.length * 2 - 1;
    this.first = new Int32Array(first.length * 2).fill(-1);
    this.second = new Int32Array(first.length * 2);
    this.counts = new Uint32Array(first.length * 2);
    for (let o = 0; o < first.length; o++) {
      if (first[o] === -1) continue;
      let h = PairCounts.hash(first[o]!, second[o]!) & mask;
      while (this.first[h] !== -1) h = (h + 1) & mask;
      this.first[h] = first[o]!;
      this.second[h] = second[o]!;
      this.counts[h] = counts[o]!;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Linear algebra: randomized SVD (Halko et al.) with CholeskyQR2 and a Jacobi eigensolver on the small core.

/** The top left singular vectors (rows × k, row-major) and values; k drops below `dimensions` when the rank does. */
function randomizedSvd(A: Sparse, options: { dimensions: number; seed: number }): { U: Float64Array; sigma: Float64Array } {
  const l = Math.min(options.dimensions + oversample, A.rows, A.cols);
  if (l === 0) return { U: new Float64Array(0), sigma: new Float64Array(0) };
  const random = mulberry32(options.seed);
  const omega = new Float64Array(A.cols * l);
  for (let i = 0; i < omega.length; i++) omega[i] = gaussian(random);
  // The power iterations only need a well-conditioned basis (one Cholesky pass); the final Q must be orthonormal (two).
  let Q = times(A, omega, l);
  orthonormalize(Q, { rows: A.rows, l, passes: 1 });
  for (let i = 0; i < powerIterations; i++) {
    const Z = timesTransposed(A, Q, l);
    orthonormalize(Z, { rows: A.cols, l, passes: 1 });
    Q = times(A, Z, l);
    orthonormalize(Q, { rows: A.rows, l, passes: i === powerIterations - 1 ? 2 : 1 });
  }
  // B = QᵀA is l × cols; the eigenvectors of BBᵀ rotate Q into the left singular vectors.
  const { values, vectors } = eigen(gram(timesTransposed(A, Q, l), A.cols, l), l);
  const top = Math.max(0, ...values);
  const order = [...values.keys()]
    .sort((a, b) => values[b]! - values[a]! || a - b)
    .filter((e) => values[e]! > 1e-10 * top)
    .slice(0, options.dimensions);
  const k = order.length;
  const E = new Float64Array(l * k);
  for (let j = 0; j < l; j++) for (let c = 0; c < k; c++) E[j * k + c] = vectors[j * l + order[c]!]!;
  const U = new Float64Array(A.rows * k);
  for (let r = 0; r < A.rows; r++) {
    const uo = r * k;
    for (let j = 0; j < l; j++) {
      const q = Q[r * l + j]!;
      if (q === 0) continue;
      const eo = j * k;
      for (let c = 0; c < k; c++) U[uo + c]! += q * E[eo + c]!;
    }
  }
  return { U, sigma: Float64Array.from(order, (e) => Math.sqrt(values[e]!)) };
}

/** A·Z for Z dense (cols × l, row-major): rows × l. */
function times(A: Sparse, Z: Float64Array, l: number): Float64Array {
  const Y = new Float64Array(A.rows * l);
  for (let j = 0; j < A.cols; j++) {
    const zo = j * l;
    for (let p = A.ptr[j]!; p < A.ptr[j + 1]!; p++) {
      const yo = A.idx[p]! * l;
      const v = A.val[p]!;
      for (let c = 0; c < l; c++) Y[yo + c]! += v * Z[zo + c]!;
    }
  }
  return Y;
}

/** Aᵀ·Q for Q dense (rows × l, row-major): cols × l. */
function timesTransposed(A: Sparse, Q: Float64Array, l: number): Float64Array {
  const Z = new Float64Array(A.cols * l);
  for (let j = 0; j < A.cols; j++) {
    const zo = j * l;
    for (let p = A.ptr[j]!; p < A.ptr[j + 1]!; p++) {
      const qo = A.idx[p]! * l;
      const v = A.val[p]!;
      for (let c = 0; c < l; c++) Z[zo + c]! += v * Q[qo + c]!;
    }
  }
  return Z;
}

/** MᵀM (l × l) for M rows × l, row-major. */
function gram(M: Float64Array, rows: number, l: number): Float64Array {
  const G = new Float64Array(l * l);
  for (let r = 0; r < rows; r++) {
    const o = r * l;
    for (let i = 0; i < l; i++) {
      const a = M[o + i]!;
      if (a === 0) continue;
      const gi = i * l;
      for (let j = i; j < l; j++) G[gi + j]! += a * M[o + j]!;
    }
  }
  for (let i = 0; i < l; i++) for (let j = 0; j < i; j++) G[i * l + j] = G[j * l + i]!;
  return G;
}

/**
 * Orthonormalizes the columns of M (rows × l, row-major) in place by CholeskyQR (two passes: CholeskyQR2). A column
 * that depends on earlier ones (a rank-deficient matrix: a tiny corpus, duplicate chunks) becomes zero, not noise.
 */
function orthonormalize(M: Float64Array, shape: { rows: number; l: number; passes: number }): void {
  const { rows, l } = shape;
  for (let pass = 0; pass < shape.passes; pass++) {
    const G = gram(M, rows, l);
    // The Cholesky factor G = RᵀR, upper triangular, row-major; a zero diagonal marks a dependent column.
    const R = new Float64Array(l * l);
    for (let i = 0; i < l; i++) {
      let d = G[i * l + i]!;
      for (let k = 0; k < i; k++) d -= R[k * l + i]! ** 2;
      if (!(d > 1e-13 * G[i * l + i]!)) continue;
      const rii = Math.sqrt(d);
      R[i * l + i] = rii;
      for (let j = i + 1; j < l; j++) {
        let s = G[i * l + j]!;
        for (let k = 0; k < i; k++) s -= R[k * l + i]! * R[k * l + j]!;
        R[i * l + j] = s / rii;
      }
    }
    // M ← M R⁻¹, one row at a time (x R = m), by substitution along the rows of R: independent updates pipeline.
    for (let r = 0; r < rows; r++) {
      const o = r * l;
      for (let j = 0; j < l; j++) {
        const rjj = R[j * l + j]!;
        if (rjj === 0) {
          M[o + j] = 0;
          continue;
        }
        const x = M[o + j]! / rjj;
        M[o + j] = x;
        const rj = j * l;
        for (let i = j + 1; i < l; i++) M[o + i]! -= x * R[rj + i]!;
      }
    }
  }
}

/** Eigenvalues and eigenvectors (columns of `vectors`) of a symmetric n × n matrix, by cyclic Jacobi; A is destroyed. */
function eigen(A: Float64Array, n: number): { values: number[]; vectors: Float64Array } {
  const V = new Float64Array(n * n);
  for (let i = 0; i < n; i++) V[i * n + i] = 1;
  let scale = 0;
  for (const a of A) scale += a * a;
  for (let sweep = 0; sweep < 50; sweep++) {
    let off = 0;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) off += A[i * n + j]! ** 2;
    if (off <= 1e-26 * scale) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = A[p * n + q]!;
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (A[q * n + q]! - A[p * n + p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = A[k * n + p]!;
          const akq = A[k * n + q]!;
          A[k * n + p] = c * akp - s * akq;
          A[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = A[p * n + k]!;
          const aqk = A[q * n + k]!;
          A[p * n + k] = c * apk - s * aqk;
          A[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = V[k * n + p]!;
          const vkq = V[k * n + q]!;
          V[k * n + p] = c * vkp - s * vkq;
          V[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  return { values: Array.from({ length: n }, (_, i) => A[i * n + i]!), vectors: V };
}

function mulberry32(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(random: () => number): number {
  let u = 0;
  while (u === 0) u = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/**
 * Fills in each term's nearest other terms (cosine above `minSimilarity`, best first; -1 pads a short list). Exact, so
 * quadratic in the vocabulary: blocks of 64 rows stay in cache while every later row streams past them once.
 */
function nearest(space: Space): void {
  const { dims: k, vectors: M } = space;
  const n = space.terms.length;
  const K = neighbourCount;
  const ids = new Int32Array(n * K).fill(-1);
  const sims = new Float32Array(n * K);
  const filled = new Uint8Array(n);
  const floor = new Float32Array(n).fill(minSimilarity);
  const offer = (i: number, j: number, s: number) => {
    const base = i * K;
    let p = Math.min(filled[i]!, K - 1);
    if (filled[i]! < K) filled[i]! += 1;
    while (p > 0 && sims[base + p - 1]! < s) {
      sims[base + p] = sims[base + p - 1]!;
      ids[base + p] = ids[base + p - 1]!;
      p -= 1;
    }
    sims[base + p] = s;
    ids[base + p] = j;
    if (filled[i] === K) floor[i] = sims[base + K - 1]!;
  };
  const pair = (i: number, j: number, s: number) => {
    if (s > floor[i]!) offer(i, j, s);
    if (s > floor[j]!) offer(j, i, s);
  };
  for (let i0 = 0; i0 < n; i0 += 64) {
    const i1 = Math.min(n, i0 + 64);
    for (let j = i0 + 1; j < n; j++) {
      const jo = j * k;
      const end = Math.min(i1, j);
      let i = i0;
      for (; i + 3 < end; i += 4) {
        const o0 = i * k;
        const o1 = o0 + k;
        const o2 = o1 + k;
        const o3 = o2 + k;
        let a0 = 0;
        let a1 = 0;
        let a2 = 0;
        let a3 = 0;
        for (let c = 0; c < k; c++) {
          const x = M[jo + c]!;
          a0 += M[o0 + c]! * x;
          a1 += M[o1 + c]! * x;
          a2 += M[o2 + c]! * x;
          a3 += M[o3 + c]! * x;
        }
        pair(i, j, a0);
        pair(i + 1, j, a1);
        pair(i + 2, j, a2);
        pair(i + 3, j, a3);
      }
      for (; i < end; i++) {
        const o = i * k;
        let a = 0;
        for (let c = 0; c < k; c++) a += M[o + c]! * M[jo + c]!;
        pair(i, j, a);
      }
    }
  }
  space.neighbours = ids;
  space.similarities = sims;
}

// ---------------------------------------------------------------------------------------------------------------------
// Query time

/** A term's LSA row and IDF; `seen` and `tf` count it in the bag of stems at hand. */
type Row = { idf: number; lsa: Float32Array; seen: number; tf: number };
type Neighbours = { lsa: [string, number][]; ppmi: [string, number][] };

/** A word that is, or stands in for, a query term. */
type Related = {
  /** The query term it is, or -1. */
  query: number;
  /** The query terms it stands in for: [query index, cosine, query index, cosine, ...]. */
  ppmi: number[];
  lsa: number[];
  /** Marks it as met in the current chunk or sentence. */
  seen: number;
};

/** The per-question lookups, built once for all its candidates. */
type QueryContext = {
  stems: string[];
  weights: Float64Array;
  totalIdf: number;
  related: Map<string, Related>;
  top?: string[][];
  centroid?: Float64Array | undefined;
};

/** The stored term model, or undefined when none was built. Load again after a rebuild: lookups are cached. */
export function load(db: Database): TermModel | undefined {
  const raw = getMeta(db, metaKey);
  if (raw === undefined) return undefined;
  if (!db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'term_model_terms'`).get()) return undefined;
  const info = JSON.parse(raw) as BuildInfo;
  const k = info.dimensions;
  const selectRow = db.prepare('SELECT idf, lsa FROM term_model_terms WHERE term = ?');
  const selectNeighbours = db.prepare('SELECT lsa_neighbours AS lsa, ppmi_neighbours AS ppmi FROM term_model_terms WHERE term = ?');
  const rows = bounded(rowCacheSize, (term): Row | null => {
    const r = selectRow.get(term) as { idf: number; lsa: Buffer } | undefined;
    if (!r) return null;
    return { idf: r.idf, lsa: new Float32Array(r.lsa.buffer.slice(r.lsa.byteOffset, r.lsa.byteOffset + r.lsa.byteLength)), seen: 0, tf: 0 };
  });
  const neighbours = bounded(neighbourCacheSize, (term): Neighbours | null => {
    const r = selectNeighbours.get(term) as { lsa: string; ppmi: string } | undefined;
    return r ? { lsa: JSON.parse(r.lsa), ppmi: JSON.parse(r.ppmi) } : null;
  });
  let stamp = 0;

  let last: QueryContext | undefined;
  const contextOf = (input: FeatureInput): QueryContext => {
    const stems = [...new Set(input.queryStems)];
    const weights = Float64Array.from(stems, (s) => input.idf.get(s) ?? 0);
    if (last && last.totalIdf === input.totalIdf && sameStrings(last.stems, stems) && weights.every((w, i) => w === last!.weights[i])) return last;
    neighbours.trim();
    const related = new Map<string, Related>();
    const relatedOf = (stem: string) => {
      let w = related.get(stem);
      if (!w) related.set(stem, (w = { query: -1, ppmi: [], lsa: [], seen: 0 }));
      return w;
    };
    stems.forEach((s, i) => {
      relatedOf(s).query = i;
      const n = neighbours.get(s);
      for (const [word, similarity] of n?.ppmi ?? []) if (similarity > 0) relatedOf(word).ppmi.push(i, similarity);
      for (const [word, similarity] of n?.lsa ?? []) if (similarity > 0) relatedOf(word).lsa.push(i, similarity);
    });
    last = { stems, weights, totalIdf: input.totalIdf, related };
    return last;
  };

  /** The unit LSA vector of a bag of stems: Σ (1 + ln tf)·idf × row over distinct known stems, or undefined. */
  const vectorOf = (stems: string[]): Float64Array | undefined => {
    const mark = ++stamp;
    const known: Row[] = [];
    for (const stem of stems) {
      const row = rows.get(stem);
      if (row === null) continue;
      if (row.seen !== mark) {
        row.seen = mark;
        row.tf = 0;
        known.push(row);
      }
      row.tf += 1;
    }
    if (known.length === 0) return undefined;
    const v = new Float64Array(k);
    let r = 0;
    // Four rows per pass over v: the sum is bound by loads and stores, and this nearly halves them.
    for (; r + 3 < known.length; r += 4) {
      const a = known[r]!;
      const b = known[r + 1]!;
      const c = known[r + 2]!;
      const d = known[r + 3]!;
      const wa = (1 + Math.log(a.tf)) * a.idf;
      const wb = (1 + Math.log(b.tf)) * b.idf;
      const wc = (1 + Math.log(c.tf)) * c.idf;
      const wd = (1 + Math.log(d.tf)) * d.idf;
      const ra = a.lsa;
      const rb = b.lsa;
      const rc = c.lsa;
      const rd = d.lsa;
      for (let x = 0; x < k; x++) v[x]! += wa * ra[x]! + wb * rb[x]! + wc * rc[x]! + wd * rd[x]!;
    }
    for (; r < known.length; r++) {
      const row = known[r]!;
      const w = (1 + Math.log(row.tf)) * row.idf;
      for (let x = 0; x < k; x++) v[x]! += w * row.lsa[x]!;
    }
    return unit(v);
  };

  const centroidOf = (q: QueryContext, top: string[][]): Float64Array | undefined => {
    if (q.top && q.top.length === top.length && q.top.every((t, i) => t === top[i] || sameStrings(t, top[i]!))) return q.centroid;
    const sum = new Float64Array(k);
    for (const stems of top) {
      const v = vectorOf(stems);
      if (v) for (let c = 0; c < k; c++) sum[c]! += v[c]!;
    }
    q.top = top.map((t) => [...t]);
    q.centroid = sum.some((x) => x !== 0) ? unit(sum) : undefined;
    return q.centroid;
  };

  return {
    info,
    features(input) {
      // Evict between calls only: the marks on cached rows must hold while one bag of stems is counted.
      rows.trim();
      const q = contextOf(input);
      const n = q.stems.length;
      const sums = new Float64Array(n);
      const best = new Float64Array(n);
      const present = new Uint8Array(n);
      /** Over the distinct related words of `stems`: the query terms present, PPMI sums and best LSA cosines. */
      const collect = (stems: string[]) => {
        sums.fill(0);
        best.fill(0);
        present.fill(0);
        const mark = ++stamp;
        for (const stem of stems) {
          const w = q.related.get(stem);
          if (w === undefined || w.seen === mark) continue;
          w.seen = mark;
          if (w.query >= 0) present[w.query] = 1;
          for (let x = 0; x < w.ppmi.length; x += 2) sums[w.ppmi[x]!]! += w.ppmi[x + 1]!;
          for (let x = 0; x < w.lsa.length; x += 2) if (w.lsa[x + 1]! > best[w.lsa[x]!]!) best[w.lsa[x]!] = w.lsa[x + 1]!;
        }
      };
      let softPpmi = 0;
      let softLsa = 0;
      let sentenceSoft = 0;
      if (n > 0 && input.totalIdf > 0) {
        collect(input.chunkStems);
        for (let i = 0; i < n; i++) {
          if (present[i]) continue;
          softPpmi += q.weights[i]! * Math.min(1, sums[i]!);
          softLsa += q.weights[i]! * best[i]!;
        }
        for (const sentence of input.sentenceStems) {
          collect(sentence);
          let covered = 0;
          for (let i = 0; i < n; i++) covered += q.weights[i]! * (present[i] ? 1 : Math.min(1, sums[i]!));
          sentenceSoft = Math.max(sentenceSoft, covered);
        }
        softPpmi /= input.totalIdf;
        softLsa /= input.totalIdf;
        sentenceSoft /= input.totalIdf;
      }
      let feedback = 0;
      const centroid = input.topChunkStems.length > 0 ? centroidOf(q, input.topChunkStems) : undefined;
      const v = centroid && vectorOf(input.chunkStems);
      if (centroid && v) for (let c = 0; c < k; c++) feedback += v[c]! * centroid[c]!;
      return { softPpmi, softLsa, sentenceSoft, feedback };
    },
  };
}

/**
 * A cache that keeps the recently used: two generations, the older dropped when the newer has `capacity` entries.
 * Eviction happens in `trim` only, so the entries a caller holds stay the cached ones until it trims.
 */
function bounded<V extends object | null>(capacity: number, compute: (key: string) => V): { get(key: string): V; trim(): void } {
  let young = new Map<string, V>();
  let old = new Map<string, V>();
  return {
    get(key) {
      const hit = young.get(key);
      if (hit !== undefined) return hit;
      const older = old.get(key);
      const value = older !== undefined ? older : compute(key);
      young.set(key, value);
      return value;
    },
    trim() {
      if (young.size < capacity) return;
      old = young;
      young = new Map();
    },
  };
}

function unit(v: Float64Array): Float64Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let c = 0; c < v.length; c++) v[c]! /= norm;
  return v;
}

function sameStrings(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
