import * as Text from '../retrieval/Text.js';

const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** The sentences of a text, trimmed; speaker labels of transcripts ("Name: ") stay with their sentence. */
export function split(text: string): string[] {
  return text
    .split(/\n+/)
    .flatMap((line) => [...segmenter.segment(line)].map((s) => s.segment.trim()))
    .filter((s) => s.length > 0);
}

/** IDF-weighted share of the question's key terms a sentence contains. */
export function coverage(sentence: string, idf: Map<string, number>, totalIdf: number): number {
  const stems = new Set(Text.stemsOf(sentence));
  let sum = 0;
  for (const [stem, weight] of idf) if (stems.has(stem)) sum += weight;
  return totalIdf > 0 ? sum / totalIdf : 0;
}
