import { stemmer } from 'stemmer';
import { TextStems } from './TextStems.js';

/**
 * The text analysis retrieval shares with the full-text index: the same tokens as FTS5's unicode61 tokenizer
 * (diacritics removed, lowercase, split on anything that is not a letter or digit) and the same Porter stems.
 */
export function tokens(text: string): string[] {
  // Most text is ASCII: nothing to normalize, and its only letters and digits are a-z and 0-9 once lowercased (the
  // same split as the Unicode classes', at half the cost: chunks are analyzed at every question that meets them).
  if (!/[^\p{ASCII}]/u.test(text)) return text.toLowerCase().split(/[^a-z0-9]+/).filter((t) => t !== '');
  // Diacritics are removed from Latin letters only; other scripts' marks separate tokens, as in unicode61.
  const folded = text.normalize('NFD').replace(/(\p{Script=Latin})\p{M}+/gu, '$1').toLowerCase();
  return folded.split(/[^\p{L}\p{N}]+/u).filter((t) => t !== '');
}

/** Common English function words: dropped from queries, never from the index. */
export const stopwords = new Set(
  `a about above after again against all also am an and any are as at be because been before being below between both
  but by can could did do does doing down during each either few for from further had has have having he her here hers
  herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once
  only or other our ours ourselves out over own same she should so some such than that the their theirs them themselves
  then there these they this those through to too under until up very was we were what when where which while who whom
  why will with would you your yours yourself yourselves`.split(/\s+/),
);

const stems = new Map<string, string>();

/** The Porter stem of a token, memoized: a corpus reuses a small vocabulary. */
export function stem(token: string): string {
  let s = stems.get(token);
  if (s === undefined) {
    // FTS5's porter tokenizer leaves tokens over 64 characters alone; so do we.
    s = token.length > 64 ? token : stemmer(token);
    if (stems.size > 200_000) stems.clear();
    stems.set(token, s);
  }
  return s;
}

/** The stems of a text by its tokens, as `stemsOf` gives them. */
const unicodeStems = (text: string): string[] => tokens(text).map(stem);
const textStems = new TextStems(stem, unicodeStems);

/** The stems of a text, in order, stopwords included (positions and lengths match the index). */
export function stemsOf(text: string): string[] {
  return textStems.of(text);
}

/** Titles before a name ("Ms. Lindqvist"): content rarely writes them, so a question's title asks for nothing. */
export const titles = new Set(['mr', 'mrs', 'ms', 'mx', 'dr', 'prof']);

/** A text put as a question (not a claim or a topic). */
export function isQuestion(text: string): boolean {
  return (
    /\?\s*$/.test(text) ||
    /^\s*(how|what|which|when|where|who|why|is|are|does|do|did|can|should|could|would|will|has|have)\b/i.test(text) ||
    // A request for an answer: "Summarise...", "List...", "Walk me through...".
    /^\s*(summari[sz]e|sum up|list|explain|describe|outline|trace|compare|tell me|give me|walk me|show me|remind me)\b/i.test(text)
  );
}

/**
 * Words that frame how a question is put rather than what it is about ("according to", "sum up", "what does she
 * recommend these days"): content rarely says them where it answers, so a question's framing asks for nothing.
 */
export const framing = new Set(
  `according accordingly across actually basically blog compare compared comparison currently current days describe
  episode episodes evolve evolved evolving exactly explain generally lately list newsletter newsletters nowadays
  opinion opinions outline podcast podcasts realistically really recommend recommends recommended say says said
  suggest suggests sum summarise summarize summarised summarized summary supposed tell tells think thinks told trace
  typically usually video videos view views walk`.split(/\s+/),
);
/** After "how", these ask for a figure and name no topic: "how long", "how much", "how often". */
const measures = new Set(['much', 'many', 'often', 'long', 'far', 'soon', 'big', 'large']);

/**
 * The distinct query terms of a question: tokens that are not stopwords or titles, with their stems, in first-seen
 * order. A question's framing words are left out too.
 */
export function queryTerms(question: string): { token: string; stem: string }[] {
  const seen = new Set<string>();
  const terms: { token: string; stem: string }[] = [];
  const asked = isQuestion(question);
  const all = tokens(question);
  for (const [i, token] of all.entries()) {
    if (stopwords.has(token) || titles.has(token)) continue;
    if (asked && (framing.has(token) || (measures.has(token) && all[i - 1] === 'how'))) continue;
    const s = stem(token);
    if (seen.has(s)) continue;
    seen.add(s);
    terms.push({ token, stem: s });
  }
  return terms;
}
