import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ServiceError, toServiceError } from '../src/errors/ServiceError.js';
import * as Charset from '../src/ingest/Charset.js';
import * as Transcript from '../src/ingest/Transcript.js';
import * as Upload from '../src/ingest/Upload.js';
import * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import * as Shared from './support/Shared.js';

/** Each cue as [start, end, text], times rounded to the millisecond. */
async function cues(content: string, format: 'srt' | 'vtt'): Promise<[number, number, string][]> {
  const ms = (seconds: number) => Math.round(seconds * 1000) / 1000;
  return (await Transcript.fromCaptions(content, format)).blocks.flatMap((b) => (b.kind === 'cue' ? [[ms(b.startSeconds), ms(b.endSeconds), b.text] as [number, number, string]] : []));
}

/** The error a caption file is rejected with. */
async function rejection(content: string, format: 'srt' | 'vtt'): Promise<unknown> {
  return Transcript.fromCaptions(content, format).then(
    () => expect.unreachable('the file was read'),
    (error: unknown) => error,
  );
}

const fixture = (name: string) => Charset.decode(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'captions', name)));

describe('SRT cue timings as players accept them', () => {
  const srt = (timing: string) => `1\n${timing}\nFirst words.\n\n2\n00:00:05,000 --> 00:00:06,000\nSecond words.\n`;

  test.each([
    ['one-digit seconds', '00:00:0,000 --> 00:00:2,500', 0, 2.5],
    ['one-digit fields throughout', '0:0:1,000 --> 0:0:2,000', 1, 2],
    ['a full stop before the milliseconds', '00:00:01.000 --> 00:00:02.000', 1, 2],
    ['no hours', '00:01,000 --> 00:02,500', 1, 2.5],
    ['no milliseconds', '00:00:01 --> 00:00:02', 1, 2],
    ['one or two digits after the separator, a fraction of a second', '00:00:01,5 --> 00:00:02,25', 1.5, 2.25],
    ['extra spaces and tabs', '  00:00:01,000   -->\t00:00:02,000  ', 1, 2],
    ['no spaces around the arrow', '00:00:01,000-->00:00:02,000', 1, 2],
    ['hours past the first', '1:02:03,004 --> 1:02:04,000', 3723.004, 3724],
  ])('behavior: a timing with %s gives the cue its times and clean text', async (_name, timing, start, end) => {
    expect(await cues(srt(timing), 'srt')).toEqual([
      [start, end, 'First words.'],
      [5, 6, 'Second words.'],
    ]);
  });

  test.each([
    ['after one space', '00:00:01,000 --> 00:00:02,000 X1:40 X2:600 Y1:20 Y2:50'],
    ['in lower case after two spaces', '00:00:01,000 --> 00:00:02,000  x1:40 x2:600 y1:20 y2:50'],
    ['right after the end time', '00:00:01,000 --> 00:00:02,000X1:40 X2:600 Y1:20 Y2:50'],
    ['on a lenient timing', '0:0:1,0-->0:0:2,0 X1:040 X2:600 Y1:020 Y2:050 '],
  ])('behavior: position coordinates %s are never cue text', async (_name, timing) => {
    const read = await cues(srt(timing), 'srt');
    expect(read[0]).toEqual([1, 2, 'First words.']);
    for (const [, , text] of read) expect(text).not.toMatch(/[XY][12]:/i);
  });

  test('behavior: a cue with no blank line before it still starts at its timing, and its index is not text', async () => {
    const file = '1\n00:00:01,000 --> 00:00:02,000\nFirst.\n2\n00:00:03,000 --> 00:00:04,000\nSecond.\n   \n3\n00:00:05,000 --> 00:00:06,000\nThird.\n';
    expect(await cues(file, 'srt')).toEqual([
      [1, 2, 'First.'],
      [3, 4, 'Second.'],
      [5, 6, 'Third.'],
    ]);
  });

  test('behavior: an SRT without cue numbers reads the same', async () => {
    expect(await cues('00:00:01,000 --> 00:00:02,000\nFirst.\n\n00:00:03,000 --> 00:00:04,000\nSecond.\n', 'srt')).toEqual([
      [1, 2, 'First.'],
      [3, 4, 'Second.'],
    ]);
  });

  test('behavior: a cue whose timing cannot be read is skipped, as players skip it; the others stand', async () => {
    expect(await cues('1\n00:00:01,000 -> 00:00:02,000\nLost.\n\n2\n00:00:03,000 --> 00:00:04,000\nKept.\n', 'srt')).toEqual([[3, 4, 'Kept.']]);
  });
});

describe('WebVTT cue timings as the WebVTT parser collects them', () => {
  const vtt = (timing: string) => `WEBVTT\n\n${timing}\nFirst words.\n\n00:00:05.000 --> 00:00:06.000\nSecond words.\n`;

  test.each([
    ['settings right after the end time', '00:00.000 --> 00:02.000align:start', 0, 2],
    ['no spaces around the arrow', '00:00:01.000-->00:00:02.000 line:0', 1, 2],
    ['several settings, the first unspaced', '00:00:01.000 --> 00:00:02.000position:10%,line-left size:50%', 1, 2],
    ['a one-digit hour', '0:00:01.000 --> 0:00:02.000', 1, 2],
    ['tabs around everything', '\t00:00:01.000\t-->\t00:00:02.000\tline:0', 1, 2],
    ['a comma and a short fraction, as players allow', '00:01.5 --> 00:02,25', 1.5, 2.25],
  ])('behavior: a timing with %s gives the cue its times and clean text', async (_name, timing, start, end) => {
    expect(await cues(vtt(timing), 'vtt')).toEqual([
      [start, end, 'First words.'],
      [5, 6, 'Second words.'],
    ]);
  });

  test('behavior: a timing line right under the header or under the last cue text starts a new cue', async () => {
    const file = 'WEBVTT\nKind: captions\nLanguage: en\n00:00:01.000 --> 00:00:02.000\nFirst.\n00:00:03.000 --> 00:00:04.000 align:start\nSecond.\n';
    expect(await cues(file, 'vtt')).toEqual([
      [1, 2, 'First.'],
      [3, 4, 'Second.'],
    ]);
  });

  test('behavior: an SRT saved as .vtt (numbered cues, commas) reads as captions', async () => {
    expect(await cues('1\n00:00:01,000 --> 00:00:02,000\nFirst.\n\n2\n00:00:03,000 --> 00:00:04,000\nSecond.\n', 'vtt')).toEqual([
      [1, 2, 'First.'],
      [3, 4, 'Second.'],
    ]);
  });

  test('behavior: the web-platform-tests "arrows" file gives the six cues browsers show, without its stray arrows', async () => {
    expect(await cues(fixture('wpt_arrows.vtt'), 'vtt')).toEqual(['text1', 'text2', 'text3', 'text4', 'text5', 'text6'].map((text) => [0, 1, text]));
  });
});

describe('caption files with no readable cue', () => {
  test('error: an SRT names the line where a timing belonged and the form expected there', async () => {
    const error = await rejection('1\n00:00:0,000 -> 00:00:02\nHello there.\n', 'srt');
    expect(error).toBeInstanceOf(Transcript.TranscriptError);
    expect((error as Error).message).toBe('line 2: "00:00:0,000 -> 00:00:02" is not a cue timing (expected HH:MM:SS,mmm --> HH:MM:SS,mmm)');
  });

  test('error: a WebVTT file counts its header and comments, and names the cue line after them', async () => {
    const error = await rejection('WEBVTT\n\nNOTE made by hand\n\nintro\n00:00:01 - 00:00:02\nHello there.\n', 'vtt');
    expect((error as Error).message).toBe('line 6: "00:00:01 - 00:00:02" is not a cue timing (expected HH:MM:SS.mmm --> HH:MM:SS.mmm)');
  });

  test('error: a misspelt timing right under the WebVTT header is named', async () => {
    const error = await rejection('WEBVTT\n00.00.01.000 --> 00.00.02.000\nHello there.\n', 'vtt');
    expect((error as Error).message).toMatch(/^line 2: "00\.00\.01\.000 --> 00\.00\.02\.000" is not a cue timing/);
  });

  test('error: plain text saved as captions is named at its first line', async () => {
    const error = await rejection('Welcome to the show.\nToday we talk about bread.\n', 'srt');
    expect((error as Error).message).toMatch(/^line 2: "Today we talk about bread\." is not a cue timing/);
    expect(((await rejection('Welcome to the show.\n', 'srt')) as Error).message).toMatch(/^line 1: "Welcome to the show\." is not a cue timing/);
  });

  test('error: cues that end before they start are named as such', async () => {
    const error = await rejection('1\n00:00:05,000 --> 00:00:04,000\nBackwards.\n', 'srt');
    expect((error as Error).message).toBe('line 2: "00:00:05,000 --> 00:00:04,000" ends no later than it starts');
  });

  test('behavior: an empty file or a lone WebVTT header is no error, only no cues', async () => {
    expect(await cues('', 'srt')).toEqual([]);
    expect(await cues('\uFEFFWEBVTT\n\nNOTE nothing yet\n', 'vtt')).toEqual([]);
  });

  describe('wherever it surfaces', () => {
    let place: Awaited<ReturnType<typeof Engines.fresh>>;
    let store: Stores.OpenStore;
    let channelId: string;
    beforeAll(async () => {
      place = await Engines.fresh(Engines.current, 'captions');
      ({ store } = await Stores.open(place.target));
      const profile = await store.profiles.create({ slug: 'captions', name: 'Captions', visibility: 'public' });
      channelId = (await store.channels.create({ profileId: profile.id, kind: 'user_upload', label: 'Uploads', accessLevel: 'public', ratePerMillionTokens: 1 })).id;
    });
    afterAll(async () => {
      await store?.close();
      await place?.drop();
    });

    test('error: the reason is a 400 invalid_request, never an internal error', async () => {
      const bad = '1\n00:00:0,000 -> 00:00:02\nHello there.\n';
      // Raised directly (the yt-dlp caption import calls the parser itself).
      const raised = toServiceError(await rejection(bad, 'vtt'));
      expect([raised.code, raised.status]).toEqual(['invalid_request', 400]);
      // Through an upload, which names the file.
      const uploaded = await Upload.ingest({ store }, { channelId, file: 'talk.srt', content: bad, chunkTargetTokens: 320 }).catch((error: unknown) => error);
      expect(uploaded).toBeInstanceOf(ServiceError);
      expect(uploaded).toMatchObject({
        code: 'invalid_request',
        message: 'cannot read "talk.srt": line 2: "00:00:0,000 -> 00:00:02" is not a cue timing (expected HH:MM:SS,mmm --> HH:MM:SS,mmm)',
      });
    });
  });
});

describe.skipIf(!Shared.hasFixtures)('real-world caption files (../shared/fixtures)', () => {
  test.each(Shared.fixtures('transcripts', ['.vtt', '.srt']).map((f) => [path.basename(f), f]))('behavior: %s has no timing, setting or coordinate in its cue text', async (_name, file) => {
    const format = file.endsWith('.srt') ? 'srt' : 'vtt';
    const read = await cues(Charset.decode(fs.readFileSync(file)), format);
    expect(read.length).toBeGreaterThan(0);
    for (const [, , text] of read) expect(text).not.toMatch(/-->|\b[XY][12]:\d|\b(?:align|position|line|size):\S/);
  });

  test('behavior: the astisub example keeps its positioned cue, timed, without its coordinates', async () => {
    const read = await cues(Charset.decode(fs.readFileSync(Shared.fixture('transcripts/srt/astisub_example-in-bom.srt'))), 'srt');
    expect(read[1]).toEqual([124.08, 127.12, 'MAN: How did we end up here?']);
  });
});
