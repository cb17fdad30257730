import type { ChunkDraft } from '../store/Items.js';
import type { Block, Document } from './Document.js';

/** Chunk sizes in characters, from a target in profile tokens (one token is four characters). */
export type Sizes = { target: number; max: number; min: number };

export function sizes(targetTokens: number): Sizes {
  const target = targetTokens * 4;
  return { target, max: Math.round(target * 1.25), min: Math.round(target * 0.5) };
}

/** The contract's profile token count. */
export const profileTokens = (text: string): number => Math.ceil(text.length / 4);

const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** Splits text into pieces no longer than `max`, at sentence boundaries where it can and at spaces where it must. */
export function splitText(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const sentences = [...sentenceSegmenter.segment(text)].map((s) => s.segment.trim()).filter((s) => s !== '');
  const pieces: string[] = [];
  let current = '';
  const push = (piece: string) => {
    if (piece.length <= max) {
      if (current === '') current = piece;
      else if (current.length + 1 + piece.length <= max) current = `${current} ${piece}`;
      else {
        pieces.push(current);
        current = piece;
      }
      return;
    }
    // A sentence longer than a chunk is cut between words, and a word longer than a chunk into pieces.
    for (const word of piece.split(/\s+/)) {
      if (word.length <= max) push(word);
      else for (let at = 0; at < word.length; at += max) push(word.slice(at, at + max));
    }
  };
  for (const sentence of sentences) push(sentence);
  if (current !== '') pieces.push(current);
  return pieces;
}

type Unit = { text: string; heading: boolean; boundary?: boolean | undefined; startSeconds?: number; endSeconds?: number; speaker?: string | undefined; page?: number | undefined };

function unitsOf(blocks: Block[], max: number): Unit[] {
  return blocks.flatMap((block): Unit[] => {
    if (block.kind === 'heading') return [{ text: block.text, heading: true, boundary: block.boundary, page: block.page }];
    const pieces = splitText(block.text, max);
    if (block.kind === 'paragraph') return pieces.map((text) => ({ text, heading: false, page: block.page }));
    return pieces.map((text) => ({ text, heading: false, startSeconds: block.startSeconds, endSeconds: block.endSeconds, speaker: block.speaker }));
  });
}

/** Joins the units of one chunk: transcripts name the speaker at each turn, text keeps its paragraph breaks. */
function render(units: Unit[]): ChunkDraft {
  const timed = units.some((u) => u.startSeconds !== undefined);
  if (!timed) {
    // Paged documents (PDF) keep the pages a chunk spans, for citations.
    const pages = units.map((u) => u.page).filter((p): p is number => p !== undefined);
    const text = units.map((u) => u.text).join(units.length > 1 ? '\n\n' : '');
    return pages.length > 0 ? { text, pageStart: Math.min(...pages), pageEnd: Math.max(...pages) } : { text };
  }
  const turns: { speaker: string | undefined; units: Unit[] }[] = [];
  const spoken = new Map<string, number>();
  for (const u of units) {
    const last = turns.at(-1);
    if (last && last.speaker === u.speaker) last.units.push(u);
    else turns.push({ speaker: u.speaker, units: [u] });
    if (u.speaker) spoken.set(u.speaker, (spoken.get(u.speaker) ?? 0) + u.text.length);
  }
  // The text is built piece by piece so each cue's offset in it is known.
  let text = '';
  const cues: [number, number][] = [];
  for (const [i, turn] of turns.entries()) {
    if (i > 0) text += '\n';
    if (turn.speaker) text += `${turn.speaker}: `;
    turn.units.forEach((u, j) => {
      if (j > 0) text += ' ';
      if (u.startSeconds !== undefined && cues.at(-1)?.[1] !== u.startSeconds) cues.push([text.length, u.startSeconds]);
      text += u.text;
    });
  }
  const speaker = [...spoken.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
  return {
    text,
    startSeconds: Math.min(...units.map((u) => u.startSeconds ?? Infinity)),
    endSeconds: Math.max(...units.map((u) => u.endSeconds ?? -Infinity)),
    speaker,
    cues,
  };
}

/**
 * Cuts a document into chunks of about the target size. Text is cut between paragraphs (between sentences inside a
 * long one) and before headings; transcripts only between cues, preferring a change of speaker, and keep their times.
 */
export function chunk(document: Document, size: Sizes): ChunkDraft[] {
  const groups: Unit[][] = [];
  let current: Unit[] = [];
  let length = 0;
  const flush = () => {
    if (current.length > 0) groups.push(current);
    current = [];
    length = 0;
  };
  for (const unit of unitsOf(document.blocks, size.max)) {
    const previous = current.at(-1);
    const turnChange = previous !== undefined && unit.speaker !== undefined && previous.speaker !== unit.speaker;
    const wouldOverflow = length + unit.text.length + 2 > size.max;
    if (current.length > 0 && (wouldOverflow || unit.boundary || length >= size.target || ((unit.heading || turnChange) && length >= size.min))) {
      // A heading at the end of a chunk belongs to the text after it.
      const carried = previous?.heading ? current.pop() : undefined;
      flush();
      if (carried) {
        current.push(carried);
        length = carried.text.length + 2;
      }
    }
    current.push(unit);
    length += unit.text.length + 2;
  }
  flush();
  // A short tail reads better joined to the chunk before it.
  const last = groups.at(-1);
  const beforeLast = groups.at(-2);
  if (last && beforeLast) {
    const lastLength = last.reduce((n, u) => n + u.text.length + 2, 0);
    const beforeLength = beforeLast.reduce((n, u) => n + u.text.length + 2, 0);
    if (lastLength < size.min / 2 && beforeLength + lastLength <= size.max && !last[0]!.boundary) {
      beforeLast.push(...last);
      groups.pop();
    }
  }
  return groups.filter((g) => g.some((u) => !u.heading) || groups.length === 1).map(render);
}
