import type { Store } from '../../store/Store.js';
import type { TermRow } from '../../store/TermModelRows.js';
import * as Stats from '../index/Stats.js';
import type { BuildInfo } from './BuildInfo.js';
import * as Corpus from './Corpus.js';
import * as Neighbours from './Neighbours.js';
import * as Spaces from './Spaces.js';
import * as TermVectors from './TermVectors.js';

/**
 * A full build of the term model: both spaces learnt from an even sample of the public chunks, each term's neighbours
 * found, and the result stored in place of the earlier model.
 */

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
  stats?: Stats.Stats;
  onProgress?: (stage: string) => void;
};

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
  const corpus = await Corpus.read(store, { maxChunks, asOf: builtAt });
  progress('lsa');
  const idfOf = (id: number) => options.stats?.idf(corpus.terms[id]!) ?? Stats.idf(corpus.publicChunks, Math.round((corpus.df[id]! * corpus.publicChunks) / corpus.chunks.length));
  const lsaTerm = { minDf: 2, keep: (t: string) => !Corpus.stopStems.has(t) };
  const lsa = Spaces.lsa(corpus, {
    all: Corpus.mostFrequent(corpus, { ...lsaTerm, limit: Infinity }),
    terms: Corpus.mostFrequent(corpus, { ...lsaTerm, limit: vocabulary }),
    idf: idfOf,
    dimensions,
    seed,
  });
  progress('ppmi');
  const ppmiTerm = { minDf: 3, keep: (t: string) => !Corpus.stopStems.has(t) && !/^\d+$/.test(t) };
  const ppmi = Spaces.ppmi(corpus, {
    all: Corpus.mostFrequent(corpus, { ...ppmiTerm, limit: Infinity }),
    terms: Corpus.mostFrequent(corpus, { ...ppmiTerm, limit: vocabulary }),
    dimensions,
    seed,
  });
  progress('neighbours');
  Neighbours.nearest(lsa.neighbours, { vectors: lsa.vectors, dims: lsa.dims, count: lsa.terms.length });
  Neighbours.nearest(ppmi.neighbours, { vectors: ppmi.vectors, dims: ppmi.dims, count: ppmi.terms.length });

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
  const nameOf = (space: Spaces.Space) => (row: number) => corpus.terms[space.terms[row]!]!;
  const ppmiRow = new Map(ppmi.terms.map((id, row) => [id, row]));
  const rows: TermRow[] = lsa.terms.map((id, row) => {
    const p = ppmiRow.get(id);
    return {
      term: corpus.terms[id]!,
      idf: idfOf(id),
      lsa: TermVectors.bytes(lsa.vectors.subarray(row * lsa.dims, (row + 1) * lsa.dims)),
      lsaNeighbours: lsa.neighbours.json(row, nameOf(lsa)),
      ppmiNeighbours: p === undefined ? '[]' : ppmi.neighbours.json(p, nameOf(ppmi)),
    };
  });
  await store.termModel.replace(rows, JSON.stringify(info));
  return info;
}
