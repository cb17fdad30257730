import { parseText } from 'media-captions';
import { type Block, type Document, decodeEntities, squash } from './Document.js';

export type TranscriptFormat = 'vtt' | 'srt';

/** A `Name:` at the start of a cue, the common way SRT files mark a change of speaker. */
const speakerPrefix = /^(?:>>\s*)?([A-Z][\p{L}'’.-]*(?:\s[A-Z][\p{L}'’.-]*){0,3}):\s+(?=\S)/u;
const voiceTag = /<v(?:\.[^\s>]*)?\s+([^>]+)>/;

/** One cue's text and speaker: WebVTT voice tags first, then a `Name:` prefix; other markup is dropped. */
export function cueText(raw: string): { text: string; speaker: string | undefined } {
  const voice = voiceTag.exec(raw);
  let speaker = voice ? squash(voice[1]!) : undefined;
  let text = squash(decodeEntities(raw.replace(/<[^>]*>/g, ' ')));
  const prefixed = speakerPrefix.exec(text);
  if (prefixed) {
    speaker ??= prefixed[1];
    text = text.slice(prefixed[0].length);
  }
  return { text, speaker };
}

/**
 * Parses WebVTT or SRT into timed cue blocks. A cue without its own speaker keeps the last one named, since captions
 * name a speaker only when the turn changes.
 */
export async function fromCaptions(content: string, format: TranscriptFormat): Promise<Document> {
  const parsed = await parseText(content.replace(/^\uFEFF/, ''), { type: format, strict: false });
  const blocks: Block[] = [];
  let speaker: string | undefined;
  for (const cue of parsed.cues) {
    const { text, speaker: named } = cueText(cue.text);
    if (named) speaker = named;
    if (text === '') continue;
    const previous = blocks.at(-1);
    // Rolling captions repeat the previous line; keep each sentence once.
    if (previous?.kind === 'cue' && previous.text === text) {
      previous.endSeconds = Math.max(previous.endSeconds, cue.endTime);
      continue;
    }
    blocks.push({ kind: 'cue', text, startSeconds: cue.startTime, endSeconds: cue.endTime, speaker });
  }
  return { blocks };
}
