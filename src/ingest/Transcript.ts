import * as Dom from './Dom.js';
import { parseText } from 'media-captions';
import { z } from 'zod';
import { TranscriptError } from './TranscriptError.js';
import { type Block, type Document, decodeEntities, squash } from './Document.js';

export type TranscriptFormat = 'vtt' | 'srt' | 'json' | 'html';

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

type CaptionFormat = 'vtt' | 'srt';

/**
 * One end of a cue timing as players accept it: hours optional, one- or two-digit minutes and seconds, `.` or `,`
 * before one to three digits of a fraction of a second (`,5` is half a second, as media-captions has always read it).
 * Like the WebVTT parser's timestamp, it ends where its digits, colons and separator end.
 */
const clock = String.raw`(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?(?![\d.,:])`;
const timingLine = new RegExp(String.raw`^\s*${clock}\s*-->\s*${clock}(.*)$`);

type Timing = { startMs: number; endMs: number; settings: string };

const clockMs = (hours = '0', minutes: string, seconds: string, fraction = ''): number =>
  ((Number(hours) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000 + Number(fraction.padEnd(3, '0'));

/** A line's cue timing and what follows it (WebVTT settings, SRT coordinates), or undefined when it is not one. */
function readTiming(line: string): Timing | undefined {
  const m = timingLine.exec(line);
  if (!m) return undefined;
  return { startMs: clockMs(m[1], m[2]!, m[3]!, m[4]), endMs: clockMs(m[5], m[6]!, m[7]!, m[8]), settings: m[9]!.trim() };
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const clockText = (ms: number) => `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}.${pad(ms % 1000, 3)}`;

/** The timing in the one form media-captions reads; SRT coordinates (`X1:40 X2:600 …`) are position, not text. */
const timingText = (timing: Timing, format: CaptionFormat): string =>
  `${clockText(timing.startMs)} --> ${clockText(timing.endMs)}${format === 'vtt' && timing.settings ? ` ${timing.settings}` : ''}`;

/** The first line of a WebVTT block that holds no cue: a comment, a style sheet or a region. */
const nonCueBlock = /^(?:NOTE|STYLE|REGION)/;

/**
 * The caption lines as media-captions reads every cue a player shows: each cue timing in its canonical form, and a
 * blank line before a timing line that does not open its block. The WebVTT parser starts a new block at any line
 * holding `-->` that is not a block's first line or the one after a cue identifier; FFmpeg's SRT reader starts a new
 * cue at any timing line, taking a bare number just above it as that cue's index.
 */
function playerLines(content: string, format: CaptionFormat): string[] {
  const lines: string[] = [];
  let block: string[] = [];
  let header = format === 'vtt' && content.startsWith('WEBVTT');
  for (const line of content.split(/\r\n|\r|\n/)) {
    if (line === '') {
      lines.push(line);
      block = [];
      header = false;
      continue;
    }
    const timing = readTiming(line);
    const opensCue = timing !== undefined || (format === 'vtt' && line.includes('-->'));
    const underIdentifier = block.length === 1 && !header && !block[0]!.includes('-->') && !(format === 'vtt' && nonCueBlock.test(block[0]!));
    if (opensCue && block.length > 0 && !underIdentifier) {
      const index = format === 'srt' && timing && block.length > 1 && /^\s*\d+\s*$/.test(block.at(-1)!) ? lines.pop() : undefined;
      lines.push('');
      block = [];
      header = false;
      if (index !== undefined) {
        lines.push(index);
        block.push(index);
      }
    }
    const written = timing ? timingText(timing, format) : line;
    lines.push(written);
    block.push(written);
  }
  return lines;
}

const expectedTiming = { srt: 'HH:MM:SS,mmm --> HH:MM:SS,mmm', vtt: 'HH:MM:SS.mmm --> HH:MM:SS.mmm' } as const;

/**
 * Why a caption file gave no cue: the first line where a cue timing belonged (a block's first line, or its second
 * after a cue identifier or SRT index; in a WebVTT header, a line that starts like one) and what is wrong with it.
 * Undefined when no line is wrong: the file is empty, or a header and comments alone.
 */
function unreadableLine(content: string, format: CaptionFormat): string | undefined {
  const blocks: { line: string; number: number }[][] = [[]];
  content.split(/\r\n|\r|\n/).forEach((line, i) => {
    if (line.trim() === '') blocks.push([]);
    else blocks.at(-1)!.push({ line, number: i + 1 });
  });
  for (const block of blocks.filter((b) => b.length > 0)) {
    if (format === 'vtt' && nonCueBlock.test(block[0]!.line)) continue;
    const header = format === 'vtt' && block[0]!.number === 1 && block[0]!.line.startsWith('WEBVTT');
    const at = header
      ? block.slice(1).find((l) => /-->|^\s*\d/.test(l.line))
      : block[0]!.line.includes('-->') || block.length === 1
        ? block[0]
        : block[1];
    if (!at) continue;
    const quoted = JSON.stringify(at.line.trim().slice(0, 80));
    const timing = readTiming(at.line);
    if (!timing) return `line ${at.number}: ${quoted} is not a cue timing (expected ${expectedTiming[format]})`;
    if (timing.endMs <= timing.startMs) return `line ${at.number}: ${quoted} ends no later than it starts`;
  }
  return undefined;
}

/**
 * Parses WebVTT or SRT into timed cue blocks, reading cue timings as players do (see `playerLines`). A cue without its
 * own speaker keeps the last one named, since captions name a speaker only when the turn changes. A file with text but
 * no readable cue is a `TranscriptError` naming the line that could not be read.
 */
export async function fromCaptions(content: string, format: CaptionFormat): Promise<Document> {
  const text = content.replace(/^\uFEFF/, '');
  const parsed = await parseText(playerLines(text, format).join('\n'), { type: format, strict: false });
  if (parsed.cues.length === 0) {
    const problem = unreadableLine(text, format);
    if (problem) throw new TranscriptError(problem);
  }
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

/** The Podcasting 2.0 JSON transcript: timed segments, often one word each, with speakers. */
const JsonTranscript = z.object({ segments: z.array(z.unknown()) });
const Segment = z.object({
  speaker: z.string().optional(),
  startTime: z.coerce.number().finite().nonnegative(),
  endTime: z.coerce.number().finite().nonnegative().optional(),
  body: z.string(),
});

/** Longest cue made by joining segments; a sentence end or a change of speaker closes one sooner. */
const maxCueSeconds = 30;

/**
 * Parses a Podcasting 2.0 JSON transcript. Word-level segments are joined into cues: a cue ends at a sentence end
 * after a few seconds, at a change of speaker, or after 30 seconds.
 */
export function fromJsonTranscript(content: string): Document {
  let data: z.infer<typeof JsonTranscript>;
  try {
    data = JsonTranscript.parse(JSON.parse(content.replace(/^\uFEFF/, '')));
  } catch (error) {
    const reason = error instanceof z.ZodError ? `${error.issues[0]!.path.join('.') || 'document'}: ${error.issues[0]!.message}` : error instanceof Error ? error.message : String(error);
    throw new TranscriptError(`not a JSON transcript (expected {"segments": [{"startTime", "endTime", "body"}]}; ${reason.slice(0, 200)})`);
  }
  const blocks: Extract<Block, { kind: 'cue' }>[] = [];
  let open: Extract<Block, { kind: 'cue' }> | undefined;
  // A malformed segment is skipped, not the whole transcript.
  const segments = data.segments.flatMap((raw) => {
    const parsed = Segment.safeParse(raw);
    return parsed.success ? [parsed.data] : [];
  });
  for (const segment of segments) {
    const text = squash(decodeEntities(segment.body));
    if (text === '') continue;
    const speaker = segment.speaker ? squash(segment.speaker) : open?.speaker;
    const end = Math.max(segment.endTime ?? segment.startTime, segment.startTime);
    const closes = !open || speaker !== open.speaker || segment.startTime - open.startSeconds >= maxCueSeconds || (/[.!?]["”’)]?$/.test(open.text) && segment.startTime - open.startSeconds >= 5);
    if (closes) {
      open = { kind: 'cue', text, startSeconds: segment.startTime, endSeconds: end, speaker };
      blocks.push(open);
    } else {
      open!.text = `${open!.text} ${text}`;
      open!.endSeconds = Math.max(open!.endSeconds, end);
    }
  }
  return { blocks };
}

/** `h:mm:ss`, `mm:ss` or seconds, as seconds. */
export function clockSeconds(value: string): number | undefined {
  const parts = value.trim().split(':');
  if (parts.length > 3 || parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) return undefined;
  return parts.reduce((total, p) => total * 60 + Number(p), 0);
}

/**
 * Parses a Podcasting 2.0 HTML transcript: `<cite>Speaker:</cite>`, `<time>0:00</time>`, then the paragraph that was
 * said. Each paragraph ends where the next begins.
 */
export function fromHtmlTranscript(content: string): Document {
  const { document } = Dom.parse(`<!doctype html><html><body>${content}</body></html>`);
  const blocks: Extract<Block, { kind: 'cue' }>[] = [];
  let speaker: string | undefined;
  let start: number | undefined;
  for (const element of Array.from(document.body.querySelectorAll('cite, time, p')) as { tagName: string; textContent: string | null }[]) {
    const text = squash(element.textContent ?? '');
    const tag = element.tagName.toLowerCase();
    if (tag === 'cite') speaker = text.replace(/:$/, '') || undefined;
    else if (tag === 'time') start = clockSeconds(text);
    else if (text !== '') {
      const previous = blocks.at(-1);
      const startSeconds = start ?? previous?.endSeconds ?? 0;
      if (previous && previous.endSeconds <= previous.startSeconds) previous.endSeconds = Math.max(previous.startSeconds, startSeconds);
      blocks.push({ kind: 'cue', text, startSeconds, endSeconds: startSeconds, speaker });
      start = undefined;
    }
  }
  return { blocks };
}

/** Whether HTML is a Podcasting 2.0 transcript (speakers and times) rather than a page. */
export const isHtmlTranscript = (content: string): boolean => /<cite[\s>]/i.test(content) && /<time[\s>]/i.test(content) && !/<article[\s>]/i.test(content);

export { TranscriptError };

/** Any transcript format, by name. */
export async function fromTranscript(content: string, format: TranscriptFormat): Promise<Document> {
  switch (format) {
    case 'vtt':
    case 'srt':
      return fromCaptions(content, format);
    case 'json':
      return fromJsonTranscript(content);
    case 'html':
      return fromHtmlTranscript(content);
  }
}

/** A transcript's format from its MIME type (as `<podcast:transcript type>` gives it) or its URL's extension. */
export function formatOf(type: string | undefined, url?: string): TranscriptFormat | undefined {
  const mime = (type ?? '').split(';')[0]!.trim().toLowerCase();
  if (mime === 'text/vtt') return 'vtt';
  if (mime === 'application/srt' || mime === 'application/x-subrip' || mime === 'text/srt') return 'srt';
  if (mime === 'application/json') return 'json';
  if (mime === 'text/html') return 'html';
  const extension = url && /\.(vtt|srt|json|html?)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  return extension === 'htm' ? 'html' : (extension as TranscriptFormat | undefined) || undefined;
}
