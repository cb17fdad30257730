import type { Citation, QueryMode } from '../contract/Query.js';
import type { Question } from '../retrieval/ranking/Features.js';
import type { Evidence } from '../retrieval/Evidence.js';
import type { Scorer } from './Rationale.js';
import * as SourceLinks from './SourceLinks.js';

/** What a synthesizer gets: the question and the evidence the retrieval returned, best first. */
export type SynthesisInput = {
  question: string;
  evidence: Evidence[];
  /** The question's key terms and their weights, for picking sentences. */
  terms: Question;
  /** The sentence scorer the preflight used to judge answerability; the synthesizer makes one when absent. */
  sentences?: Scorer | undefined;
  /** The retrieval mode, which shapes the answer (an overview, a timeline, a list of claims...). */
  mode?: QueryMode | undefined;
  /** The experts (profile ids) the question is asked of, each to be heard: named in it, or a scope of their handles. */
  experts?: string[] | undefined;
  /** How close in meaning each text is to the question (cosine of a sentence encoder), when one is at hand. */
  similarity?: ((question: string, texts: string[]) => Promise<number[]>) | undefined;
};

/**
 * An answer whose every statement is cited, and notes on what was dropped or why it fell back (confidence reasons).
 * `ceiling` is the most confidence the answer itself supports, whatever retrieval found, and why.
 */
export type Synthesis = {
  answer: string;
  citations: Citation[];
  notes?: string[];
  ceiling?: { confidence: 'medium' | 'low'; reason: string };
  /** What the answer was written without: `model` when the configured model could not answer and the extractive one did. */
  degraded?: 'model'[];
};

/** Turns evidence into an answer whose every statement is cited: extractive (offline) or model-written. */
export type Synthesizer = { synthesize(input: SynthesisInput): Promise<Synthesis> };

/** The canonical citation path of a chunk, relative to the base address. */
export const profileUrl = (slug: string, itemId: string, chunkId: string): string =>
  `/${slug}/i/${encodeURIComponent(itemId)}?chunks=${encodeURIComponent(chunkId)}`;

const clock = (seconds: number) => {
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60)).padStart(h > 0 ? 2 : 1, '0');
  return `${h > 0 ? `${h}:` : ''}${mm}:${String(s % 60).padStart(2, '0')}`;
};

/**
 * A human-facing label: the item's title, its creator, and the moment for audio and video (where the words at
 * `offset` in the chunk are spoken) or the pages of a PDF.
 */
export function label(e: Evidence, offset?: number): string {
  const pages = e.pageStart === null ? '' : e.pageEnd !== null && e.pageEnd !== e.pageStart ? `, pp. ${e.pageStart}–${e.pageEnd}` : `, p. ${e.pageStart}`;
  const moment = SourceLinks.momentOf(e, offset);
  const at = moment !== null ? ` at ${clock(moment)}` : pages;
  return `${e.title} (${e.scoped.profile.name}, ${e.scoped.channel.label}${at})`;
}

/** The citation of a chunk; `offset` is where the cited words start in it, so a transcript cites their moment. */
export function citation(e: Evidence, offset?: number): Citation {
  const moment = SourceLinks.momentOf(e, offset);
  const sourceUrl = SourceLinks.deepLink(SourceLinks.publicSource(e), { startSeconds: moment, pageStart: e.pageStart });
  return {
    label: label(e, offset),
    text: e.chunkText,
    profileUrl: profileUrl(e.scoped.profile.slug, e.itemId, e.chunkId),
    itemId: e.itemId,
    chunkId: e.chunkId,
    ...(moment !== null && { startSeconds: moment }),
    ...(sourceUrl && { sourceUrl }),
  };
}
