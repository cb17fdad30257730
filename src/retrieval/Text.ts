import { stemmer } from 'stemmer';

/**
 * The text analysis retrieval shares with the full-text index: the same tokens as FTS5's unicode61 tokenizer
 * (diacritics removed, lowercase, split on anything that is not a letter or digit) and the same Porter stems.
 */
export function tokens(text: string): string[] {
  // Most text is ASCII: skip Unicode normalization when there is nothing to normalize.
  // Diacritics are removed from Latin letters only; other scripts' marks separate tokens, as in unicode61.
  const folded = !/[^\p{ASCII}]/u.test(text) ? text.toLowerCase() : text.normalize('NFD').replace(/(\p{Script=Latin})\p{M}+/gu, '$1').toLowerCase();
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

/** The stems of a text, in order, stopwords included (positions and lengths match the index). */
export function stemsOf(text: string): string[] {
  return tokens(text).map(stem);
}

/** Titles before a name ("Ms. Lindqvist"): content rarely writes them, so a question's title asks for nothing. */
export const titles = new Set(['mr', 'mrs', 'ms', 'mx', 'dr', 'prof']);

/**
 * The distinct query terms of a question: tokens that are not stopwords or titles, with their stems, in first-seen
 * order.
 */
export function queryTerms(question: string): { token: string; stem: string }[] {
  const seen = new Set<string>();
  const terms: { token: string; stem: string }[] = [];
  for (const token of tokens(question)) {
    if (stopwords.has(token) || titles.has(token)) continue;
    const s = stem(token);
    if (seen.has(s)) continue;
    seen.add(s);
    terms.push({ token, stem: s });
  }
  return terms;
}
