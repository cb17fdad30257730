import type { Citation } from '../contract/Query.js';
import type { Evidence } from '../retrieval/Retriever.js';
import * as Sentences from './Sentences.js';
import type { SynthesisInput, Synthesizer } from './Synthesizer.js';
import { citation } from './Synthesizer.js';

/** The answer when retrieval found nothing relevant: says so, cites nothing. */
export const nothingFound =
  'The indexed content in this scope does not answer this question, so there is no grounded answer to give. The charge for this query was reversed.';

const maxSentences = 4;
const maxPerChunk = 2;
const maxChunks = 5;

/**
 * The offline synthesizer: an answer made only of sentences from the evidence, each followed by the number of its
 * citation. Sentences are chosen by how much of the question they cover and how strong their chunk is.
 */
export function create(): Synthesizer {
  return {
    async synthesize({ evidence, terms }: SynthesisInput) {
      if (evidence.length === 0) return { answer: nothingFound, citations: [] };
      const pool: { sentence: string; e: Evidence; rank: number; position: number; value: number }[] = [];
      // Only chunks near the best one speak for the answer; weaker ones stay available to a raw-mode caller.
      const strong = evidence.slice(0, maxChunks).filter((e) => e.score >= 0.5 * evidence[0]!.score);
      strong.forEach((e, rank) => {
        Sentences.split(e.chunkText).forEach((sentence, position) => {
          const coverage = Sentences.coverage(sentence, terms.idf, terms.totalIdf);
          if (coverage >= 0.2 && sentence.length >= 20) pool.push({ sentence, e, rank, position, value: 0.7 * coverage + 0.3 * e.score });
        });
      });
      if (pool.length === 0) {
        // No sentence speaks to the question's terms on its own: quote the opening of the best chunk.
        const first = Sentences.split(evidence[0]!.chunkText).slice(0, 2);
        first.forEach((sentence, position) => pool.push({ sentence, e: evidence[0]!, rank: 0, position, value: 1 }));
      }
      const chosen: typeof pool = [];
      const perChunk = new Map<string, number>();
      const seen = new Set<string>();
      const best = Math.max(...pool.map((p) => p.value));
      for (const p of [...pool].sort((a, b) => b.value - a.value)) {
        const key = p.sentence.toLowerCase();
        // A sentence far weaker than the best one would pad the answer, not ground it.
        if (p.value < 0.4 * best) break;
        if (chosen.length >= maxSentences || seen.has(key) || (perChunk.get(p.e.chunkId) ?? 0) >= maxPerChunk) continue;
        chosen.push(p);
        seen.add(key);
        perChunk.set(p.e.chunkId, (perChunk.get(p.e.chunkId) ?? 0) + 1);
      }
      // A very short sentence ("Anchor sleep.") is a heading for what follows: bring its next sentence along.
      for (const p of [...chosen]) {
        if (p.sentence.length >= 60 || chosen.length >= maxSentences + 1) continue;
        const next = Sentences.split(p.e.chunkText)[p.position + 1];
        if (next && !seen.has(next.toLowerCase())) {
          chosen.push({ ...p, sentence: next, position: p.position + 1 });
          seen.add(next.toLowerCase());
        }
      }
      chosen.sort((a, b) => a.rank - b.rank || a.position - b.position);
      const citations: Citation[] = [];
      const numbers = new Map<string, number>();
      const parts = chosen.map((p) => {
        let n = numbers.get(p.e.chunkId);
        if (n === undefined) {
          citations.push(citation(p.e));
          n = citations.length;
          numbers.set(p.e.chunkId, n);
        }
        return `${p.sentence} [${n}]`;
      });
      return { answer: parts.join(' '), citations };
    },
  };
}
