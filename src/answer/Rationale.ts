/**
 * Which sentences of the evidence answer the question, and whether any does. Two small logistic models, fit on
 * SciFact train's rationale sentences (`npm run fit:answers`, see docs/retrieval.md): one scores each sentence as the
 * answer rather than background, the other the whole retrieval as answering the question rather than only sharing
 * its topic (its evidence removed). The tool abstains below the answerability threshold, before anyone pays.
 */
import model from './rationale.json' with { type: 'json' };
import type { Question } from '../retrieval/ranking/Features.js';
import type { Evidence } from '../retrieval/Evidence.js';
import type { Retrieval } from '../retrieval/Retriever.js';
import * as Text from '../retrieval/Text.js';
import * as Sentences from './Sentences.js';

/** A logistic model over standardized features. */
export type Logistic = { features: string[]; mean: number[]; scale: number[]; weights: number[]; bias: number };
export type Model = { sentence: Logistic; answerability: Logistic; threshold: number; fit: Record<string, unknown> };

export const defaultModel = model as Model;

export function probability(m: Logistic, x: number[]): number {
  let s = m.bias;
  for (let i = 0; i < m.weights.length; i++) s += (m.weights[i]! * (x[i]! - m.mean[i]!)) / (m.scale[i]! || 1);
  return 1 / (1 + Math.exp(-s));
}

/** One sentence of a chunk, with the probability that it states the answer. */
export type ScoredSentence = { e: Evidence; sentence: string; position: number; probability: number };

export const sentenceFeatures = ['coverage', 'windowCoverage', 'focus', 'bigrams', 'chunkLogit', 'opening', 'position', 'length', 'number', 'resultCue', 'backgroundCue', 'chunkCoverageGap'];
export const answerabilityFeatures = ['topLogit', 'secondLogit', 'bestSentence', 'bestTopSentence', 'topSentenceCoverage', 'topSentenceFocus', 'topWindowCoverage', 'topItemCoverage', 'missingRarest', 'terms'];

/** Wording that reports a finding or a conclusion. */
const resultCue =
  /\b(we (found|find|show|showed|demonstrate|demonstrated|report|observed|identify|identified|conclude)|results? (show|showed|indicate|suggest|demonstrate)|these (data|findings|results)|conclusions?|significantly|(was|were|is|are) associated|increased|decreased|reduced|higher|lower|suggest|indicate)\b/i;
/** Wording that sets up a question rather than answering it: aims, gaps, methods. */
const backgroundCue =
  /\b(remains? (unclear|unknown|poorly)|little is known|is not known|we (sought|aimed|investigated|examined|studied|hypothesi[sz]ed|tested|assessed|evaluated|asked)|to (investigate|determine|examine|assess|evaluate|test whether)|the (aim|objective|purpose|goal)|background|objectives?:|methods?:|here,? we)\b/i;

const logit = (p: number) => {
  const q = Math.min(0.999, Math.max(0.001, p));
  return Math.log(q / (1 - q));
};

function weighted(weights: Map<string, number>, total: number, present: ReadonlySet<string>): number {
  let sum = 0;
  for (const [stem, w] of weights) if (present.has(stem)) sum += w;
  return total > 0 ? sum / total : 0;
}

/**
 * Scores sentences against a question. The question's focus is its terms weighted by how few of the candidates
 * contain them: the words the topic does not already imply (the claim's predicate, not only its nouns).
 */
export function scorer(question: Question, pool: readonly Evidence[], m: Model = defaultModel) {
  const focusWeights = new Map<string, number>();
  for (const [stem, idf] of question.idf) {
    const df = pool.filter((e) => e.stemSet.has(stem)).length;
    focusWeights.set(stem, Math.max(0, idf * Math.log((pool.length + 1) / (df + 0.5))));
  }
  const focusTotal = [...focusWeights.values()].reduce((a, b) => a + b, 0);
  const coverage = (set: ReadonlySet<string>) => weighted(question.idf, question.totalIdf, set);
  const bigrams = (stems: string[]) => {
    const q = question.sequence;
    if (q.length < 2) return 0;
    const pairs = new Set(stems.slice(1).map((s, i) => `${stems[i]} ${s}`));
    let hits = 0;
    for (let i = 0; i + 1 < q.length; i++) if (pairs.has(`${q[i]} ${q[i + 1]}`)) hits += 1;
    return hits / (q.length - 1);
  };
  const memo = new Map<string, ScoredSentence[]>();
  return {
    focusCoverage: (set: ReadonlySet<string>) => weighted(focusWeights, focusTotal, set),
    coverage,
    /** Every sentence of a chunk, in order, with its features and probability. */
    sentences(e: Evidence): (ScoredSentence & { features: number[] })[] {
      const found = memo.get(e.chunkId);
      if (found) return found as (ScoredSentence & { features: number[] })[];
      const sentences = Sentences.split(e.chunkText);
      const stems = sentences.map(Text.stemsOf);
      const sets = stems.map((s) => new Set(s));
      const chunkCoverage = coverage(e.stemSet);
      const scored = sentences.map((sentence, i) => {
        const set = sets[i]!;
        const window = new Set([...set, ...(sets[i - 1] ?? []), ...(sets[i + 1] ?? [])]);
        const own = coverage(set);
        const features = [
          own,
          coverage(window),
          weighted(focusWeights, focusTotal, set),
          bigrams(stems[i]!),
          logit(e.score),
          e.ordinal === 0 && i === 0 ? 1 : 0,
          sentences.length > 1 ? i / (sentences.length - 1) : 0.5,
          Math.log(1 + stems[i]!.length),
          /\d/.test(sentence) ? 1 : 0,
          resultCue.test(sentence) ? 1 : 0,
          backgroundCue.test(sentence) ? 1 : 0,
          chunkCoverage - own,
        ];
        return { e, sentence, position: i, probability: probability(m.sentence, features), features };
      });
      memo.set(e.chunkId, scored);
      return scored;
    },
  };
}

export type Scorer = ReturnType<typeof scorer>;

/** Chunks whose sentences the answerability model reads: the best few, as a caller would read them. */
const readDepth = 4;
/** Candidates whose vocabulary defines what the topic already implies. */
const poolDepth = 30;

/** The answerability model's features for a retrieval: how well its best item and sentences cover the question. */
export function answerabilityInput(run: Pick<Retrieval, 'ranked' | 'question'>, s: Scorer): number[] {
  const items: { itemId: string; score: number }[] = [];
  for (const e of run.ranked) if (!items.some((i) => i.itemId === e.itemId)) items.push({ itemId: e.itemId, score: e.score });
  const read = run.ranked.slice(0, readDepth).flatMap((e) => s.sentences(e));
  const top = read.filter((x) => x.e.itemId === items[0]?.itemId);
  const max = (values: number[]) => Math.max(0, ...values);
  const topItemStems = new Set(run.ranked.filter((e) => e.itemId === items[0]?.itemId).flatMap((e) => [...e.stemSet]));
  const missing = [...run.question.idf].filter(([stem]) => !topItemStems.has(stem)).map(([, w]) => w);
  const rarest = max([...run.question.idf.values()]);
  return [
    logit(items[0]?.score ?? 0),
    logit(items[1]?.score ?? 0),
    max(read.map((x) => x.probability)),
    max(top.map((x) => x.probability)),
    max(top.map((x) => x.features[0]!)),
    max(top.map((x) => x.features[2]!)),
    max(top.map((x) => x.features[1]!)),
    s.coverage(topItemStems),
    rarest > 0 ? max(missing) / rarest : 0,
    Math.log(1 + run.question.idf.size),
  ];
}

export type Assessment = { probability: number; threshold: number; scorer: Scorer };

/**
 * The question as the best item's profile reads it: words naming the expert ("Does Owen still...") are implied by
 * where the content comes from, so they count neither for nor against it, as in ranking; so are the names of every
 * expert a question asked of several names.
 */
function asRead(run: Pick<Retrieval, 'ranked' | 'question'>): Question {
  const top = run.ranked[0];
  if (!top) return run.question;
  // A question asked of several experts ("What do Mara and Nadia say...") names each of them the same way.
  const asked = new Set(run.question.stems);
  const named = new Map(run.ranked.map((e) => [e.scoped.profile.id, e.profileStems]));
  const experts = [...named.values()].filter((stems) => [...stems].some((s) => asked.has(s)));
  const names = experts.length > 1 ? new Set(experts.flatMap((stems) => [...stems])) : top.profileStems;
  const implied = (stem: string) => names.has(stem) && !top.stemSet.has(stem);
  const stems = run.question.stems.filter((s) => !implied(s));
  if (stems.length === run.question.stems.length || stems.length === 0) return run.question;
  const idf = new Map(stems.map((s) => [s, run.question.idf.get(s)!]));
  return { stems, sequence: run.question.sequence.filter((s) => !implied(s)), idf, totalIdf: [...idf.values()].reduce((a, b) => a + b, 0) || 1 };
}

/** How likely the retrieval answers the question rather than only sharing its topic. */
export function assess(run: Pick<Retrieval, 'ranked' | 'question'>, m: Model = defaultModel): Assessment {
  const read = { ranked: run.ranked, question: asRead(run) };
  const s = scorer(read.question, run.ranked.slice(0, poolDepth), m);
  const probability_ = run.ranked.length === 0 ? 0 : probability(m.answerability, answerabilityInput(read, s));
  return { probability: probability_, threshold: m.threshold, scorer: s };
}
