import type { Store } from '../../store/Store.js';
import type { BuildInfo } from './BuildInfo.js';
import * as TermVectors from './TermVectors.js';

/** The model at query time: the soft-matching features of a candidate, from the stored vectors and neighbour lists. */

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

export type TermModel = {
  info: BuildInfo;
  /** The soft-matching features of one candidate; cheap when called for many candidates of the same question. */
  features(input: FeatureInput): TermFeatures;
};

const rowCacheSize = 50_000;
const neighbourCacheSize = 2_000;

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
    return { idf: r.idf, lsa: TermVectors.floats(r.lsa), seen: 0, tf: 0 };
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
    return TermVectors.unit(v);
  };

  const centroidOf = (q: QueryContext, top: string[][]): Float64Array | undefined => {
    if (q.top && q.top.length === top.length && q.top.every((t, i) => t === top[i] || sameStrings(t, top[i]!))) return q.centroid;
    const sum = new Float64Array(k);
    for (const stems of top) {
      const v = vectorOf(stems);
      if (v) for (let c = 0; c < k; c++) sum[c]! += v[c]!;
    }
    q.top = top.map((t) => [...t]);
    q.centroid = sum.some((x) => x !== 0) ? TermVectors.unit(sum) : undefined;
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

function sameStrings(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
