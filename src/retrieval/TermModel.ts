import { createHash } from 'node:crypto';
import type { Store } from '../store/Store.js';
import type { TermRow } from '../store/TermModelRows.js';
import type { Stats } from './Stats.js';
import * as Text from './Text.js';

/**
 * Soft term matching learnt from the indexed corpus itself: which words stand in for a question's words (PPMI-SVD
 * embeddings of co-occurrence within sentences, and LSA of the TF-IDF term×chunk matrix), and how close a chunk is
 * to the topic of the first stage's best candidates. Learnt from public content only, by `build` (offline, bounded by
 * a sample and a vocabulary cap) and `update` (new terms folded in); read at query time through `load`.
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
  /** Above this many public chunks, an even sample by rowid is used. Default 50,000. */
  maxChunks?: number;
  /** Dimensions of both spaces; fewer when the corpus has fewer terms or chunks. Default 200. */
  dimensions?: number;
  /**
   * At most this many terms in each space, those in the most sampled chunks: the neighbour search is quadratic in
   * it, so this (with `maxChunks`) bounds the build whatever the corpus. Default 24,000.
   */
  vocabulary?: number;
  /** Seed of the randomized SVD: the same seed and corpus give the same model. Default 7. */
  seed?: number;
  /** Statistics of the public content, for IDF; without them, the sample's own document frequencies, scaled up. */
  stats?: Stats;
  onProgress?: (stage: string) => void;
};

/** What a build produced, and what updates added since; kept in the meta table under `term_model`. */
export type BuildInfo = {
  /** Dimensions of the stored LSA term vectors. */
  dimensions: number;
  ppmiDimensions: number;
  /** Chunks the model was built from (the sample). */
  chunks: number;
  /** Terms with an LSA vector; `ppmiTerms` of them also have PPMI neighbours. Folded-in terms are not counted. */
  terms: number;
  ppmiTerms: number;
  seed: number;
  /** When the build read the store. */
  builtAt: number;
  /** Public chunks when built: the sample was drawn from them. */
  publicChunks: number;
  /** A digest of the public channels the build read, so a channel made private or paused since shows. */
  channels: string;
  /** Chunks up to this rowid have been read, by the build or an update; later ones are new content. */
  throughRowid: number;
  /** New public chunks read by `update` since the build, and the terms it folded in from them. */
  updatedChunks: number;
  foldedTerms: number;
  updatedAt: number;
};

export type TermModel = {
  info: BuildInfo;
  /** The soft-matching features of one candidate; cheap when called for many candidates of the same question. */
  features(input: FeatureInput): TermFeatures;
};

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
/** Public content this much larger than at the build (new chunks over the built count) makes a rebuild due. */
const rebuildGrowth = 0.2;

// Every statistic comes from content every caller may read (the store's public chunks): a word of a private or
// paused chunk must not show up in a vocabulary, a weight or a neighbour list.

// ---------------------------------------------------------------------------------------------------------------------
// Keeping the model current

/** Stores with up to this many public chunks get their term model built automatically (under half a minute at the limit). */
export const automaticLimit = 20_000;

/** Whether the model needs a full rebuild: `update` only adds terms, it never re-learns the spaces. */
export type Freshness = {
  /** Why a rebuild is due, or undefined when folding in new content keeps the model good. */
  rebuild: string | undefined;
  /** Public chunks now, as far as the model has counted them (deletions since the build are not subtracted). */
  publicChunks: number;
};

/**
 * Whether a rebuild is due: there is no model, or the public channels changed since the build (content made private
 * or paused must leave the model; content made public joins it), or new public content has grown past a fifth of
 * what the build read. Cheap: it counts only chunks newer than the model.
 */
export async function freshness(store: Store): Promise<Freshness> {
  const info = await storedInfo(store);
  const counted = () => store.termModel.publicChunkCount();
  if (!info) return { rebuild: 'there is no term model', publicChunks: await counted() };
  if (!incremental(info)) return { rebuild: 'the term model was built by an earlier version', publicChunks: await counted() };
  // By rowid first: the count costs what is new, not what the store holds.
  const pending = await store.termModel.publicChunkCount(info.throughRowid);
  const added = info.updatedChunks + pending;
  const publicChunks = info.publicChunks + added;
  if ((await channelDigest(store, info.builtAt)) !== info.channels) return { rebuild: 'the public channels changed since the build', publicChunks };
  if (added > rebuildGrowth * info.publicChunks) {
    const growth = info.publicChunks > 0 ? `by ${Math.round((100 * added) / info.publicChunks)}%` : `from nothing to ${added} chunks`;
    return { rebuild: `public content grew ${growth} since the build`, publicChunks };
  }
  return { rebuild: undefined, publicChunks };
}

export type RefreshOptions = {
  /** Rebuild when one is due and public content is at most this many chunks; fold in only otherwise. Default 0. */
  rebuildLimit?: number;
  stats?: Stats;
  onProgress?: (stage: string) => void;
};

/** What `refresh` did, and whether a rebuild is still due (too large to do here). */
export type Refresh = { action: 'built' | 'updated' | 'unchanged'; rebuildDue?: string };

/**
 * Brings the model up to date after new content: a full build when one is due and the store is within
 * `rebuildLimit`, else new public chunks folded in (time in proportion to them, not to the corpus).
 */
export async function refresh(store: Store, options: RefreshOptions = {}): Promise<Refresh> {
  const { rebuild, publicChunks } = await freshness(store);
  // No public content, no model to learn: not a rebuild anyone needs to run.
  if (rebuild !== undefined && publicChunks === 0 && !(await storedInfo(store))) return { action: 'unchanged' };
  if (rebuild !== undefined && publicChunks <= (options.rebuildLimit ?? 0)) {
    await build(store, { stats: options.stats, onProgress: options.onProgress });
    return { action: 'built' };
  }
  const updated = await update(store, { stats: options.stats });
  return { action: updated && updated.chunks > 0 ? 'updated' : 'unchanged', ...(rebuild !== undefined && { rebuildDue: rebuild }) };
}

export type UpdateOptions = {
  /** At most this many new public chunks per call, oldest first; the next call reads on. Default 10,000. */
  maxChunks?: number;
  /** As for `build`: IDF of the new terms. */
  stats?: Stats;
};

/** What an update read and added. */
export type UpdateInfo = { chunks: number; terms: number };

/**
 * Folds public chunks added since the model was built (or last updated) into it: each term the model lacks gets an
 * LSA vector, the normalized sum of the vectors of the new chunks holding it (a chunk's vector is its known terms'
 * TF-IDF-weighted sum, as at query time), and its nearest neighbours among all terms. Existing terms, their neighbour
 * lists and the PPMI space stay as built. Undefined when there is no model an update can extend, or when a rebuild
 * or another update landed while this one read.
 */
export async function update(store: Store, options: UpdateOptions = {}): Promise<UpdateInfo | undefined> {
  const maxChunks = options.maxChunks ?? 10_000;
  if (!Number.isInteger(maxChunks) || maxChunks < 1) throw new Error(`maxChunks must be a positive integer, not ${maxChunks}`);
  const raw = await store.termModel.info();
  const info = raw === undefined ? undefined : (JSON.parse(raw) as BuildInfo);
  if (!info || !incremental(info)) return undefined;
  const batch = await readNewChunks(store, { afterRowid: info.throughRowid, maxChunks });
  if (batch.chunks.length === 0 && batch.throughRowid === info.throughRowid) return { chunks: 0, terms: 0 };

  const k = info.dimensions;
  // The stored terms, in one read: their vectors weigh the new chunks, and all of them are neighbour candidates.
  const stored = await store.termModel.terms();
  const storedRow = new Map(stored.map((r) => [r.term, r]));
  const rowOf = new Map<number, { idf: number; lsa: Float32Array } | null>();
  const knownRow = (id: number) => {
    let row = rowOf.get(id);
    if (row === undefined) {
      const r = storedRow.get(batch.ids.terms[id]!);
      row = r ? { idf: r.idf, lsa: floats(r.lsa) } : null;
      rowOf.set(id, row);
    }
    return row;
  };
  // Each new term's vector sums its chunks' vectors, weighted by its (1 + ln tf) there; IDF only scales it.
  const sums = new Map<number, Float64Array>();
  const df = new Map<number, number>();
  const tf = new Map<number, number>();
  for (const ids of k > 0 ? batch.chunks : []) {
    tf.clear();
    for (const id of ids) tf.set(id, (tf.get(id) ?? 0) + 1);
    const v = new Float64Array(k);
    for (const [id, f] of tf) {
      const row = knownRow(id);
      if (!row) continue;
      const w = (1 + Math.log(f)) * row.idf;
      for (let c = 0; c < k; c++) v[c]! += w * row.lsa[c]!;
    }
    if (!v.some((x) => x !== 0)) continue;
    unit(v);
    for (const [id, f] of tf) {
      if (knownRow(id) || stopStems.has(batch.ids.terms[id]!)) continue;
      let sum = sums.get(id);
      if (!sum) sums.set(id, (sum = new Float64Array(k)));
      const w = 1 + Math.log(f);
      for (let c = 0; c < k; c++) sum[c]! += w * v[c]!;
      df.set(id, (df.get(id) ?? 0) + 1);
    }
  }
  // In two chunks at least, as in the build: a word met once is as often a typo as a new name.
  const folded = [...sums.keys()].filter((id) => df.get(id)! >= 2).sort((a, b) => a - b);
  for (const id of folded) unit(sums.get(id)!);
  const publicChunks = info.publicChunks + info.updatedChunks + batch.chunks.length;
  const idfOf = (id: number) => options.stats?.idf(batch.ids.terms[id]!) ?? idf(publicChunks, df.get(id)!);

  let lists: string[] = [];
  if (folded.length > 0) {
    // Neighbours among every term: those of the model, then the new ones.
    const names = [...stored.map((r) => r.term), ...folded.map((id) => batch.ids.terms[id]!)];
    const vectors = new Float32Array(names.length * k);
    stored.forEach((r, i) => vectors.set(floats(r.lsa), i * k));
    folded.forEach((id, i) => vectors.set(sums.get(id)!, (stored.length + i) * k));
    const top = new TopLists(names.length);
    nearestTo(top, { vectors, dims: k, count: names.length, from: stored.length });
    lists = folded.map((_, i) => top.json(stored.length + i, (j) => names[j]!));
  }

  const now = Date.now();
  const rows: TermRow[] = folded.map((id, i) => ({ term: batch.ids.terms[id]!, idf: idfOf(id), lsa: bytes(new Float32Array(sums.get(id)!)), lsaNeighbours: lists[i]!, ppmiNeighbours: '[]' }));
  // A rebuild (or another update) that landed meanwhile made this batch stale: its result is left alone.
  const added = await store.termModel.fold({
    rows,
    expected: raw!,
    at: now,
    next: (n) => JSON.stringify({ ...info, throughRowid: batch.throughRowid, updatedChunks: info.updatedChunks + batch.chunks.length, foldedTerms: info.foldedTerms + n, updatedAt: now } satisfies BuildInfo),
  });
  return added === undefined ? undefined : { chunks: batch.chunks.length, terms: added };
}

async function storedInfo(store: Store): Promise<BuildInfo | undefined> {
  const raw = await store.termModel.info();
  return raw === undefined ? undefined : (JSON.parse(raw) as BuildInfo);
}

/** A model built before updates existed lacks what an update needs (where it read up to, which channels). */
function incremental(info: BuildInfo): boolean {
  return typeof info.throughRowid === 'number' && typeof info.channels === 'string';
}

/** The public channels that existed at `asOf`, as a digest: it moves when one of them is made private or paused. */
async function channelDigest(store: Store, asOf: number): Promise<string> {
  const ids = await store.termModel.publicChannelsAsOf(asOf);
  return createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 32);
}

/** Public chunks after a rowid, oldest first, as term ids (title and text: a bag, as a chunk is at query time). */
async function readNewChunks(store: Store, options: { afterRowid: number; maxChunks: number }): Promise<{ ids: TermIds; chunks: number[][]; throughRowid: number }> {
  // The newest rowid first: a chunk written after it is read by the next update, never skipped.
  const newest = await store.termModel.lastChunkRowid();
  const rows = (await store.termModel.publicChunksAfter(options.afterRowid, options.maxChunks)).filter((r) => r.rowid <= newest);
  // A full batch stops at its last chunk; otherwise everything up to the newest chunk (public or not) has been seen.
  const last = rows.length === options.maxChunks ? rows.at(-1)!.rowid : newest;
  const ids = new TermIds();
  const chunks = rows.map((row) => {
    const out: number[] = [];
    ids.add(row.title, out);
    ids.add(row.text, out);
    return out;
  });
  return { ids, chunks, throughRowid: Math.max(options.afterRowid, last) };
}

// ---------------------------------------------------------------------------------------------------------------------
// Build

/** The sampled corpus as term ids: per chunk, its title and then each sentence of its text, as segments. */
type Corpus = { terms: string[]; df: Int32Array; chunks: { ids: Int32Array; ends: Int32Array }[]; publicChunks: number; throughRowid: number; channels: string };

/** A sparse matrix by columns: column j has rows `idx[ptr[j]..ptr[j+1])` with values `val[...]`. */
type Sparse = { rows: number; cols: number; ptr: Int32Array; idx: Int32Array; val: Float64Array };

/** A space of unit term vectors (`dims` per term, row-major) with each term's nearest other terms. */
type Space = { terms: number[]; dims: number; vectors: Float32Array; neighbours: TopLists };

/**
 * Builds the term model from the public chunks and stores it, replacing any earlier one, in one transaction.
 * Synchronous and CPU-bound, but bounded: at most `maxChunks` chunks are read and `vocabulary` terms compared, so a
 * million-chunk store takes about as long as one of fifty thousand.
 */
export async function build(store: Store, options: BuildOptions = {}): Promise<BuildInfo> {
  const maxChunks = options.maxChunks ?? 50_000;
  const dimensions = options.dimensions ?? 200;
  const vocabulary = options.vocabulary ?? 24_000;
  const seed = options.seed ?? 7;
  if (!Number.isInteger(maxChunks) || maxChunks < 1) throw new Error(`maxChunks must be a positive integer, not ${maxChunks}`);
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 1000) throw new Error(`dimensions must be an integer in 1..1000, not ${dimensions}`);
  if (!Number.isInteger(vocabulary) || vocabulary < 1) throw new Error(`vocabulary must be a positive integer, not ${vocabulary}`);
  if (!Number.isInteger(seed)) throw new Error(`seed must be an integer, not ${seed}`);
  const progress = options.onProgress ?? (() => undefined);

  progress('reading chunks');
  const builtAt = Date.now();
  const corpus = await readCorpus(store, { maxChunks, asOf: builtAt });
  progress('lsa');
  const idfOf = (id: number) => options.stats?.idf(corpus.terms[id]!) ?? idf(corpus.publicChunks, Math.round((corpus.df[id]! * corpus.publicChunks) / corpus.chunks.length));
  const lsaTerm = { minDf: 2, keep: (t: string) => !stopStems.has(t) };
  const lsa = lsaSpace(corpus, {
    all: mostFrequent(corpus, { ...lsaTerm, limit: Infinity }),
    terms: mostFrequent(corpus, { ...lsaTerm, limit: vocabulary }),
    idf: idfOf,
    dimensions,
    seed,
  });
  progress('ppmi');
  const ppmiTerm = { minDf: 3, keep: (t: string) => !stopStems.has(t) && !/^\d+$/.test(t) };
  const ppmi = ppmiSpace(corpus, {
    all: mostFrequent(corpus, { ...ppmiTerm, limit: Infinity }),
    terms: mostFrequent(corpus, { ...ppmiTerm, limit: vocabulary }),
    dimensions,
    seed,
  });
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
    builtAt,
    publicChunks: corpus.publicChunks,
    channels: corpus.channels,
    throughRowid: corpus.throughRowid,
    updatedChunks: 0,
    foldedTerms: 0,
    updatedAt: builtAt,
  };
  const nameOf = (space: Space) => (row: number) => corpus.terms[space.terms[row]!]!;
  const ppmiRow = new Map(ppmi.terms.map((id, row) => [id, row]));
  const rows: TermRow[] = lsa.terms.map((id, row) => {
    const p = ppmiRow.get(id);
    return {
      term: corpus.terms[id]!,
      idf: idfOf(id),
      lsa: bytes(lsa.vectors.subarray(row * lsa.dims, (row + 1) * lsa.dims)),
      lsaNeighbours: lsa.neighbours.json(row, nameOf(lsa)),
      ppmiNeighbours: p === undefined ? '[]' : ppmi.neighbours.json(p, nameOf(ppmi)),
    };
  });
  await store.termModel.replace(rows, JSON.stringify(info));
  return info;
}

/** BM25's IDF, kept positive, as `Stats.idf` computes it. */
function idf(chunkCount: number, df: number): number {
  const d = Math.min(df, chunkCount);
  return Math.log(1 + (chunkCount - d + 0.5) / (d + 0.5));
}

/**
 * Term ids of texts, stemmed as `Text.stemsOf` stems them; each distinct token is stemmed once. ASCII text (most of
 * it) is split by a character loop that gives the same tokens as `Text.tokens`, several times faster than its regex.
 */
class TermIds {
  readonly terms: string[] = [];
  private readonly byStem = new Map<string, number>();
  private readonly byToken = new Map<string, number>();

  /** Appends the term ids of `text`'s tokens, in order, to `out`. */
  add(text: string, out: number[]): void {
    if (/[^\p{ASCII}]/u.test(text)) {
      for (const token of Text.tokens(text)) out.push(this.idOf(token));
      return;
    }
    const lower = text.toLowerCase();
    let start = -1;
    for (let i = 0; i <= lower.length; i++) {
      const c = i < lower.length ? lower.charCodeAt(i) : 32;
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
        if (start < 0) start = i;
      } else if (start >= 0) {
        out.push(this.idOf(lower.slice(start, i)));
        start = -1;
      }
    }
  }

  private idOf(token: string): number {
    let id = this.byToken.get(token);
    if (id === undefined) {
      const stem = Text.stem(token);
      id = this.byStem.get(stem);
      if (id === undefined) {
        id = this.terms.length;
        this.terms.push(stem);
        this.byStem.set(stem, id);
      }
      this.byToken.set(token, id);
    }
    return id;
  }
}

async function readCorpus(store: Store, options: { maxChunks: number; asOf: number }): Promise<Corpus> {
  // The newest rowid first: whatever is written while the sample is read is after it, and read by the next update.
  const throughRowid = await store.termModel.lastChunkRowid();
  const rowids = Float64Array.from((await store.termModel.publicChunkRowids()).filter((r) => r <= throughRowid)).sort();
  const { maxChunks } = options;
  const picked = rowids.length <= maxChunks ? rowids : Float64Array.from({ length: maxChunks }, (_, i) => rowids[Math.floor((i * rowids.length) / maxChunks)]!);
  const texts = new Map<number, { text: string; title: string }>();
  for (let at = 0; at < picked.length; at += 1000) {
    for (const [rowid, row] of await store.termModel.chunkTexts([...picked.subarray(at, at + 1000)])) texts.set(rowid, row);
  }
  const channels = await channelDigest(store, options.asOf);
  const ids = new TermIds();
  const df: number[] = [];
  const lastChunk: number[] = [];
  const chunks: Corpus['chunks'] = [];
  const tokens: number[] = [];
  const ends: number[] = [];
  for (const rowid of picked) {
    const row = texts.get(rowid);
    if (!row) continue;
    tokens.length = 0;
    ends.length = 0;
    ids.add(row.title, tokens);
    ends.push(tokens.length);
    for (const sentence of sentenceSegmenter.segment(row.text)) {
      ids.add(sentence.segment, tokens);
      ends.push(tokens.length);
    }
    for (const id of tokens) {
      while (df.length <= id) {
        df.push(0);
        lastChunk.push(-1);
      }
      if (lastChunk[id] !== chunks.length) {
        lastChunk[id] = chunks.length;
        df[id]! += 1;
      }
    }
    chunks.push({ ids: Int32Array.from(tokens), ends: Int32Array.from(ends) });
  }
  return { terms: ids.terms, df: Int32Array.from(df), chunks, publicChunks: rowids.length, throughRowid, channels };
}

/**
 * The ids of the terms in at least `minDf` sampled chunks that `keep` accepts, at most `limit` of them (those in the
 * most chunks; the first seen on a tie), in first-seen order.
 */
function mostFrequent(corpus: Corpus, options: { minDf: number; limit: number; keep: (term: string) => boolean }): number[] {
  const ids = corpus.terms.flatMap((t, id) => (corpus.df[id]! >= options.minDf && options.keep(t) ? [id] : []));
  if (ids.length <= options.limit) return ids;
  return ids
    .sort((a, b) => corpus.df[b]! - corpus.df[a]! || a - b)
    .slice(0, options.limit)
    .sort((a, b) => a - b);
}

/**
 * LSA: chunks as unit (1 + ln tf)·idf columns over the vocabulary; term vectors are unit rows of U. The matrix has a
 * row for each of `terms`, the most frequent of `all`; a chunk's column is normalized over all of them, so capping
 * the vocabulary leaves every value it keeps as it was.
 */
function lsaSpace(corpus: Corpus, options: { all: number[]; terms: number[]; idf: (id: number) => number; dimensions: number; seed: number }): Space {
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
  const matrix: Sparse = { rows: options.terms.length, cols: corpus.chunks.length, ptr: Int32Array.from(ptr), idx: Int32Array.from(idx), val: Float64Array.from(val) };
  const { U, sigma } = randomizedSvd(matrix, options);
  return unitSpace(options.terms, U, sigma.length);
}

/**
 * PPMI-SVD: co-occurrence of the terms of `all` within ±5 positions inside a sentence (the title is one sentence),
 * PPMI with context-distribution smoothing 0.75, term vectors U·√S. As in the prototype the window counts only those
 * terms, and column a holds PPMI(a, b) at row b, so the rows of U are the context side. Rows are kept for `terms`
 * only, the most frequent of `all`: each keeps every context it has, so capping the vocabulary changes no PMI value.
 */
function ppmiSpace(corpus: Corpus, options: { all: number[]; terms: number[]; dimensions: number; seed: number }): Space {
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
  const { U, sigma } = randomizedSvd({ rows: v, cols: w, ptr, idx, val }, options);
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
// The dense loops take four rows (or nonzeros) per pass: JavaScript has no SIMD, and this halves loads and stores.

/** The top left singular vectors (rows × k, row-major) and values; k drops below `dimensions` when the rank does. */
function randomizedSvd(A: Sparse, options: { dimensions: number; seed: number }): { U: Float64Array; sigma: Float64Array } {
  const l = Math.min(options.dimensions + oversample, A.rows, A.cols);
  if (l === 0) return { U: new Float64Array(0), sigma: new Float64Array(0) };
  const At = transpose(A);
  const random = mulberry32(options.seed);
  const omega = new Float64Array(A.cols * l);
  for (let i = 0; i < omega.length; i++) omega[i] = gaussian(random);
  // The power iterations only need a well-conditioned basis (one Cholesky pass); the final Q must be orthonormal (two).
  // Z = AᵀQ is not orthonormalized: A·Z spans the same space either way, and with Q orthonormal its conditioning
  // (σ₁/σₗ squared) is far within what CholeskyQR takes, so that pass over the larger side (the chunks) is saved.
  let Q = transposedTimes(At, omega, l);
  orthonormalize(Q, { rows: A.rows, l, passes: 1 });
  for (let i = 0; i < powerIterations; i++) {
    Q = transposedTimes(At, transposedTimes(A, Q, l), l);
    orthonormalize(Q, { rows: A.rows, l, passes: i === powerIterations - 1 ? 2 : 1 });
  }
  // B = QᵀA is l × cols; the eigenvectors of BBᵀ rotate Q into the left singular vectors.
  const { values, vectors } = eigen(gram(transposedTimes(A, Q, l), A.cols, l), l);
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
    const qo = r * l;
    let j = 0;
    for (; j + 3 < l; j += 4) {
      const q0 = Q[qo + j]!;
      const q1 = Q[qo + j + 1]!;
      const q2 = Q[qo + j + 2]!;
      const q3 = Q[qo + j + 3]!;
      const e0 = j * k;
      const e1 = e0 + k;
      const e2 = e1 + k;
      const e3 = e2 + k;
      for (let c = 0; c < k; c++) U[uo + c]! += q0 * E[e0 + c]! + q1 * E[e1 + c]! + q2 * E[e2 + c]! + q3 * E[e3 + c]!;
    }
    for (; j < l; j++) {
      const q = Q[qo + j]!;
      const eo = j * k;
      for (let c = 0; c < k; c++) U[uo + c]! += q * E[eo + c]!;
    }
  }
  return { U, sigma: Float64Array.from(order, (e) => Math.sqrt(values[e]!)) };
}

/** The same matrix by rows (its transpose by columns), so both products gather instead of scatter. */
function transpose(A: Sparse): Sparse {
  const ptr = new Int32Array(A.rows + 1);
  for (let p = 0; p < A.ptr[A.cols]!; p++) ptr[A.idx[p]! + 1]! += 1;
  for (let r = 0; r < A.rows; r++) ptr[r + 1]! += ptr[r]!;
  const fill = ptr.slice(0, A.rows);
  const idx = new Int32Array(ptr[A.rows]!);
  const val = new Float64Array(ptr[A.rows]!);
  for (let j = 0; j < A.cols; j++) {
    for (let p = A.ptr[j]!; p < A.ptr[j + 1]!; p++) {
      const at = fill[A.idx[p]!]!++;
      idx[at] = j;
      val[at] = A.val[p]!;
    }
  }
  return { rows: A.cols, cols: A.rows, ptr, idx, val };
}

/** Aᵀ·X for X dense (rows × l, row-major): cols × l. With `transpose(A)` for A, it is A·X. */
function transposedTimes(A: Sparse, X: Float64Array, l: number): Float64Array {
  const Y = new Float64Array(A.cols * l);
  for (let j = 0; j < A.cols; j++) {
    const yo = j * l;
    const end = A.ptr[j + 1]!;
    let p = A.ptr[j]!;
    for (; p + 3 < end; p += 4) {
      const x0 = A.idx[p]! * l;
      const x1 = A.idx[p + 1]! * l;
      const x2 = A.idx[p + 2]! * l;
      const x3 = A.idx[p + 3]! * l;
      const v0 = A.val[p]!;
      const v1 = A.val[p + 1]!;
      const v2 = A.val[p + 2]!;
      const v3 = A.val[p + 3]!;
      for (let c = 0; c < l; c++) Y[yo + c]! += v0 * X[x0 + c]! + v1 * X[x1 + c]! + v2 * X[x2 + c]! + v3 * X[x3 + c]!;
    }
    for (; p < end; p++) {
      const xo = A.idx[p]! * l;
      const v = A.val[p]!;
      for (let c = 0; c < l; c++) Y[yo + c]! += v * X[xo + c]!;
    }
  }
  return Y;
}

/** MᵀM (l × l) for M rows × l, row-major. */
function gram(M: Float64Array, rows: number, l: number): Float64Array {
  const G = new Float64Array(l * l);
  let r = 0;
  for (; r + 3 < rows; r += 4) {
    const o0 = r * l;
    const o1 = o0 + l;
    const o2 = o1 + l;
    const o3 = o2 + l;
    for (let i = 0; i < l; i++) {
      const a0 = M[o0 + i]!;
      const a1 = M[o1 + i]!;
      const a2 = M[o2 + i]!;
      const a3 = M[o3 + i]!;
      const gi = i * l;
      for (let j = i; j < l; j++) G[gi + j]! += a0 * M[o0 + j]! + a1 * M[o1 + j]! + a2 * M[o2 + j]! + a3 * M[o3 + j]!;
    }
  }
  for (; r < rows; r++) {
    const o = r * l;
    for (let i = 0; i < l; i++) {
      const a = M[o + i]!;
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
    // R⁻¹ by back substitution, restricted to the independent columns (a dependent one gets a zero row and column).
    const Rinv = new Float64Array(l * l);
    for (let j = 0; j < l; j++) {
      if (R[j * l + j] === 0) continue;
      Rinv[j * l + j] = 1 / R[j * l + j]!;
      for (let i = j - 1; i >= 0; i--) {
        if (R[i * l + i] === 0) continue;
        let s = 0;
        for (let m = i + 1; m <= j; m++) s += R[i * l + m]! * Rinv[m * l + j]!;
        Rinv[i * l + j] = -s / R[i * l + i]!;
      }
    }
    // M ← M R⁻¹, a row at a time, four entries of the row per pass over the (upper triangular) rows of R⁻¹.
    const row = new Float64Array(l);
    for (let r = 0; r < rows; r++) {
      const o = r * l;
      for (let c = 0; c < l; c++) row[c] = M[o + c]!;
      M.fill(0, o, o + l);
      let i = 0;
      for (; i + 3 < l; i += 4) {
        const m0 = row[i]!;
        const m1 = row[i + 1]!;
        const m2 = row[i + 2]!;
        const m3 = row[i + 3]!;
        const r0 = i * l;
        const r1 = r0 + l;
        const r2 = r1 + l;
        const r3 = r2 + l;
        for (let j = i; j < l; j++) M[o + j]! += m0 * Rinv[r0 + j]! + m1 * Rinv[r1 + j]! + m2 * Rinv[r2 + j]! + m3 * Rinv[r3 + j]!;
      }
      for (; i < l; i++) {
        const m = row[i]!;
        const ri = i * l;
        for (let j = i; j < l; j++) M[o + j]! += m * Rinv[ri + j]!;
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


// ---------------------------------------------------------------------------------------------------------------------
// Nearest neighbours

/** Each row's nearest other rows, best first (cosine above `minSimilarity`; -1 pads a short list). */
class TopLists {
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
function nearest(space: Space): void {
  const { neighbours: top } = space;
  const { floor } = top;
  const n = space.terms.length;
  if (space.dims === 0) return;
  const dots = blockDots(space.vectors, { rows: n, dims: space.dims });
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
function nearestTo(top: TopLists, space: { vectors: Float32Array; dims: number; count: number; from: number }): void {
  const { count, from } = space;
  if (space.dims === 0) return;
  const dots = blockDots(space.vectors, { rows: count, dims: space.dims });
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

/** What this file uses of the WebAssembly API, which TypeScript declares only with the DOM library (not used here). */
type Wasm = {
  Memory: new (descriptor: { initial: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
};
type WasmMemory = { buffer: ArrayBuffer };
const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

/**
 * The dot products of a block of rows (at most 64) with another (at most 256), computed by a small WebAssembly
 * module with 128-bit SIMD: about six times the throughput of a JavaScript loop, which V8 does not vectorize. The
 * rows are copied into the module's memory, each padded to a multiple of four floats, with zero rows to a multiple of
 * four. Results are row-major, `stride` floats per row of the first block.
 */
function blockDots(vectors: Float32Array, shape: { rows: number; dims: number }): (i0: number, ni: number, j0: number, nj: number) => { values: Float32Array; stride: number } {
  const width = Math.ceil(shape.dims / 4) * 4;
  const rows = Math.ceil(shape.rows / 4) * 4 + 256;
  const outAt = rows * width * 4;
  const memory = new wasm.Memory({ initial: Math.ceil((outAt + 64 * 256 * 4) / 65_536) });
  const padded = new Float32Array(memory.buffer, 0, rows * width);
  for (let r = 0; r < shape.rows; r++) padded.set(vectors.subarray(r * shape.dims, (r + 1) * shape.dims), r * width);
  const block = dotModule(memory);
  const out = new Float32Array(memory.buffer, outAt, 64 * 256);
  return (i0, ni, j0, nj) => {
    const stride = Math.ceil(nj / 4) * 4;
    block(i0 * width * 4, ni, j0 * width * 4, stride, width * 4, outAt);
    return { values: out, stride };
  };
}

/**
 * `block(a, na, b, nb, rowBytes, out)`: out[i·nb + j] = a_i · b_j for i < na, j < nb (nb a multiple of 4), where a_i
 * is the row of `rowBytes` bytes (a multiple of 16) at byte a + i·rowBytes. Each pass of the inner loop loads four
 * floats of a_i once and multiplies them into four rows of b. In the text format:
 *
 *   (func (param $a $na $b $nb $kb $out i32) (local $i $j $pa $pb $end $o $kb2 $kb3 i32) (local $s0 $s1 $s2 $s3 $x v128)
 *     ($kb2, $kb3) := 2·$kb, 3·$kb;  $i := 0
 *     (loop  $j := 0
 *       (loop  $pa := $a + $i·$kb;  $end := $pa + $kb;  $pb := $b + $j·$kb;  $s0..$s3 := 0
 *         (loop  $x := v128.load $pa;  $sN := f32x4.add $sN (f32x4.mul $x (v128.load $pb + N·$kb)) for N in 0..3
 *                $pb += 16;  $pa += 16;  (br_if 0 (i32.lt_u $pa $end)))
 *         f32.store $out + 4·($i·$nb + $j) + 4N (the sum of the lanes of $sN) for N in 0..3
 *         $j += 4;  (br_if 0 (i32.lt_u $j $nb)))
 *       $i += 1;  (br_if 0 (i32.lt_u $i $na))))
 */
function dotModule(memory: WasmMemory): (a: number, na: number, b: number, nb: number, rowBytes: number, out: number) => void {
  const uleb = (n: number): number[] => (n < 0x80 ? [n] : [(n & 0x7f) | 0x80, ...uleb(n >>> 7)]);
  const vector = (bytes: number[]) => [...uleb(bytes.length), ...bytes];
  const name = (s: string) => vector([...s].map((c) => c.charCodeAt(0)));
  const local = (op: number) => (index: number) => [op, index];
  const [get, set, tee] = [local(0x20), local(0x21), local(0x22)];
  const i32 = (value: number) => [0x41, value]; // i32.const, for values below 64
  const [add, mul, shl, lessThan, f32Add, brIf] = [0x6a, 0x6c, 0x74, 0x49, 0x92, 0x0d];
  const simd = (op: number) => [0xfd, ...uleb(op)];
  const load = [...simd(0x00), 4, 0]; // v128.load, 16-byte alignment hint, offset 0
  const zero = [...simd(0x0c), ...new Array<number>(16).fill(0)]; // v128.const 0
  const [f32x4Add, f32x4Mul] = [simd(0xe4), simd(0xe6)];
  const lane = (l: number) => [...simd(0x1f), l]; // f32x4.extract_lane
  const loop = (...body: number[]) => [0x03, 0x40, ...body, 0x0b];
  const [a, na, b, nb, kb, out, i, j, pa, pb, end, o, kb2, kb3, x] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 18];
  const sums = [14, 15, 16, 17];
  const rowOffset = [[], [...get(kb), add], [...get(kb2), add], [...get(kb3), add]];
  const laneSum = (s: number) => [...get(s), ...lane(0), ...[1, 2, 3].flatMap((l) => [...get(s), ...lane(l), f32Add])];
  const code = [
    ...[2, 8, 0x7f, 5, 0x7b], // locals: 8 i32, then 5 v128
    ...get(kb), ...get(kb), add, ...set(kb2), ...get(kb2), ...get(kb), add, ...set(kb3),
    ...i32(0), ...set(i),
    ...loop(
      ...i32(0), ...set(j),
      ...loop(
        ...get(a), ...get(i), ...get(kb), mul, add, ...tee(pa), ...get(kb), add, ...set(end),
        ...get(b), ...get(j), ...get(kb), mul, add, ...set(pb),
        ...sums.flatMap((s) => [...zero, ...set(s)]),
        ...loop(
          ...get(pa), ...load, ...set(x),
          ...sums.flatMap((s, n) => [...get(s), ...get(x), ...get(pb), ...rowOffset[n]!, ...load, ...f32x4Mul, ...f32x4Add, ...set(s)]),
          ...get(pb), ...i32(16), add, ...set(pb),
          ...get(pa), ...i32(16), add, ...tee(pa), ...get(end), lessThan, brIf, 0,
        ),
        ...get(out), ...get(i), ...get(nb), mul, ...get(j), add, ...i32(2), shl, add, ...set(o),
        ...sums.flatMap((s, n) => [...get(o), ...laneSum(s), 0x38, 2, 4 * n]), // f32.store, 4-byte alignment, offset 4n
        ...get(j), ...i32(4), add, ...tee(j), ...get(nb), lessThan, brIf, 0,
      ),
      ...get(i), ...i32(1), add, ...tee(i), ...get(na), lessThan, brIf, 0,
    ),
    0x0b,
  ];
  const section = (id: number, bytes: number[]) => [id, ...vector(bytes)];
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
    ...section(1, [1, 0x60, 6, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0]), // type: six i32 parameters, no result
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 0x01]), // import: memory, at least one page
    ...section(3, [1, 0]), // function 0 has type 0
    ...section(7, [1, ...name('block'), 0x00, 0]), // export function 0 as "block"
    ...section(10, [1, ...vector(code)]),
  ];
  const instance = new wasm.Instance(new wasm.Module(new Uint8Array(bytes)), { env: { memory } });
  return instance.exports.block as (a: number, na: number, b: number, nb: number, rowBytes: number, out: number) => void;
}

/** A stored vector, copied out of SQLite's buffer (which need not be aligned for a Float32Array). */
function floats(blob: Buffer): Float32Array {
  return new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));
}

function bytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
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
export async function load(store: Store): Promise<TermModel | undefined> {
  const raw = await store.termModel.info();
  if (raw === undefined) return undefined;
  const info = JSON.parse(raw) as BuildInfo;
  const k = info.dimensions;
  // Every term in memory, read once: the vocabulary is bounded (24,000 terms and those folded in since), and a
  // question's features look up hundreds of stems.
  const stored = new Map((await store.termModel.terms()).map((r) => [r.term, r]));
  const rows = bounded(rowCacheSize, (term): Row | null => {
    const r = stored.get(term);
    if (!r) return null;
    return { idf: r.idf, lsa: floats(r.lsa), seen: 0, tf: 0 };
  });
  const neighbours = bounded(neighbourCacheSize, (term): Neighbours | null => {
    const r = stored.get(term);
    return r ? { lsa: JSON.parse(r.lsaNeighbours), ppmi: JSON.parse(r.ppmiNeighbours) } : null;
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
