import { describe, expect, test } from 'vitest';
import * as Chunker from '../src/ingest/Chunker.js';
import { fromPlainText } from '../src/ingest/Document.js';
import { fromMarkdown } from '../src/ingest/Markdown.js';
import { cueText, fromCaptions } from '../src/ingest/Transcript.js';

const size = Chunker.sizes(100); // 400 characters target, 500 max, 200 min
const sentence = (i: number) => `Sentence number ${i} explains one more idea about sourdough fermentation in detail.`;
const paragraph = (from: number, count: number) => Array.from({ length: count }, (_, i) => sentence(from + i)).join(' ');

describe('Chunker.chunk for text', () => {
  test('behavior: packs paragraphs up to the target and never over the maximum', () => {
    const text = Array.from({ length: 12 }, (_, i) => paragraph(i * 3, 2)).join('\n\n');
    const chunks = Chunker.chunk(fromPlainText(text), size);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) expect(c.text.length).toBeLessThanOrEqual(size.max);
    for (const c of chunks.slice(0, -1)) expect(c.text.length).toBeGreaterThanOrEqual(size.min);
    // Nothing is lost or repeated.
    expect(chunks.map((c) => c.text).join('\n\n')).toBe(text);
  });

  test('behavior: splits an overlong paragraph between sentences', () => {
    const chunks = Chunker.chunk(fromPlainText(paragraph(0, 20)), size);
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(size.max);
      expect(c.text).toMatch(/^Sentence number \d+ .*detail\.$/);
    }
  });

  test('behavior: a word longer than a chunk is cut rather than lost', () => {
    const chunks = Chunker.chunk(fromPlainText('x'.repeat(1200)), size);
    expect(chunks.map((c) => c.text).join('').replace(/\s/g, '')).toBe('x'.repeat(1200));
    for (const c of chunks) expect(c.text.length).toBeLessThanOrEqual(size.max);
  });

  test('behavior: a heading starts a new chunk and is never left dangling at the end of one', () => {
    const md = `# Title\n\n${paragraph(0, 4)}\n\n## Second part\n\n${paragraph(10, 4)}\n\n## Third part\n\n${paragraph(20, 2)}`;
    const chunks = Chunker.chunk(fromMarkdown(md), size);
    expect(chunks.some((c) => c.text.startsWith('Second part'))).toBe(true);
    for (const c of chunks) expect(c.text).not.toMatch(/(Second|Third) part$/);
  });

  test('behavior: a short tail joins the chunk before it only when the two fit in the maximum', () => {
    const chunks = Chunker.chunk(fromPlainText(`${'a'.repeat(460)}\n\n${'b'.repeat(90)}`), size);
    expect(chunks.map((c) => c.text.length)).toEqual([460, 90]);
  });

  test('behavior: a short tail joins the chunk before it', () => {
    const chunks = Chunker.chunk(fromPlainText(`${paragraph(0, 5)}\n\nShort end.`), size);
    expect(chunks.at(-1)!.text.endsWith('Short end.')).toBe(true);
    expect(chunks.at(-1)!.text.length).toBeGreaterThan(50);
  });

  test('behavior: profile tokens are ceil(charCount / 4)', () => {
    expect(Chunker.profileTokens('abcd')).toBe(1);
    expect(Chunker.profileTokens('abcde')).toBe(2);
    expect(Chunker.profileTokens('')).toBe(0);
  });
});

describe('Chunker.chunk for transcripts', () => {
  const cue = (i: number, speaker: string) =>
    `${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}.000 --> ${String(Math.floor((i + 1) / 60)).padStart(2, '0')}:${String((i + 1) % 60).padStart(2, '0')}.000\n<v ${speaker}>${sentence(i)}</v>\n`;

  test('behavior: cuts only between cues and keeps the time span and speaker of each chunk', async () => {
    const vtt = `WEBVTT\n\n${Array.from({ length: 20 }, (_, i) => cue(i, 'Mara Lindqvist')).join('\n')}`;
    const chunks = Chunker.chunk(await fromCaptions(vtt, 'vtt'), size);
    expect(chunks.length).toBeGreaterThan(2);
    let expectedStart = 0;
    for (const c of chunks) {
      expect(c.speaker).toBe('Mara Lindqvist');
      expect(c.startSeconds).toBe(expectedStart);
      const cues = c.text.replace(/^Mara Lindqvist: /, '').split(/(?<=detail\.) /);
      expect(c.endSeconds).toBe(expectedStart + cues.length);
      expectedStart = c.endSeconds!;
    }
    expect(expectedStart).toBe(20);
  });

  test('behavior: names each speaker at their turn and prefers cutting at a change of speaker', async () => {
    const vtt = `WEBVTT\n\n${Array.from({ length: 12 }, (_, i) => cue(i, i < 4 ? 'Host' : 'Guest')).join('\n')}`;
    const chunks = Chunker.chunk(await fromCaptions(vtt, 'vtt'), size);
    expect(chunks[0]!.text.startsWith('Host: ')).toBe(true);
    expect(chunks[0]!.speaker).toBe('Host');
    expect(chunks[0]!.text).not.toContain('Guest:');
    expect(chunks[1]!.text.startsWith('Guest: ')).toBe(true);
  });
});

describe('Transcript parsing', () => {
  test('behavior: WebVTT voice tags give the speaker; markup and entities are cleaned', () => {
    expect(cueText('<v.loud Dr. Ana Ruiz>Salt &amp; <i>flour</i></v>')).toEqual({ text: 'Salt & flour', speaker: 'Dr. Ana Ruiz' });
  });

  const srt = (lines: string[]) => lines.map((text, i) => `${i + 1}\n00:00:0${i},000 --> 00:00:0${i + 1},000\n${text}\n`).join('\n');

  test('behavior: an SRT "Name:" prefix used on several turns gives the speaker, and later cues keep it', async () => {
    const doc = await fromCaptions(srt(['Tomas Reyes: Light matters most.', 'In the morning especially.', 'Ana Ruiz: Agreed.', 'Tomas Reyes: Good.', 'Ana Ruiz: Yes.']), 'srt');
    expect(doc.blocks.map((b) => (b.kind === 'cue' ? [b.speaker, b.text, b.startSeconds, b.endSeconds] : []))).toEqual([
      ['Tomas Reyes', 'Light matters most.', 0, 1],
      ['Tomas Reyes', 'In the morning especially.', 1, 2],
      ['Ana Ruiz', 'Agreed.', 2, 3],
      ['Tomas Reyes', 'Good.', 3, 4],
      ['Ana Ruiz', 'Yes.', 4, 5],
    ]);
  });

  test('behavior: a one-off "Word:" is text, not a speaker', async () => {
    const doc = await fromCaptions(srt(['Host Name: Welcome back.', 'Warning: never feed a cold starter.', 'Host Name: Right.']), 'srt');
    expect(doc.blocks.map((b) => (b.kind === 'cue' ? [b.speaker, b.text] : []))).toEqual([
      ['Host Name', 'Welcome back.'],
      ['Host Name', 'Warning: never feed a cold starter.'],
      ['Host Name', 'Right.'],
    ]);
  });

  test('behavior: a repeated rolling caption line is kept once with its span extended', async () => {
    const vtt = 'WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nsame line\n\n00:00:02.000 --> 00:00:03.000\nsame line\n';
    expect((await fromCaptions(vtt, 'vtt')).blocks).toEqual([{ kind: 'cue', text: 'same line', startSeconds: 0, endSeconds: 3, speaker: undefined }]);
  });
});

describe('Markdown parsing', () => {
  test('behavior: nested lists and multi-block list items keep all their text', () => {
    const doc = fromMarkdown('- Feed the starter\n  - twice a day\n  - keep at 24C\n- Bake\n\n1. first\n\n   > quoted inside item\n\n       code in item\n');
    expect(doc.blocks).toEqual([
      { kind: 'paragraph', text: '- Feed the starter\n  - twice a day\n  - keep at 24C\n- Bake' },
      { kind: 'paragraph', text: '1. first quoted inside item code in item' },
    ]);
  });

  test('behavior: keeps headings, list items and table cells; drops link URLs, emphasis and HTML', () => {
    const doc = fromMarkdown('# My Post\n\nSee [the guide](https://x.example/g) for **details**.<br>\n\n## Steps\n\n1. Mix\n2. Rest\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<div>hidden</div>\n');
    expect(doc.title).toBe('My Post');
    expect(doc.blocks).toEqual([
      { kind: 'paragraph', text: 'See the guide for details.' },
      { kind: 'heading', level: 2, text: 'Steps' },
      { kind: 'paragraph', text: '1. Mix\n2. Rest' },
      { kind: 'paragraph', text: 'a | b\n1 | 2' },
    ]);
  });
});
