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
  // Joined by a loop: Array.prototype.flat took 11 us a chunk here, a fifth of the analysis.
  const stems: string[] = [];
  for (const sentence of sentences) for (const stem of sentence) stems.push(stem);
  return { title: Text.stemsOf(title), text: stems, sentences, tokenCount };
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

/**
 * What every candidate's features ask of a question, made once per question: its distinct key stems numbered, each
 * key stem's number and weight in question order (sums keep that order), and its word pairs.
 */
type Prepared = {
  index: Map<string, number>;
  distinct: number;
  stemIndex: Int32Array;
  stemIdf: Float64Array;
  hasDigit: boolean[];
  sequenceStems: Set<string>;
  sequencePairs: string[];
};

const preparedQuestions = new WeakMap<Question, Prepared>();

function prepared(q: Question): Prepared {
  let p = preparedQuestions.get(q);
  if (!p) {
    const index = new Map<string, number>();
    for (const s of q.stems) if (!index.has(s)) index.set(s, index.size);
    const sequencePairs: string[] = [];
    for (let i = 0; i + 1 < q.sequence.length; i++) sequencePairs.push(`${q.sequence[i]} ${q.sequence[i + 1]}`);
    p = {
      index,
      distinct: index.size,
      stemIndex: Int32Array.from(q.stems, (s) => index.get(s)!),
      stemIdf: Float64Array.from(q.stems, (s) => q.idf.get(s)!),
      hasDigit: q.stems.map((s) => /\d/.test(s)),
      sequenceStems: new Set(q.sequence),
      sequencePairs,
    };
    preparedQuestions.set(q, p);
  }
  return p;
}

/** The share of the question's weight whose key stems are marked (in `a`, or in `b` when given). */
function coverageOf(q: Question, p: Prepared, a: Uint8Array, b?: Uint8Array): number {
  let sum = 0;
  for (let j = 0; j < p.stemIndex.length; j++) {
    const i = p.stemIndex[j]!;
    if (a[i] || b?.[i]) sum += p.stemIdf[j]!;
  }
  return sum / q.totalIdf;
}

/** The share of the question's word pairs that the stems hold side by side. */
function bigramShare(q: Question, p: Prepared, stems: string[]): number {
  if (q.sequence.length < 2) return 0;
  // Only pairs of the question's own stems can match: no other pair is made.
  let pairs: Set<string> | undefined;
  for (let i = 0; i + 1 < stems.length; i++) {
    if (p.sequenceStems.has(stems[i]!) && p.sequenceStems.has(stems[i + 1]!)) (pairs ??= new Set()).add(`${stems[i]} ${stems[i + 1]}`);
  }
  if (!pairs) return 0;
  let hits = 0;
  for (const pair of p.sequencePairs) if (pairs.has(pair)) hits += 1;
  return hits / (q.sequence.length - 1);
}

/** Distinct query terms matched, divided by the shortest span (in tokens) that holds them all. */
function proximity(distinctStems: number, ids: Int32Array): number {
  const positions: number[] = [];
  for (let i = 0; i < ids.length; i++) if (ids[i]! >= 0) positions.push(i);
  const counts = new Int32Array(distinctStems);
  let distinct = 0;
  for (const at of positions) if (counts[ids[at]!]!++ === 0) distinct += 1;
  if (distinct < 2) return 0;
  counts.fill(0);
  let have = 0;
  let best = Infinity;
  let left = 0;
  for (const pos of positions) {
    if (counts[ids[pos]!]!++ === 0) have += 1;
    while (have === distinct) {
      const first = positions[left]!;
      best = Math.min(best, pos - first + 1);
      if (--counts[ids[first]!]! === 0) have -= 1;
      left += 1;
    }
  }
  return distinct / best;
}

/** The number of each stem among the question's key stems (`Prepared.index`), -1 for the others, counted into `counts`. */
function idsOf(p: Prepared, stems: string[], counts: Int32Array): Int32Array {
  const ids = new Int32Array(stems.length);
  for (let k = 0; k < stems.length; k++) {
    const i = p.index.get(stems[k]!);
    ids[k] = i ?? -1;
    if (i !== undefined) counts[i]! += 1;
  }
  return ids;
}

/** Key terms the chunk lacks but has a longer or shorter form of (e.g. "biomaterials" for "biomaterial-based"). */
function partialMatch(q: Question, p: Prepared, present: Uint8Array, title: string[], text: string[]): number {
  let sum = 0;
  const partOf = (s: string, stems: string[]) => stems.some((x) => x.length >= 5 && (x.startsWith(s) || s.startsWith(x)));
  for (let j = 0; j < q.stems.length; j++) {
    const s = q.stems[j]!;
    if (present[p.stemIndex[j]!] || s.length < 5) continue;
    // Read in place: a set of the chunk's long stems, made for each candidate, cost more than the few scans it spared.
    if (partOf(s, title) || partOf(s, text)) sum += p.stemIdf[j]!;
  }
  return sum / q.totalIdf;
}

/** Field-weighted BM25 over the question's terms that contain a digit: figures, doses, years, gene names. */
function numberMatch(q: Question, p: Prepared, inTitle: Int32Array, inText: Int32Array, lengthRatio: number): number {
  const saturate = (f: number) => (2.2 * f) / (f + 1.2 * (0.25 + 0.75 * lengthRatio));
  let sum = 0;
  for (let j = 0; j < q.stems.length; j++) {
    if (!p.hasDigit[j]) continue;
    const t = inTitle[p.stemIndex[j]!]!;
    const x = inText[p.stemIndex[j]!]!;
    if (t + x > 0) sum += p.stemIdf[j]! * (3 * saturate(t) + saturate(x));
  }
  return sum / (4 * q.totalIdf);
}

/**
 * The reranker's features for one candidate: field-weighted BM25 over every question term (title 3:1, the first
 * stage's weighting), IDF-weighted coverage of the key terms (in the chunk, its title, its best sentence and best
 * two-sentence window), phrase (bigram) matches, term proximity, partial word matches and number matches. Every
 * feature is normalized by the question's own weight, not by the other candidates, so a score is absolute: it means
 * the same thing whatever the question and whatever else was found. The chunk's stems are looked up once each among
 * the question's, and every feature is then counted over the question's few stems.
 */
export function extract(q: Question, c: Candidate, stats: Stats, soft?: TermModel.TermFeatures): number[] {
  const p = prepared(q);
  const { title, text } = c;
  // How often each key stem occurs in the title and in the text; each stem is looked up once, here.
  const inTitle = new Int32Array(p.distinct);
  const inText = new Int32Array(p.distinct);
  const titleIds = idsOf(p, title, inTitle);
  const textIds = idsOf(p, text, inText);
  const titleMarks = new Uint8Array(p.distinct);
  const textMarks = new Uint8Array(p.distinct);
  for (let i = 0; i < p.distinct; i++) {
    titleMarks[i] = inTitle[i]! > 0 ? 1 : 0;
    textMarks[i] = inText[i]! > 0 ? 1 : 0;
  }
  const lengthNorm = 1 - b + (b * (c.tokenCount || title.length + text.length)) / stats.averageTokens;
  let bm25 = 0;
  for (let j = 0; j < q.stems.length; j++) {
    const i = p.stemIndex[j]!;
    const f = titleWeight * inTitle[i]! + inText[i]!;
    if (f > 0) bm25 += (p.stemIdf[j]! * f * (k1 + 1)) / (f + k1 * lengthNorm);
  }
  // An analysis's sentences are its text's stems in order: their numbers were found above (any other stem is looked up).
  let offset = 0;
  const sentenceMarks = c.sentences.map((sentence) => {
    const marks = new Uint8Array(p.distinct);
    for (let k = 0; k < sentence.length; k++, offset++) {
      const s = sentence[k]!;
      const i = text[offset] === s ? textIds[offset]! : (p.index.get(s) ?? -1);
      if (i >= 0) marks[i] = 1;
    }
    return marks;
  });
  let sentenceCoverage = 0;
  let windowCoverage = 0;
  sentenceMarks.forEach((marks, i) => {
    sentenceCoverage = Math.max(sentenceCoverage, coverageOf(q, p, marks));
    windowCoverage = Math.max(windowCoverage, coverageOf(q, p, marks, sentenceMarks[i + 1]));
  });
  const present = titleMarks.map((t, i) => t | textMarks[i]!);
  return [
    bm25 / q.totalIdf,
    coverageOf(q, p, present),
    coverageOf(q, p, titleMarks),
    bigramShare(q, p, text),
    bigramShare(q, p, title),
    sentenceCoverage,
    Math.max(windowCoverage, sentenceCoverage),
    Math.max(proximity(p.distinct, titleIds), proximity(p.distinct, textIds)),
    partialMatch(q, p, present, title, text),
    numberMatch(q, p, inTitle, inText, (c.tokenCount || title.length + text.length) / stats.averageTokens),
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
