import type { Citation } from '../contract/Query.js';
import type { Evidence } from '../retrieval/Retriever.js';
import * as Rationale from './Rationale.js';
import type { ScoredSentence } from './Rationale.js';
import type { SynthesisInput, Synthesizer } from './Synthesizer.js';
import { citation } from './Synthesizer.js';

/** The answer when retrieval found nothing relevant: says so, cites nothing. */
export const nothingFound =
  'The indexed content in this scope does not answer this question, so there is no grounded answer to give. The charge for this query was reversed.';

/**
 * How widely an answer draws. A direct question is answered from the best item and a runner-up that ranks nearly as
 * well or states the answer more plainly (a second source is cited only when it is likely relevant too); an overview, a timeline, a comparison or an inventory
 * takes one sentence from each of several items, in the order the mode returned them.
 */
const breadth = {
  focused: { items: 2, runnerUp: 0.7, outdo: 1.3, second: { relative: 0.6, absolute: 0.5 } },
  broad: { items: 4, runnerUp: 0, outdo: 0, second: null },
} as const;
/** Sentences shorter than this are headings or fragments: never chosen on their own. */
const minLength = 20;
/** A chosen sentence shorter than this is a lead-in ("Anchor sleep."): the next sentence comes along. */
const leadIn = 40;

/**
 * The offline synthesizer: an answer made only of sentences from the evidence, each followed by the number of its
 * citation. Each sentence is chosen by the rationale model (does it state the answer, or only set the scene?), from
 * the items retrieval ranked best.
 */
export function create(): Synthesizer {
  return {
    async synthesize({ evidence, terms, mode, sentences }: SynthesisInput) {
      if (evidence.length === 0) return { answer: nothingFound, citations: [] };
      const scorer = sentences ?? Rationale.scorer(terms, evidence);
      const shape = mode === undefined || mode === 'lookup' || mode === 'claim_extraction' ? breadth.focused : breadth.broad;
      // Items in the order retrieval returned them, each with its best score.
      const items: { itemId: string; score: number; chunks: Evidence[] }[] = [];
      for (const e of evidence) {
        const item = items.find((i) => i.itemId === e.itemId);
        if (item) item.chunks.push(e);
        else items.push({ itemId: e.itemId, score: e.score, chunks: [e] });
      }
      const top = Math.max(...items.map((i) => i.score));
      const chosen: ScoredSentence[] = [];
      for (const item of items) {
        if (chosen.length > 0 && new Set(chosen.map((c) => c.e.itemId)).size >= shape.items) break;
        const ranked = item.chunks
          .flatMap((e) => scorer.sentences(e))
          .filter((s) => s.sentence.length >= minLength)
          .sort((a, b) => b.probability - a.probability);
        const best = ranked[0];
        if (!best) continue;
        // A runner-up speaks when it ranks nearly as well, or states the answer more plainly than anything chosen.
        const outdoes = best.probability > shape.outdo * Math.max(...chosen.map((c) => c.probability));
        if (chosen.length > 0 && item.score < shape.runnerUp * top && !outdoes) continue;
        chosen.push(best);
        const next = ranked[1];
        const second = chosen.length === 1 ? shape.second : null;
        if (second && next && next.probability >= second.relative * best.probability && next.probability >= second.absolute) chosen.push(next);
      }
      if (chosen.length === 0) {
        // Nothing but fragments: quote the opening of the best chunk.
        chosen.push(...scorer.sentences(evidence[0]!).slice(0, 2));
      }
      // A lead-in says little alone: bring the sentence after it.
      for (const s of [...chosen]) {
        if (s.sentence.length >= leadIn) continue;
        const after = scorer.sentences(s.e)[s.position + 1];
        if (after && !chosen.some((c) => c.e.chunkId === after.e.chunkId && c.position === after.position)) chosen.push(after);
      }
      const order = new Map(evidence.map((e, i) => [e.chunkId, i]));
      chosen.sort((a, b) => order.get(a.e.chunkId)! - order.get(b.e.chunkId)! || a.position - b.position);
      const citations: Citation[] = [];
      const numbers = new Map<string, number>();
      const parts = chosen.map((s) => {
        let n = numbers.get(s.e.chunkId);
        if (n === undefined) {
          citations.push(citation(s.e, s.e.chunkText.indexOf(s.sentence)));
          n = citations.length;
          numbers.set(s.e.chunkId, n);
        }
        return `${s.sentence} [${n}]`;
      });
      return { answer: parts.join(' '), citations };
    },
  };
}
