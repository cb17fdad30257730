import type { QueryMode } from '../contract/Query.js';
import type { Store } from '../store/Store.js';
import * as Evidence from './Evidence.js';
import type { LexicalIndex } from './index/LexicalIndex.js';
import type { SearchHit } from './index/SearchIndex.js';
import * as Planner from './Planner.js';
import * as ProfileNames from './ProfileNames.js';
import * as Anchors from './ranking/Anchors.js';
import type { Anchor } from './ranking/Anchors.js';
import * as Features from './ranking/Features.js';
import * as Fusion from './ranking/Fusion.js';
import * as Reranker from './ranking/Reranker.js';
import type { ScopedChannel } from './Scope.js';
import * as Selection from './Selection.js';
import type * as TermModel from './terms/TermModel.js';
import * as Text from './Text.js';
import type { QuestionVectors, VectorSearch } from './vectors/VectorSearch.js';

export type RetrievalOptions = {
  question: string;
  channels: Map<string, ScopedChannel>;
  mode: QueryMode | undefined;
  /** The lexical reranker; with vectors, the fusion's model is used whenever the question has a vector. */
  model?: Reranker.Model;
  vectors?: VectorSearch | undefined;
  /** Soft term matching built from the corpus, when one was built. */
  termModel?: TermModel.TermModel | undefined;
  /** First-stage candidates to rerank. */
  candidates?: number;
  /** The experts (profile ids) a scope of several handles asks the question of: each is heard, as when it names them. */
  experts?: ReadonlySet<string> | undefined;
  /**
   * When the question was asked (`performance.now()`): its statistics and searches answer as of a read of the search
   * log made since then (one `LexicalIndex.prepare` began at the question's start, say). Default: when retrieval begins.
   */
  asOf?: number | undefined;
};

export type Retrieval = {
  mode: QueryMode;
  planned: boolean;
  contextDepth: 'standard' | 'expanded';
  /** Every reranked candidate, best first. */
  ranked: Evidence.Evidence[];
  /** What the mode selected, in the order it is returned (only candidates at or above the floor). */
  selected: Evidence.Evidence[];
  candidateCount: number;
  anchors: Anchor[];
  entities: Anchor[];
  subjects: string[];
  termCount: number;
  /** The question as ranking saw it: key terms and their weights, for diagnostics, claims and answers. */
  question: Features.Question;
  /** What vectors did: undefined when they are off, weigh nothing (unfitted), or the question could not be embedded. */
  vectors: { fitted: boolean; weight: number } | undefined;
  /** The experts (profile ids) the question is asked of, each heard in turn: named in it, or the scope's handles. */
  experts: string[];
  /** `vectors` when similarity should have counted but the question could not be embedded (a failing or skipped embedder). */
  degraded: 'vectors'[];
  /** Seconds in the first stage (statistics, lexical and vector search) and in reranking. */
  timings: { firstStage: number; rerank: number };
};

/**
 * Vector neighbours among the candidates: chunks that share no word with the question can still rank. They take the
 * place of the last lexical candidates, so reranking does the same work with vectors on (candidates past the first 40
 * by BM25 almost never reach the top 10: 50 candidates rank as well as 100 on SciFact).
 */
export const vectorNeighbours = 10;

/**
 * The floor the best candidate must reach for a question to count as answerable. Scores are calibrated probabilities
 * of relevance on SciFact-style judgements (one or two relevant abstracts among many on the same topic), so they run
 * low: 0.025 separates the demo's answerable from its unanswerable questions. See docs/retrieval.md.
 */
export const scoreFloor = 0.025;
/** Once a question is answerable, further chunks down to this score are returned as supporting evidence. */
export const evidenceFloor = 0.01;

const limits: Record<QueryMode, number> = { lookup: 8, summary: 10, trend_brief: 10, claim_extraction: 10, source_inventory: 12, comparison: 10 };

/** Lexical candidates, the last of them giving way to the question's nearest chunks the words did not find. */
function withNeighbours(hits: SearchHit[], neighbours: SearchHit[], limit: number): SearchHit[] {
  if (neighbours.length === 0) return hits;
  const seen = new Set(hits.map((h) => h.rowid));
  const added = neighbours.filter((h) => !seen.has(h.rowid)).map((h) => ({ rowid: h.rowid, score: 0 }));
  return [...hits.slice(0, Math.max(limit - added.length, 0)), ...added];
}

/**
 * The first stage and the features of each candidate, without scoring: what the reranker is fit on. Uses the same
 * search, hydration and features as `retrieve`; with a question vector, the same vector neighbours join the
 * candidates and similarity is the last feature.
 */
export async function candidateFeatures(
  store: Store,
  index: LexicalIndex,
  options: { question: string; channels: Map<string, ScopedChannel>; candidates: number; termModel?: TermModel.TermModel | undefined; vectors?: QuestionVectors | undefined },
): Promise<{ rowid: number; itemId: string; features: number[] }[]> {
  const terms = Text.queryTerms(options.question);
  const channelIds = new Set(options.channels.keys());
  // The statistics read the search log; the search answers as of that read.
  const asOf = performance.now();
  const stats = await index.statistics(channelIds, Text.stemsOf(options.question));
  const question = Features.question(terms, options.question, stats);
  const neighbours = (await options.vectors?.nearest(channelIds, vectorNeighbours)) ?? [];
  const hits = withNeighbours(await index.search({ terms, text: options.question, channelIds, limit: options.candidates, asOf }), neighbours, options.candidates);
  const rows = await Evidence.hydrate(store, hits.map((h) => h.rowid));
  const soft = Features.soft(options.termModel, question);
  const similarity = options.vectors && (await Evidence.similarityFeature(Fusion.unfitted(), options.vectors, hits));
  return hits.flatMap((hit) => {
    const row = rows.get(hit.rowid);
    const c = row && Evidence.analyzed(store, row);
    if (!row || !c) return [];
    const features = Features.extract(question, c, stats, soft?.(c));
    if (similarity) features.push(similarity(hit.rowid));
    return [{ rowid: hit.rowid, itemId: row.itemId, features }];
  });
}

/**
 * Runs retrieval for a question over a scope: first-stage BM25 candidates (and vector neighbours when an embedder is
 * configured), reranked to calibrated scores, then selected by the query mode.
 */
export async function retrieve(store: Store, index: LexicalIndex, options: RetrievalOptions): Promise<Retrieval> {
  // Similarity that weighs nothing changes no score: the question is not even embedded, and ranking is lexical.
  const fusion = await options.vectors?.fusion();
  const weighed = fusion !== undefined && Fusion.weightOf(fusion.model) !== 0;
  // Embedding (a request to an endpoint, as a rule) goes on while the lexical first stage runs.
  const embedding = weighed ? options.vectors!.question(options.question) : undefined;
  // A request leaves when the event loop turns, and the first stage never yields: one turn lets it go now.
  if (embedding) await new Promise((resolve) => setImmediate(resolve));
  const { anchors, entities } = Anchors.find(options.question);
  const experts = ProfileNames.namedExperts(options.channels, anchors, options.experts);
  const channels = experts.profiles.size > 0 ? new Map([...options.channels].filter(([, c]) => experts.profiles.has(c.profile.id))) : options.channels;
  const channelIds = new Set(channels.keys());
  // Statistics over what this scope's readers may read: nothing else moves a score. They read the search log (or one
  // read since the question was asked did), and every search of this question answers as of that read.
  const asOf = options.asOf ?? performance.now();
  const timings = { firstStage: 0, rerank: 0 };
  const timed = async <T>(stage: keyof typeof timings, work: Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work;
    } finally {
      timings[stage] += (performance.now() - started) / 1000;
    }
  };
  const stats = await timed('firstStage', index.statistics(channelIds, Text.stemsOf(options.question), asOf));
  const planned = options.mode === undefined;
  const mode = options.mode ?? Planner.plan(options.question);
  const terms = Text.queryTerms(options.question);
  const question = Features.question(terms, options.question, stats);
  // 50 reranked candidates rank as well as 100 on SciFact (nDCG@10 0.7202 vs 0.7203) at half the cost.
  const candidates = options.candidates ?? 50;
  const lexical = await timed('firstStage', index.search({ terms, text: options.question, channelIds, limit: candidates, asOf }));
  const vectors = await embedding;
  const model = (vectors && fusion?.model) ?? options.model ?? Reranker.defaultModel;
  const neighbours = (await timed('firstStage', Promise.resolve(vectors?.nearest(channelIds, vectorNeighbours)))) ?? [];
  const searchFor = async (subjectTerms: typeof terms, text: string) =>
    withNeighbours(await timed('firstStage', index.search({ terms: subjectTerms, text, channelIds, limit: candidates, asOf })), neighbours, candidates);
  const hits = withNeighbours(lexical, neighbours, candidates);
  let candidateCount = hits.length;
  let ranked = await timed('rerank', Evidence.rerank(store, { hits, question, anchors, experts: experts.stems, stats, channels, model, termModel: options.termModel, vectors }));
  const relevant = (ranked[0]?.score ?? 0) >= scoreFloor ? ranked.filter((e) => e.score >= evidenceFloor) : [];
  const limit = limits[mode];

  let selected: Evidence.Evidence[];
  let subjects: string[] = [];
  switch (mode) {
    case 'lookup':
    case 'claim_extraction':
      // A question asked of several experts hears each of them.
      selected = experts.profiles.size > 0 ? Selection.balanced([...experts.profiles].map((id) => relevant.filter((e) => e.scoped.profile.id === id)), limit) : relevant.slice(0, limit);
      break;
    case 'summary':
      selected = Selection.diversified(relevant, limit, 0.15);
      break;
    case 'trend_brief':
      selected = Selection.acrossTime(relevant, limit);
      break;
    case 'source_inventory': {
      const best = new Map<string, Evidence.Evidence>();
      for (const e of relevant) if (!best.has(e.itemId)) best.set(e.itemId, e);
      selected = [...best.values()].slice(0, limit);
      break;
    }
    case 'comparison': {
      subjects = Planner.subjects(options.question);
      if (subjects.length < 2) {
        selected = Selection.diversified(relevant, limit, 0.15);
        break;
      }
      const shared = terms.filter((t) => !subjects.some((s) => Text.queryTerms(s).some((x) => x.stem === t.stem)));
      const perSubject: Evidence.Evidence[][] = [];
      for (const subject of subjects) {
        const subjectTerms = [...Text.queryTerms(subject), ...shared];
        const subjectText = `${subject} ${shared.map((t) => t.token).join(' ')}`;
        const q = Features.question(subjectTerms, subjectText, stats);
        const subjectHits = await searchFor(subjectTerms, subjectText);
        candidateCount += subjectHits.length;
        perSubject.push(await timed('rerank', Evidence.rerank(store, { hits: subjectHits, question: q, anchors, experts: experts.stems, stats, channels, model, termModel: options.termModel, vectors })));
      }
      // Every subject run is part of this retrieval: the diagnostics see all of them, and the floor applies to all.
      const merged = new Map(ranked.map((e) => [e.chunkId, e]));
      for (const list of perSubject) for (const e of list) if ((merged.get(e.chunkId)?.score ?? -1) < e.score) merged.set(e.chunkId, e);
      ranked = [...merged.values()].sort((a, b) => b.score - a.score || a.rowid - b.rowid);
      selected = (ranked[0]?.score ?? 0) >= scoreFloor ? Selection.balanced(perSubject.map((l) => l.filter((e) => e.score >= evidenceFloor)), limit) : [];
      break;
    }
  }
  const contextDepth = mode === 'lookup' ? 'standard' : 'expanded';
  if (contextDepth === 'expanded') await Selection.expand(store, selected);
  const used = vectors && fusion && { fitted: fusion.fitted, weight: Fusion.weightOf(fusion.model) };
  const degraded: Retrieval['degraded'] = embedding && !vectors ? ['vectors'] : [];
  return { mode, planned, contextDepth, ranked, selected, candidateCount, anchors, entities, subjects, termCount: terms.length, question, vectors: used, experts: [...experts.profiles], degraded, timings };
}
