import type { Stats } from '../index/Stats.js';
import type * as TermModel from '../terms/TermModel.js';
import * as Text from '../Text.js';

/** A question as the features see it: its distinct key terms with their weights, and its terms in order. */
export type Question = {
  stems: string[];
  /** Non-stopword stems in question order, repeats kept: the source of query bigrams. */
  sequence: string[];
  idf: Map<string, number>;
  totalIdf: number;
};

export function question(terms: { stem: string }[], sequenceText: string, stats: Stats): Question {
  const stems = terms.map((t) => t.stem);
  const idf = new Map(stems.map((s) => [s, stats.idf(s)]));
  const sequence = Text.tokens(sequenceText).filter((t) => !Text.stopwords.has(t)).map(Text.stem);
  return { stems, sequence, idf, totalIdf: [...idf.values()].reduce((a, b) => a + b, 0) || 1 };
}

/** A candidate chunk as the features see it: its stems, by field and by sentence, analyzed once. */
export type Candidate = { title: string[]; text: string[]; sentences: string[][]; tokenCount: number };

/** Sentence ends: punctuation, then space, then something that can start a sentence; and line breaks. */
const sentenceEnd = /(?<=[.!?])\s+(?=["“([]?[\p{Lu}\p{N}])|\n+/u;

/** Analyzes a chunk once for features and diagnostics. A regex split is enough here and far cheaper than a segmenter. */
export function analyze(title: string, text: string, tokenCount: number): Candidate {
  const sentences = text.split(sentenceEnd).map(Text.stemsOf).filter((s) => s.length > 0);
  return { title: Text.stemsOf(title), text: sentences.flat(), sentences, tokenCount };
}

/** The feature names, in the order `extract` returns them. */
export const names = [
  'bm25',
  'coverage',
  'titleCoverage',
  'bigrams',
  'titleBigrams',
  'sentenceCoverage',
  'windowCoverage',
  'proximity',
  'partialMatch',
  'numberMatch',
  'softPpmi',
  'softLsa',
  'sentenceSoft',
] as const;

const k1 = 1.2;
const b = 0.75;
const titleWeight = 3;

function coverageOf(q: Question, present: (stem: string) => boolean): number {
  let sum = 0;
  for (const s of q.stems) if (present(s)) sum += q.idf.get(s)!;
  return sum / q.totalIdf;
}

function bigramShare(q: Question, stems: string[]): number {
  if (q.sequence.length < 2) return 0;
  const pairs = new Set<string>();
  for (let i = 0; i + 1 < stems.length; i++) pairs.add(`${stems[i]} ${stems[i + 1]}`);
  let hits = 0;
  for (let i = 0; i + 1 < q.sequence.length; i++) if (pairs.has(`${q.sequence[i]} ${q.sequence[i + 1]}`)) hits += 1;
  return hits / (q.sequence.length - 1);
}

/** Distinct query terms matched, divided by the shortest span (in tokens) that holds them all. */
function proximity(q: Question, stems: string[]): number {
  const wanted = new Set(q.stems);
  const positions: [number, string][] = [];
  stems.forEach((s, i) => wanted.has(s) && positions.push([i, s]));
  const distinct = new Set(positions.map((p) => p[1])).size;
  if (distinct < 2) return 0;
  const counts = new Map<string, number>();
  let have = 0;
  let best = Infinity;
  let left = 0;
  for (const [pos, s] of positions) {
    counts.set(s, (counts.get(s) ?? 0) + 1);
    if (counts.get(s) === 1) have += 1;
    while (have === distinct) {
      best = Math.min(best, pos - positions[left]![0] + 1);
      const drop = positions[left]![1];
      counts.set(drop, counts.get(drop)! - 1);
      if (counts.get(drop) === 0) have -= 1;
      left += 1;
    }
  }
  return distinct / best;
}

/** Key terms the chunk lacks but has a longer or shorter form of (e.g. "biomaterials" for "biomaterial-based"). */
function partialMatch(q: Question, present: Set<string>, vocabulary: string[]): number {
  let sum = 0;
  for (const s of q.stems) {
    if (present.has(s) || s.length < 5) continue;
    if (vocabulary.some((x) => x.length >= 5 && (x.startsWith(s) || s.startsWith(x)))) sum += q.idf.get(s)!;
  }
  return sum / q.totalIdf;
}

/** Field-weighted BM25 over the question's terms that contain a digit: figures, doses, years, gene names. */
function numberMatch(q: Question, title: string[], text: string[], lengthRatio: number): number {
  const saturate = (f: number) => (2.2 * f) / (f + 1.2 * (0.25 + 0.75 * lengthRatio));
  let sum = 0;
  for (const s of q.stems) {
    if (!/\d/.test(s)) continue;
    const inTitle = title.filter((t) => t === s).length;
    const inText = text.filter((t) => t === s).length;
    if (inTitle + inText > 0) sum += q.idf.get(s)! * (3 * saturate(inTitle) + saturate(inText));
  }
  return sum / (4 * q.totalIdf);
}

/**
 * The reranker's features for one candidate: field-weighted BM25 over every question term (title 3:1, the first
 * stage's weighting), IDF-weighted coverage of the key terms (in the chunk, its title, its best sentence and best
 * two-sentence window), phrase (bigram) matches, term proximity, partial word matches and number matches. Every
 * feature is normalized by the question's own weight, not by the other candidates, so a score is absolute: it means
 * the same thing whatever the question and whatever else was found.
 */
export function extract(q: Question, c: Candidate, stats: Stats, soft?: TermModel.TermFeatures): number[] {
  const { title, text } = c;
  const titleSet = new Set(title);
  const textSet = new Set(text);
  const tf = new Map<string, number>();
  for (const s of title) tf.set(s, (tf.get(s) ?? 0) + titleWeight);
  for (const s of text) tf.set(s, (tf.get(s) ?? 0) + 1);
  const lengthNorm = 1 - b + (b * (c.tokenCount || title.length + text.length)) / stats.averageTokens;
  let bm25 = 0;
  for (const s of q.stems) {
    const f = tf.get(s) ?? 0;
    if (f > 0) bm25 += (q.idf.get(s)! * f * (k1 + 1)) / (f + k1 * lengthNorm);
  }
  const sentenceSets = c.sentences.map((s) => new Set(s));
  let sentenceCoverage = 0;
  let windowCoverage = 0;
  sentenceSets.forEach((set, i) => {
    sentenceCoverage = Math.max(sentenceCoverage, coverageOf(q, (s) => set.has(s)));
    const next = sentenceSets[i + 1];
    windowCoverage = Math.max(windowCoverage, coverageOf(q, (s) => set.has(s) || (next?.has(s) ?? false)));
  });
  return [
    bm25 / q.totalIdf,
    coverageOf(q, (s) => textSet.has(s) || titleSet.has(s)),
    coverageOf(q, (s) => titleSet.has(s)),
    bigramShare(q, text),
    bigramShare(q, title),
    sentenceCoverage,
    Math.max(windowCoverage, sentenceCoverage),
    Math.max(proximity(q, title), proximity(q, text)),
    partialMatch(q, new Set([...titleSet, ...textSet]), [...new Set([...titleSet, ...textSet])]),
    numberMatch(q, title, text, (c.tokenCount || title.length + text.length) / stats.averageTokens),
    // Soft matches come from the term model built on the corpus; without one they fall back to exact matching.
    soft?.softPpmi ?? 0,
    soft?.softLsa ?? 0,
    soft?.sentenceSoft ?? sentenceCoverage,
  ];
}

/**
 * The term model's soft-matching features for the candidates of one question. Its pseudo-relevance feedback feature
 * is left out: on SciFact it earned a weight of 0.01 and cost a third of the reranking time.
 */
export function soft(
  termModel: TermModel.TermModel | undefined,
  question: Question,
): ((c: Candidate) => TermModel.TermFeatures) | undefined {
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
