import type { QueryMode } from '../contract/Query.js';
import type { ChunkRow } from '../store/Chunks.js';
import type { Store } from '../store/Store.js';
import * as Anchors from './Anchors.js';
import type { Anchor } from './Anchors.js';
import * as Features from './Features.js';
import * as Fusion from './Fusion.js';
import type { LexicalIndex } from './LexicalIndex.js';
import * as Planner from './Planner.js';
import * as Reranker from './Reranker.js';
import type { ScopedChannel } from './Scope.js';
import type { Stats } from './Stats.js';
import type * as TermModel from './TermModel.js';
import * as Text from './Text.js';
import type { SearchHit } from './SearchIndex.js';
import type { QuestionVectors, VectorSearch } from './VectorSearch.js';

/** A chunk as stored, with what retrieval reads of its item. */
type Row = ChunkRow;

/** One piece of evidence: a chunk with its item, channel and profile, and its calibrated score. */
export type Evidence = Omit<Row, 'text' | 'tokenCount' | 'cues'> & {
  /** Transcripts: where each cue starts in `chunkText`, as [offset, seconds], in order; null for other content. */
  cues: [number, number][] | null;
  /** The chunk's own text. */
  chunkText: string;
  /** What is returned: the chunk, or the chunk joined with its neighbours in expanded depth. */
  text: string;
  score: number;
  scoped: ScopedChannel;
  stems: string[];
  stemSet: Set<string>;
  /** The stems that name the chunk's profile (its display name's and its slug's), shared by all its chunks. */
  profileStems: ReadonlySet<string>;
};

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
};

export type Retrieval = {
  mode: QueryMode;
  planned: boolean;
  contextDepth: 'standard' | 'expanded';
  /** Every reranked candidate, best first. */
  ranked: Evidence[];
  /** What the mode selected, in the order it is returned (only candidates at or above the floor). */
  selected: Evidence[];
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

/**
 * Chunks as the features see them, per store, by chunk id: an id names its item, position and content fingerprint, so
 * its text never changes under it, and a chunk asked about again is not analyzed again.
 */
const analyses = new WeakMap<Store, { young: Map<string, Features.Candidate>; old: Map<string, Features.Candidate> }>();
const analysisCacheSize = 10_000;

function analyzed(store: Store, row: Row): Features.Candidate {
  let cache = analyses.get(store);
  if (!cache) analyses.set(store, (cache = { young: new Map(), old: new Map() }));
  let candidate = cache.young.get(row.chunkId) ?? cache.old.get(row.chunkId);
  if (!candidate) candidate = Features.analyze(row.title, row.text, row.tokenCount);
  if (cache.young.size >= analysisCacheSize) {
    cache.old = cache.young;
    cache.young = new Map();
  }
  cache.young.set(row.chunkId, candidate);
  return candidate;
}

async function hydrate(store: Store, rowids: number[]): Promise<Map<number, Row>> {
  return new Map((await store.chunks.rows(rowids)).map((r) => [r.rowid, r]));
}

/**
 * The term model's soft-matching features for the candidates of one question. Its pseudo-relevance feedback feature
 * is left out: on SciFact it earned a weight of 0.01 and cost a third of the reranking time.
 */
function softFeatures(
  termModel: TermModel.TermModel | undefined,
  question: Features.Question,
): ((c: Features.Candidate) => TermModel.TermFeatures) | undefined {
  if (!termModel) return undefined;
  return (c) =>
    termModel.features({
      queryStems: question.stems,
      idf: question.idf,
      totalIdf: question.totalIdf,
      chunkStems: [...c.title, ...c.text],
      sentenceStems: c.sentences,
      topChunkStems: [],
    });
}

/** The question without the given stems; unchanged when it has none of them or nothing else. */
function without(question: Features.Question, stems: ReadonlySet<string>): Features.Question {
  const kept = question.stems.filter((s) => !stems.has(s));
  if (kept.length === question.stems.length || kept.length === 0) return question;
  const idf = new Map(kept.map((s) => [s, question.idf.get(s)!]));
  return { stems: kept, sequence: question.sequence.filter((s) => !stems.has(s)), idf, totalIdf: [...idf.values()].reduce((a, b) => a + b, 0) || 1 };
}

/**
 * How the chunks of one profile are scored. The profile's own name is implied by where a chunk comes from, so the
 * question's anchors that name it ("Does Owen still rebalance?") are left out of the question for a chunk that does
 * not say the name: they count neither for nor against it, and still against other profiles' chunks.
 */
function profileView(options: { profile: ScopedChannel['profile']; question: Features.Question; anchors: Anchor[]; experts: ReadonlySet<string>; termModel?: TermModel.TermModel | undefined }) {
  const profileStems: ReadonlySet<string> = stemsOfProfile(options.profile);
  const implied = [...new Set([...options.anchors.filter((a) => Anchors.namesProfile(a, profileStems)).flatMap((a) => a.stems), ...options.experts])];
  const named = without(options.question, new Set(implied));
  const soft = softFeatures(options.termModel, options.question);
  const namedSoft = named === options.question ? soft : softFeatures(options.termModel, named);
  return {
    profileStems,
    /** The question and its soft features for a chunk of this profile. */
    questionFor(c: Features.Candidate) {
      const says = implied.every((s) => c.title.includes(s) || c.text.includes(s));
      return says ? { question: options.question, soft } : { question: named, soft: namedSoft };
    },
  };
}

const stemsOfProfile = (profile: ScopedChannel['profile']): ReadonlySet<string> => new Set([...Text.stemsOf(profile.name), ...Text.stemsOf(profile.slug)]);

/**
 * The profiles in scope a question names, when it names several ("What do Mara and Bex each say..."): the question is
 * asked of each of them, their names are where the content comes from (not words to find), and each is heard.
 */
function namedExperts(channels: Map<string, ScopedChannel>, anchors: Anchor[], given: ReadonlySet<string> = new Set()): { profiles: Set<string>; stems: Set<string> } {
  const profiles = new Map([...channels.values()].map((c) => [c.profile.id, c.profile]));
  const named = [...profiles.values()].filter((p) => given.has(p.id) || anchors.some((a) => Anchors.namesProfile(a, stemsOfProfile(p))));
  if (named.length < 2) return { profiles: new Set(), stems: new Set() };
  const stems = new Set(anchors.filter((a) => named.some((p) => Anchors.namesProfile(a, stemsOfProfile(p)))).flatMap((a) => a.stems));
  return { profiles: new Set(named.map((p) => p.id)), stems };
}

/** Reranks first-stage hits: features, the linear model, calibration. */
async function rerank(
  store: Store,
  options: {
    hits: SearchHit[];
    question: Features.Question;
    /** The question's anchors: those naming a candidate's own profile do not count against it. */
    anchors: Anchor[];
    /** Stems naming the several experts a question is asked of: they count against no chunk. */
    experts?: ReadonlySet<string>;
    stats: Stats;
    channels: Map<string, ScopedChannel>;
    model: Reranker.Model;
    termModel?: TermModel.TermModel | undefined;
    /** The question's vector, when the model has similarity as a feature. */
    vectors?: QuestionVectors | undefined;
  },
): Promise<Evidence[]> {
  const rows = await hydrate(store, options.hits.map((h) => h.rowid));
  const similarity = options.vectors && (await similarityFeature(options.model, options.vectors, options.hits));
  const analyzedRows = new Map([...rows].map(([rowid, row]) => [rowid, analyzed(store, row)]));
  const views = new Map<string, ReturnType<typeof profileView>>();
  const evidence: Evidence[] = [];
  for (const hit of options.hits) {
    const row = rows.get(hit.rowid);
    const scoped = row && options.channels.get(row.channelId);
    if (!row || !scoped) continue;
    const analyzed = analyzedRows.get(hit.rowid)!;
    let view = views.get(scoped.profile.id);
    if (!view) views.set(scoped.profile.id, (view = profileView({ profile: scoped.profile, question: options.question, anchors: options.anchors, experts: options.experts ?? new Set(), termModel: options.termModel })));
    const { question, soft } = view.questionFor(analyzed);
    const x = Features.extract(question, analyzed, options.stats, soft?.(analyzed));
    if (similarity) x.push(similarity(hit.rowid));
    const score = Reranker.score(options.model, x);
    const stems = [...analyzed.title, ...analyzed.text];
    const { text, tokenCount: _tokens, cues, ...stored } = row;
    evidence.push({ ...stored, cues: cues === null ? null : (JSON.parse(cues) as [number, number][]), chunkText: text, text, score, scoped, stems, stemSet: new Set(stems), profileStems: view.profileStems });
  }
  return evidence.sort((a, b) => b.score - a.score || a.rowid - b.rowid);
}

/**
 * The similarity feature of each candidate: its cosine similarity to the question, or for a chunk with no vector the
 * fitted mean, which the standardized model reads as neither for nor against.
 */
async function similarityFeature(model: Reranker.Model, vectors: QuestionVectors, hits: SearchHit[]): Promise<((rowid: number) => number) | undefined> {
  if (model.features.at(-1) !== Fusion.feature) return undefined;
  const known = await vectors.similarities(hits.map((h) => h.rowid));
  const neutral = model.mean.at(-1)!;
  return (rowid) => known.get(rowid) ?? neutral;
}

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
  const rows = await hydrate(store, hits.map((h) => h.rowid));
  const soft = softFeatures(options.termModel, question);
  const similarity = options.vectors && (await similarityFeature(Fusion.unfitted(), options.vectors, hits));
  return hits.flatMap((hit) => {
    const row = rows.get(hit.rowid);
    const c = row && analyzed(store, row);
    if (!row || !c) return [];
    const features = Features.extract(question, c, stats, soft?.(c));
    if (similarity) features.push(similarity(hit.rowid));
    return [{ rowid: hit.rowid, itemId: row.itemId, features }];
  });
}

/** Maximal marginal relevance over items: each further chunk of an already chosen item counts for less. */
function diversified(ranked: Evidence[], limit: number, penalty: number): Evidence[] {
  const chosen: Evidence[] = [];
  const perItem = new Map<string, number>();
  const pool = [...ranked];
  while (chosen.length < limit && pool.length > 0) {
    let best = 0;
    let bestValue = -Infinity;
    pool.forEach((e, i) => {
      const value = e.score - penalty * (perItem.get(e.itemId) ?? 0);
      if (value > bestValue) {
        bestValue = value;
        best = i;
      }
    });
    const [e] = pool.splice(best, 1);
    chosen.push(e!);
    perItem.set(e!.itemId, (perItem.get(e!.itemId) ?? 0) + 1);
  }
  return chosen;
}

/** Evidence spread over time: the best chunk of each year first, then the rest, returned oldest first. */
function acrossTime(ranked: Evidence[], limit: number): Evidence[] {
  const byYear = new Map<string, Evidence[]>();
  for (const e of ranked) {
    const year = e.publishedAt === null ? 'unknown' : String(new Date(e.publishedAt).getUTCFullYear());
    byYear.set(year, [...(byYear.get(year) ?? []), e]);
  }
  const chosen = new Set<Evidence>();
  for (let round = 0; chosen.size < limit && round < limit; round++) {
    for (const list of byYear.values()) if (list[round] && chosen.size < limit) chosen.add(list[round]!);
  }
  return [...chosen].sort((a, b) => (a.publishedAt ?? Infinity) - (b.publishedAt ?? Infinity) || b.score - a.score);
}

/** Balanced evidence for each compared subject: alternate between the subjects' own rankings. */
function balanced(perSubject: Evidence[][], limit: number): Evidence[] {
  const chosen = new Map<string, Evidence>();
  for (let i = 0; chosen.size < limit && perSubject.some((l) => l[i]); i++) {
    for (const list of perSubject) {
      const e = list[i];
      if (e && !chosen.has(e.chunkId) && chosen.size < limit) chosen.set(e.chunkId, e);
    }
  }
  return [...chosen.values()];
}

/** Joins each selected chunk with its neighbours (same item, ordinal ±1) for expanded context. */
async function expand(store: Store, selected: Evidence[]): Promise<void> {
  for (const e of selected) {
    const around = await store.chunks.texts(e.itemId, [e.ordinal - 1, e.ordinal + 1]);
    const before = around.find((n) => n.ordinal === e.ordinal - 1);
    const after = around.find((n) => n.ordinal === e.ordinal + 1);
    e.text = [before?.text, e.chunkText, after?.text].filter((t): t is string => t !== undefined).join('\n\n');
  }
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
  const experts = namedExperts(options.channels, anchors, options.experts);
  const channels = experts.profiles.size > 0 ? new Map([...options.channels].filter(([, c]) => experts.profiles.has(c.profile.id))) : options.channels;
  const channelIds = new Set(channels.keys());
  // Statistics over what this scope's readers may read: nothing else moves a score. They read the search log, and
  // every search of this question answers as of that read.
  const asOf = performance.now();
  const timings = { firstStage: 0, rerank: 0 };
  const timed = async <T>(stage: keyof typeof timings, work: Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work;
    } finally {
      timings[stage] += (performance.now() - started) / 1000;
    }
  };
  const stats = await timed('firstStage', index.statistics(channelIds, Text.stemsOf(options.question)));
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
  let ranked = await timed('rerank', rerank(store, { hits, question, anchors, experts: experts.stems, stats, channels, model, termModel: options.termModel, vectors }));
  const relevant = (ranked[0]?.score ?? 0) >= scoreFloor ? ranked.filter((e) => e.score >= evidenceFloor) : [];
  const limit = limits[mode];

  let selected: Evidence[];
  let subjects: string[] = [];
  switch (mode) {
    case 'lookup':
    case 'claim_extraction':
      // A question asked of several experts hears each of them.
      selected = experts.profiles.size > 0 ? balanced([...experts.profiles].map((id) => relevant.filter((e) => e.scoped.profile.id === id)), limit) : relevant.slice(0, limit);
      break;
    case 'summary':
      selected = diversified(relevant, limit, 0.15);
      break;
    case 'trend_brief':
      selected = acrossTime(relevant, limit);
      break;
    case 'source_inventory': {
      const best = new Map<string, Evidence>();
      for (const e of relevant) if (!best.has(e.itemId)) best.set(e.itemId, e);
      selected = [...best.values()].slice(0, limit);
      break;
    }
    case 'comparison': {
      subjects = Planner.subjects(options.question);
      if (subjects.length < 2) {
        selected = diversified(relevant, limit, 0.15);
        break;
      }
      const shared = terms.filter((t) => !subjects.some((s) => Text.queryTerms(s).some((x) => x.stem === t.stem)));
      const perSubject: Evidence[][] = [];
      for (const subject of subjects) {
        const subjectTerms = [...Text.queryTerms(subject), ...shared];
        const subjectText = `${subject} ${shared.map((t) => t.token).join(' ')}`;
        const q = Features.question(subjectTerms, subjectText, stats);
        const subjectHits = await searchFor(subjectTerms, subjectText);
        candidateCount += subjectHits.length;
        perSubject.push(await timed('rerank', rerank(store, { hits: subjectHits, question: q, anchors, experts: experts.stems, stats, channels, model, termModel: options.termModel, vectors })));
      }
      // Every subject run is part of this retrieval: the diagnostics see all of them, and the floor applies to all.
      const merged = new Map(ranked.map((e) => [e.chunkId, e]));
      for (const list of perSubject) for (const e of list) if ((merged.get(e.chunkId)?.score ?? -1) < e.score) merged.set(e.chunkId, e);
      ranked = [...merged.values()].sort((a, b) => b.score - a.score || a.rowid - b.rowid);
      selected = (ranked[0]?.score ?? 0) >= scoreFloor ? balanced(perSubject.map((l) => l.filter((e) => e.score >= evidenceFloor)), limit) : [];
      break;
    }
  }
  const contextDepth = mode === 'lookup' ? 'standard' : 'expanded';
  if (contextDepth === 'expanded') await expand(store, selected);
  const used = vectors && fusion && { fitted: fusion.fitted, weight: Fusion.weightOf(fusion.model) };
  const degraded: Retrieval['degraded'] = embedding && !vectors ? ['vectors'] : [];
  return { mode, planned, contextDepth, ranked, selected, candidateCount, anchors, entities, subjects, termCount: terms.length, question, vectors: used, experts: [...experts.profiles], degraded, timings };
}
