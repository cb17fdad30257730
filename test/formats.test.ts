import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as SourceLinks from '../src/answer/SourceLinks.js';
import { label } from '../src/answer/Synthesizer.js';
import * as Charset from '../src/ingest/Charset.js';
import * as Pdf from '../src/ingest/Pdf.js';
import * as Transcript from '../src/ingest/Transcript.js';
import * as Upload from '../src/ingest/Upload.js';
import type { Evidence } from '../src/retrieval/Evidence.js';
import * as Stores from '../src/store/Store.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';
import * as Shared from './support/Shared.js';

/** Where uploaded files are written. */
let directory: string;
let place: Awaited<ReturnType<typeof Engines.fresh>>;
let store: Stores.OpenStore;
let peek: Peek.Peek;
let channelId: string;

beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-formats-'));
  place = await Engines.fresh(Engines.current, 'formats');
  ({ store } = await Stores.open(place.target));
  peek = await Peek.open(place.env);
  const profile = await store.profiles.create({ slug: 'formats', name: 'Formats', visibility: 'public' });
  channelId = (await store.channels.create({ profileId: profile.id, kind: 'user_upload', label: 'Uploads', accessLevel: 'public', ratePerMillionTokens: 1 })).id;
});
afterAll(async () => {
  await peek?.close();
  await store?.close();
  await place?.drop();
  fs.rmSync(directory, { recursive: true, force: true });
});

const read = (file: string) => Charset.decode(fs.readFileSync(file));
const chunksOf = (itemId: string) =>
  peek.all<{ text: string; startSeconds: number | null; endSeconds: number | null; speaker: string | null; pageStart: number | null; pageEnd: number | null }>(
    'SELECT text, start_seconds AS startSeconds, end_seconds AS endSeconds, speaker, page_start AS pageStart, page_end AS pageEnd FROM chunks WHERE item_id = ? ORDER BY ordinal',
    itemId,
  );

describe('transcript formats', () => {
  test('behavior: a Podcasting 2.0 JSON transcript joins word segments into timed cues per speaker', () => {
    const doc = Transcript.fromJsonTranscript(
      JSON.stringify({
        version: '1.0.0',
        segments: [
          { speaker: 'Ada', startTime: 0.5, endTime: 0.8, body: 'Engines' },
          { speaker: 'Ada', startTime: 0.9, endTime: 1.2, body: 'weave.' },
          { speaker: 'Charles', startTime: 1.5, endTime: 2, body: 'Indeed' },
          { startTime: 2.1, endTime: 2.4, body: 'they do.' },
        ],
      }),
    );
    expect(doc.blocks).toEqual([
      { kind: 'cue', text: 'Engines weave.', startSeconds: 0.5, endSeconds: 1.2, speaker: 'Ada' },
      { kind: 'cue', text: 'Indeed they do.', startSeconds: 1.5, endSeconds: 2.4, speaker: 'Charles' },
    ]);
    expect(() => Transcript.fromJsonTranscript('{"segments": "nope"}')).toThrow(/not a JSON transcript/);
    // One malformed segment is skipped; the rest of the transcript stands.
    expect(Transcript.fromJsonTranscript('{"segments": [null, {"startTime": 1, "body": 7}, {"startTime": 2, "endTime": 3, "body": "Kept."}]}').blocks).toEqual([
      { kind: 'cue', text: 'Kept.', startSeconds: 2, endSeconds: 3, speaker: undefined },
    ]);
    expect(() => Transcript.fromJsonTranscript('not json')).toThrow(/not a JSON transcript/);
  });

  test('behavior: a Podcasting 2.0 HTML transcript keeps speakers and times', () => {
    const doc = Transcript.fromHtmlTranscript('<cite>Ada:</cite><time>0:05</time><p>Engines weave.</p><cite>Charles:</cite><time>1:02:03</time><p>Indeed.</p>');
    expect(doc.blocks).toEqual([
      { kind: 'cue', text: 'Engines weave.', startSeconds: 5, endSeconds: 3723, speaker: 'Ada' },
      { kind: 'cue', text: 'Indeed.', startSeconds: 3723, endSeconds: 3723, speaker: 'Charles' },
    ]);
  });

  test('behavior: transcript formats are known by MIME type or extension', () => {
    expect(Transcript.formatOf('text/vtt')).toBe('vtt');
    expect(Transcript.formatOf('application/x-subrip')).toBe('srt');
    expect(Transcript.formatOf('application/json; charset=utf-8')).toBe('json');
    expect(Transcript.formatOf('text/html')).toBe('html');
    expect(Transcript.formatOf(undefined, 'https://x.example/ep1.srt?token=1')).toBe('srt');
    expect(Transcript.formatOf('text/plain', 'https://x.example/ep1.txt')).toBeUndefined();
  });
});

describe.skipIf(!Shared.hasFixtures)('real-world transcripts and PDFs (../shared/fixtures)', () => {
  test.each(Shared.fixtures('transcripts', ['.vtt', '.srt', '.json']).map((f) => [path.basename(f), f]))('behavior: %s parses into timed cues', async (_name, file) => {
    const format = Transcript.formatOf(undefined, file)!;
    const doc = await Transcript.fromTranscript(read(file), format);
    expect(doc.blocks.length).toBeGreaterThan(0);
    for (const b of doc.blocks) {
      expect(b.kind).toBe('cue');
      if (b.kind === 'cue') expect(b.endSeconds).toBeGreaterThanOrEqual(b.startSeconds);
    }
  });

  test('behavior: speakers, times and text come out right on a sample', async () => {
    const vtt = await Transcript.fromTranscript(read(Shared.fixture('transcripts/vtt/podcastindex_example.vtt')), 'vtt');
    expect(vtt.blocks[0]).toMatchObject({ speaker: 'Sarah', startSeconds: 0, text: expect.stringMatching(/^In today's episode/) });
    expect(vtt.blocks.some((b) => b.text.includes('Podcasting Q&A'))).toBe(true);
    const srt = await Transcript.fromTranscript(read(Shared.fixture('transcripts/srt/podcastindex_example.srt')), 'srt');
    expect(srt.blocks[0]).toMatchObject({ speaker: 'Travis', startSeconds: 0.179, text: expect.stringMatching(/^When you first get started/) });
    const utf16 = await Transcript.fromTranscript(read(Shared.fixture('transcripts/srt/astisub_example-in-non-utf8.srt')), 'srt');
    expect(utf16.blocks.length).toBeGreaterThan(0);
    const utf16Text = utf16.blocks.map((b) => b.text).join(' ');
    expect(utf16Text.includes(String.fromCharCode(0)) || utf16Text.includes('\ufffd')).toBe(false);
    const json = Transcript.fromJsonTranscript(read(Shared.fixture('transcripts/json/podcastindex_example.json')));
    expect(json.blocks[0]).toMatchObject({ speaker: 'Darth Vader', startSeconds: 0.5, text: expect.stringMatching(/^I am your father/) });
    const html = Transcript.fromHtmlTranscript(read(Shared.fixture('html/podcastindex_transcript-example.html')));
    expect(html.blocks[0]).toMatchObject({ speaker: 'Travis', startSeconds: 0, text: expect.stringMatching(/^When you first get started in podcasting/) });
    expect(html.blocks.length).toBeGreaterThan(3);
  });

  test.each(Shared.fixtures('pdf', ['.pdf']).map((f) => [path.basename(f), f]))('behavior: %s gives its text page by page', async (_name, file) => {
    const doc = await Pdf.fromPdf(fs.readFileSync(file));
    expect(doc.blocks.length).toBeGreaterThan(0);
    for (const b of doc.blocks) expect(b.kind === 'paragraph' && b.page).toBeGreaterThanOrEqual(1);
  });

  test('behavior: an uploaded PDF keeps page numbers on its chunks; citations name the pages', async () => {
    const file = Shared.fixture('pdf/pysample_pdflatex-4-pages.pdf');
    const stored = await Upload.ingest({ store }, { channelId, file, chunkTargetTokens: 120 });
    const chunks = await chunksOf(stored.itemId);
    expect(new Set(chunks.map((c) => c.pageStart))).toEqual(new Set([1, 2, 3, 4]));
    for (const c of chunks) expect(c.pageEnd).toBeGreaterThanOrEqual(c.pageStart!);
    const crazy = await Upload.ingest({ store }, { channelId, file: Shared.fixture('pdf/pysample_crazyones-pdfa.pdf'), chunkTargetTokens: 320 });
    expect((await chunksOf(crazy.itemId))[0]!.text).toMatch(/^The Crazy Ones/);
  });
});

describe('uploads of HTML, JSON transcripts and PDF', () => {
  const write = (name: string, content: string | Buffer) => {
    const p = path.join(directory, name);
    fs.writeFileSync(p, content);
    return p;
  };

  test('behavior: an HTML page is indexed by its main text and title, without navigation', async () => {
    const body = Array.from({ length: 4 }, (_, i) => `<p>Paragraph ${i} on laminated dough: butter layers, folds and rest times between the turns, explained at length for bakers.</p>`).join('');
    const file = write('lamination.html', `<html><head><title>Lamination</title></head><body><nav>Home Shop Login</nav><article><h2>Folds</h2>${body}</article></body></html>`);
    const stored = await Upload.ingest({ store }, { channelId, file, chunkTargetTokens: 320 });
    expect(stored.title).toBe('Lamination');
    const text = (await chunksOf(stored.itemId)).map((c) => c.text).join('\n');
    expect(text).toContain('Folds');
    expect(text).toContain('butter layers');
    expect(text).not.toContain('Login');
  });

  test('behavior: a JSON or HTML transcript upload keeps speakers and times', async () => {
    const json = write('ep2.json', JSON.stringify({ segments: [{ speaker: 'Ada', startTime: 3, endTime: 5, body: 'Looms weave flowers.' }] }));
    const stored = await Upload.ingest({ store }, { channelId, file: json, chunkTargetTokens: 320 });
    expect((await chunksOf(stored.itemId))[0]).toMatchObject({ text: 'Ada: Looms weave flowers.', startSeconds: 3, endSeconds: 5, speaker: 'Ada' });
    const html = write('ep3.html', '<cite>Ada:</cite><time>0:07</time><p>Engines weave patterns.</p>');
    expect((await chunksOf((await Upload.ingest({ store }, { channelId, file: html, chunkTargetTokens: 320 })).itemId))[0]).toMatchObject({ startSeconds: 7, speaker: 'Ada' });
  });

  test('behavior: an uploaded PDF (the project\'s own) keeps the page each chunk comes from', async () => {
    const file = path.join(import.meta.dirname, 'fixtures', 'pdf', 'field-guide.pdf');
    // Small chunks: the guide's four pages make several.
    const stored = await Upload.ingest({ store }, { channelId, file, chunkTargetTokens: 30 });
    expect(stored).toMatchObject({ outcome: 'created', title: 'Soil Carbon Field Guide' });
    const chunks = await chunksOf(stored.itemId);
    expect([...new Set(chunks.map((c) => c.pageStart))]).toEqual([1, 2, 3, 4]);
    for (const c of chunks) expect(c.pageEnd).toBeGreaterThanOrEqual(c.pageStart!);
    expect(chunks.find((c) => c.text.includes('Bulk density is the dry mass'))).toMatchObject({ pageStart: 3, startSeconds: null });
  });

  test('error: upload checks what would fail every file before any work: missing files, bad --source-url or --published-at', async () => {
    const env = { ...place.env, DEMO_DATA: 'false', LOG_LEVEL: 'silent' };
    await Cli.profileWithChannel(env, { slug: 'uploader', kind: 'user_upload', channelId: 'ch_cli_uploads' });
    const good = write('good.txt', 'Some text.');
    expect(await Cli.run(env, 'upload', '--channel', 'ch_cli_uploads', path.join(directory, 'nope.html'))).toMatchObject({ code: 2, stderr: expect.stringContaining('no such file') });
    expect(await Cli.run(env, 'upload', '--channel', 'ch_cli_uploads', '--source-url', 'ftp://x', good)).toMatchObject({ code: 2, stderr: expect.stringContaining('--source-url must be an http(s) URL') });
    expect(await Cli.run(env, 'upload', '--channel', 'ch_cli_uploads', '--published-at', 'soon', good)).toMatchObject({ code: 2, stderr: expect.stringContaining('--published-at must be a date') });
    expect(await Cli.run(env, 'channels', 'update', 'ch_cli_uploads', '--source-url', 'https://example.com/feed')).toMatchObject({ code: 2, stderr: expect.stringContaining('user_upload channels have no source') });
    const bad = write('bad-upload.json', '{"words": []}');
    const run = await Cli.run(env, 'upload', '--channel', 'ch_cli_uploads', bad);
    expect(run).toMatchObject({ code: 1, stderr: expect.stringContaining('cannot read "bad-upload.json": not a JSON transcript (expected {"segments": [{"startTime", "endTime", "body"}]}; segments: Required)') });
  });

  test('error: a file that is not its format is a 400 naming it, and nothing is written', async () => {
    const before = await peek.value<number>('SELECT count(*) FROM items');
    await expect(Upload.ingest({ store }, { channelId, file: write('broken.json', '{"words": []}'), chunkTargetTokens: 320 })).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('cannot read "broken.json": not a JSON transcript') });
    await expect(Upload.ingest({ store }, { channelId, file: write('broken.pdf', 'not a pdf'), chunkTargetTokens: 320 })).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('not a readable PDF') });
    expect(await peek.value<number>('SELECT count(*) FROM items')).toBe(before);
  });
});

describe('citations and deep links', () => {
  const evidence = (over: Partial<Evidence>) =>
    ({ title: 'Guide', startSeconds: null, pageStart: null, pageEnd: null, scoped: { profile: { name: 'Ada' }, channel: { label: 'Docs' } }, ...over }) as Evidence;

  test('behavior: labels name the pages of a PDF and the moment of a recording', () => {
    expect(label(evidence({ pageStart: 3, pageEnd: 3 }))).toBe('Guide (Ada, Docs, p. 3)');
    expect(label(evidence({ pageStart: 3, pageEnd: 4 }))).toBe('Guide (Ada, Docs, pp. 3–4)');
    expect(label(evidence({ startSeconds: 125 }))).toBe('Guide (Ada, Docs at 2:05)');
  });

  test('behavior: source URLs point at the moment of a YouTube video and the page of a PDF', () => {
    expect(SourceLinks.deepLink('https://www.youtube.com/watch?v=abc123', { startSeconds: 123.9, pageStart: null })).toBe('https://www.youtube.com/watch?v=abc123&t=123s');
    expect(SourceLinks.deepLink('https://youtu.be/abc123', { startSeconds: 5, pageStart: null })).toBe('https://youtu.be/abc123?t=5s');
    expect(SourceLinks.deepLink('https://example.com/guide.pdf', { startSeconds: null, pageStart: 4 })).toBe('https://example.com/guide.pdf#page=4');
    expect(SourceLinks.deepLink('https://example.com/post', { startSeconds: 5, pageStart: null })).toBe('https://example.com/post');
    expect(SourceLinks.deepLink(undefined, { startSeconds: 5, pageStart: null })).toBeUndefined();
  });
});
