import { parseText } from 'media-captions';
import { type Block, type Document, decodeEntities, squash } from './Document.js';

export type TranscriptFormat = 'vtt' | 'srt';

/** A `Name:` at the start of a cue, the common way SRT files mark a change of speaker. */
const speakerPrefix = /^(?:>>\s*)?([A-Z][\p{L}'’.-]*(?:\s[A-Z][\p{L}'’.-]*){0,3}):\s+(?=\S)/u;
const voiceTag = /<v(?:\.[^\s>]*)?\s+([^>]+)>/;

/** A cue's plain text and the speaker named by a WebVTT voice tag, if any; other markup is dropped. */
export function cueText(raw: string): { text: string; speaker: string | undefined } {
  const voice = voiceTag.exec(raw);
  return { text: squash(decodeEntities(raw.replace(/<[^>]*>/g, ' '))), speaker: voice ? squash(voice[1]!) : undefined };
}

/** The `Name:` a cue starts with, if any. */
const prefixOf = (text: string): string | undefined => speakerPrefix.exec(text)?.[1];

/**
 * Names used as a `Name:` prefix on at least two cues. A single "Warning:" or "Remember:" is text, not a speaker;
 * real speakers take more than one turn.
 */
function recurringSpeakers(texts: string[]): Set<string> {
  const counts = new Map<string, number>();
  for (const text of texts) {
    const name = prefixOf(text);
    if (name) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return new Set([...counts].filter(([, n]) => n >= 2).map(([name]) => name));
}

/**
 * Parses WebVTT or SRT into timed cue blocks. A cue without its own speaker keeps the last one named, since captions
 * name a speaker only when the turn changes.
 */
export async function fromCaptions(content: string, format: TranscriptFormat): Promise<Document> {
  const parsed = await parseText(content.replace(/^\uFEFF/, ''), { type: format, strict: false });
  const cues = parsed.cues.map((cue) => ({ cue, ...cueText(cue.text) }));
  const speakers = recurringSpeakers(cues.filter((c) => !c.speaker).map((c) => c.text));
  const blocks: Block[] = [];
  let speaker: string | undefined;
  for (const { cue, speaker: voice, text: raw } of cues) {
    const prefix = voice ? undefined : prefixOf(raw);
    const named = voice ?? (prefix && speakers.has(prefix) ? prefix : undefined);
    const text = prefix && named === prefix ? raw.replace(speakerPrefix, '') : raw;
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
