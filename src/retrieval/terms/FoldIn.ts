import type { Store } from '../../store/Store.js';
import type { TermRow } from '../../store/TermModelRows.js';
import * as Stats from '../index/Stats.js';
import * as BuildInfo from './BuildInfo.js';
import * as Corpus from './Corpus.js';
import * as Neighbours from './Neighbours.js';
import * as TermVectors from './TermVectors.js';

/**
 * Folding new public content into a built model between builds: new terms get vectors and neighbours, nothing built
 * is learnt again.
 */

export type UpdateOptions = {
  /** At most this many new public chunks per call, oldest first; the next call reads on. Default 10,000. */
  maxChunks?: number;
  /** As for `build`: IDF of the new terms. */
  stats?: Stats.Stats;
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
  const info = raw === undefined ? undefined : (JSON.parse(raw) as BuildInfo.BuildInfo);
  if (!info || !BuildInfo.incremental(info)) return undefined;
  const batch = await Corpus.readNew(store, { afterRowid: info.throughRowid, maxChunks });
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
      row = r ? { idf: r.idf, lsa: TermVectors.floats(r.lsa) } : null;
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
    TermVectors.unit(v);
    for (const [id, f] of tf) {
      if (knownRow(id) || Corpus.stopStems.has(batch.ids.terms[id]!)) continue;
      let sum = sums.get(id);
      if (!sum) sums.set(id, (sum = new Float64Array(k)));
      const w = 1 + Math.log(f);
      for (let c = 0; c < k; c++) sum[c]! += w * v[c]!;
      df.set(id, (df.get(id) ?? 0) + 1);
    }
  }
  // In two chunks at least, as in the build: a word met once is as often a typo as a new name.
  const folded = [...sums.keys()].filter((id) => df.get(id)! >= 2).sort((a, b) => a - b);
  for (const id of folded) TermVectors.unit(sums.get(id)!);
  const publicChunks = info.publicChunks + info.updatedChunks + batch.chunks.length;
  const idfOf = (id: number) => options.stats?.idf(batch.ids.terms[id]!) ?? Stats.idf(publicChunks, df.get(id)!);

  let lists: string[] = [];
  if (folded.length > 0) {
    // Neighbours among every term: those of the model, then the new ones.
    const names = [...stored.map((r) => r.term), ...folded.map((id) => batch.ids.terms[id]!)];
    const vectors = new Float32Array(names.length * k);
    stored.forEach((r, i) => vectors.set(TermVectors.floats(r.lsa), i * k));
    folded.forEach((id, i) => vectors.set(sums.get(id)!, (stored.length + i) * k));
    const top = new Neighbours.TopLists(names.length);
    Neighbours.nearestTo(top, { vectors, dims: k, count: names.length, from: stored.length });
    lists = folded.map((_, i) => top.json(stored.length + i, (j) => names[j]!));
  }

  const now = Date.now();
  const rows: TermRow[] = folded.map((id, i) => ({ term: batch.ids.terms[id]!, idf: idfOf(id), lsa: TermVectors.bytes(new Float32Array(sums.get(id)!)), lsaNeighbours: lists[i]!, ppmiNeighbours: '[]' }));
  // A rebuild (or another update) that landed meanwhile made this batch stale: its result is left alone.
  const added = await store.termModel.fold({
    rows,
    expected: raw!,
    at: now,
    next: (n) => JSON.stringify({ ...info, throughRowid: batch.throughRowid, updatedChunks: info.updatedChunks + batch.chunks.length, foldedTerms: info.foldedTerms + n, updatedAt: now } satisfies BuildInfo.BuildInfo),
  });
  return added === undefined ? undefined : { chunks: batch.chunks.length, terms: added };
}
