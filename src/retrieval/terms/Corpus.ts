import type { Store } from '../../store/Store.js';
import * as Text from '../Text.js';
import * as BuildInfo from './BuildInfo.js';
import { TermIds } from './TermIds.js';

/**
 * The term model's reading of the store: public chunks as term ids, a sample of them for a build and the new ones for
 * an update, and which terms enter a vocabulary.
 */

// Every statistic comes from content every caller may read (the store's public chunks): a word of a private or
// paused chunk must not show up in a vocabulary, a weight or a neighbour list.

/** The sampled corpus as term ids: per chunk, its title and then each sentence of its text, as segments. */
export type Corpus = { terms: string[]; df: Int32Array; chunks: { ids: Int32Array; ends: Int32Array }[]; publicChunks: number; throughRowid: number; channels: string };

const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });
// Stems as well as words: "was" and "this" stem to "wa" and "thi", which would otherwise enter the vocabulary.
export const stopStems = new Set([...Text.stopwords, ...[...Text.stopwords].map(Text.stem)]);

/** An even sample of at most `maxChunks` public chunks, by rowid, as term ids; `asOf` dates the channel digest. */
export async function read(store: Store, options: { maxChunks: number; asOf: number }): Promise<Corpus> {
  // The newest rowid first: whatever is written while the sample is read is after it, and read by the next update.
  const throughRowid = await store.termModel.lastChunkRowid();
  const rowids = Float64Array.from((await store.termModel.publicChunkRowids()).filter((r) => r <= throughRowid)).sort();
  const { maxChunks } = options;
  const picked = rowids.length <= maxChunks ? rowids : Float64Array.from({ length: maxChunks }, (_, i) => rowids[Math.floor((i * rowids.length) / maxChunks)]!);
  const texts = new Map<number, { text: string; title: string }>();
  for (let at = 0; at < picked.length; at += 1000) {
    for (const [rowid, row] of await store.termModel.chunkTexts([...picked.subarray(at, at + 1000)])) texts.set(rowid, row);
  }
  const channels = await BuildInfo.channelDigest(store, options.asOf);
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
export function mostFrequent(corpus: Corpus, options: { minDf: number; limit: number; keep: (term: string) => boolean }): number[] {
  const ids = corpus.terms.flatMap((t, id) => (corpus.df[id]! >= options.minDf && options.keep(t) ? [id] : []));
  if (ids.length <= options.limit) return ids;
  return ids
    .sort((a, b) => corpus.df[b]! - corpus.df[a]! || a - b)
    .slice(0, options.limit)
    .sort((a, b) => a - b);
}

/** Public chunks after a rowid, oldest first, as term ids (title and text: a bag, as a chunk is at query time). */
export async function readNew(store: Store, options: { afterRowid: number; maxChunks: number }): Promise<{ ids: TermIds; chunks: number[][]; throughRowid: number }> {
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
