import * as Fusion from '../retrieval/ranking/Fusion.js';
import * as Reranker from '../retrieval/ranking/Reranker.js';
import * as Retriever from '../retrieval/Retriever.js';
import type { Dataset } from './Beir.js';
import * as Beir from './Beir.js';
import type { EvalStore } from './Evaluate.js';
import * as Fit from './Fit.js';

/** Weights tried for the standardized similarity, in the units of the lexical model's own weights. */
const grid = [0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.25, 1.5, 2, 2.5, 3, 4, 5];

/** What a fit measured: nDCG@10 with similarity at the chosen weight and at 0, on the judged queries and held out. */
export type FusionReport = {
  embedder: string;
  queries: number;
  candidates: number;
  /** The weight stored: 0 when similarity did not improve held-out ranking. */
  weight: number;
  lexical: { ndcg10: number };
  hybrid: { ndcg10: number; crossValidatedNdcg10: number };
  /** What the held-out check found, in a sentence. */
  verdict: string;
};

/** One judged query's candidates: the lexical model's linear score, the similarity, the document, the grade. */
type Candidate = { rowid: number; lexical: number; similarity: number; doc: string };
type Query = { candidates: Candidate[]; qrels: Map<string, number> };

/** nDCG@10 of a query's documents ranked by lexical + weight × standardized similarity (ties to the earlier chunk). */
function ndcgAt(q: Query, weight: number, mean: number, scale: number): number {
  const scored = q.candidates.map((c) => ({ c, s: c.lexical + (weight * (c.similarity - mean)) / scale }));
  scored.sort((a, b) => b.s - a.s || a.c.rowid - b.c.rowid);
  const docs: string[] = [];
  for (const { c } of scored) if (!docs.includes(c.doc)) docs.push(c.doc);
  return Beir.metrics(docs, q.qrels).ndcg10;
}

const average = (queries: Query[], weight: number, mean: number, scale: number) => queries.reduce((s, q) => s + ndcgAt(q, weight, mean, scale), 0) / (queries.length || 1);

/** The grid weight with the best nDCG@10 on these queries; the smaller weight on a tie. */
function best(queries: Query[], mean: number, scale: number): number {
  let chosen = 0;
  let top = average(queries, 0, mean, scale);
  for (const w of grid.slice(1)) {
    const value = average(queries, w, mean, scale);
    if (value > top + 1e-9) [chosen, top] = [w, value];
  }
  return chosen;
}

/**
 * Fits how vector similarity joins the reranker for the store's embedder, on a judged dataset. The lexical model is
 * kept as it is, and one weight for the standardized similarity is chosen on nDCG@10 over the same candidates the
 * service ranks (the lexical first stage and the vector neighbours). Two-fold cross-validation checks the choice on
 * queries it was not chosen on: unless similarity ranks held-out queries better than the words alone, the weight is
 * 0, so a fitted embedder never ranks worse than lexical retrieval on the queries measured.
 */
export async function fit(
  store: EvalStore,
  dataset: Dataset,
  options: { lexical?: Reranker.Model; candidates?: number; queryIds?: string[]; onProgress?: (done: number, total: number) => void } = {},
): Promise<{ model: Reranker.Model; report: FusionReport }> {
  if (!store.vectors) throw new Error('the store was built without an embedder');
  const lexical = options.lexical ?? Reranker.defaultModel;
  const candidates = options.candidates ?? 100;
  const ids = options.queryIds ?? [...dataset.qrels.keys()];
  const index = await store.services.lexicalIndex();
  const queries: Query[] = [];
  for (const [n, qid] of ids.entries()) {
    const question = dataset.queries.get(qid)!;
    const vectors = await store.vectors.search.question(question);
    const rows = await Retriever.candidateFeatures(store.services.store, index, { question, channels: store.channels, candidates, termModel: await store.services.termModel(), vectors });
    queries.push({
      qrels: dataset.qrels.get(qid)!,
      candidates: rows.map((r) => ({ rowid: r.rowid, lexical: Reranker.linear(lexical, r.features), similarity: r.features.at(-1)!, doc: store.docOf.get(r.itemId)! })),
    });
    options.onProgress?.(n + 1, ids.length);
  }
  // Standardized over every candidate, as the model standardizes its other features.
  const all = queries.flatMap((q) => q.candidates.map((c) => c.similarity));
  const mean = all.reduce((a, b) => a + b, 0) / (all.length || 1);
  const scale = Math.sqrt(all.reduce((a, b) => a + (b - mean) ** 2, 0) / (all.length || 1)) || 1;

  const halves = [queries.filter((_, i) => i % 2 === 0), queries.filter((_, i) => i % 2 === 1)] as const;
  const heldOut = [average(halves[1], best(halves[0], mean, scale), mean, scale), average(halves[0], best(halves[1], mean, scale), mean, scale)];
  const crossValidated = (heldOut[0]! * halves[1].length + heldOut[1]! * halves[0].length) / (queries.length || 1);
  const lexicalNdcg = average(queries, 0, mean, scale);
  const chosen = best(queries, mean, scale);
  const earned = chosen > 0 && crossValidated > lexicalNdcg;
  const weight = earned ? chosen : 0;
  const hybridNdcg = average(queries, weight, mean, scale);
  const verdict = earned
    ? `similarity earned weight ${weight}: held-out nDCG@10 ${crossValidated.toFixed(4)} against ${lexicalNdcg.toFixed(4)} from the words alone`
    : chosen === 0
      ? 'no weight of similarity ranked the judged queries better than the words alone: weight 0'
      : `similarity at weight ${chosen} did not hold up on held-out queries (nDCG@10 ${crossValidated.toFixed(4)} against ${lexicalNdcg.toFixed(4)}): weight 0`;
  const report: FusionReport = {
    embedder: store.vectors.search.embedderId,
    queries: queries.length,
    candidates,
    weight,
    lexical: { ndcg10: round(lexicalNdcg) },
    hybrid: { ndcg10: round(hybridNdcg), crossValidatedNdcg10: round(crossValidated) },
    verdict,
  };
  // Scores stay calibrated probabilities: with similarity weighed in, the calibration is fit again on the fused score.
  const fused = Fusion.withSimilarity(lexical, { mean, scale, weight });
  const calibration = weight === 0 ? lexical.calibration : Fit.calibrate(queries.flatMap((q) => q.candidates.map((c) => ({ score: c.lexical + (weight * (c.similarity - mean)) / scale, label: q.qrels.get(c.doc) ?? 0 }))));
  return { model: { ...fused, calibration, fit: { ...report, fitted: true } }, report };
}

const round = (x: number) => Number(x.toFixed(4));
