import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Chunker from '../src/ingest/Chunker.js';
import * as Transcript from '../src/ingest/Transcript.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import type * as Items from '../src/store/Items.js';
import * as Tools from '../tools/Tools.js';
import * as Environment from './support/Environment.js';

/** Transcript citations point at the cue where the cited sentence is spoken, not at the start of its chunk. */

const vtt = `WEBVTT

00:00:02.000 --> 00:00:09.000
<v Priya Natarajan>Welcome back to the show. Today we talk about kettles and the water that goes in them.

00:00:09.000 --> 00:00:31.000
<v Priya Natarajan>Most of the mail this week was about limescale, and about the noise an old kettle makes.

00:01:05.000 --> 00:01:20.000
<v Priya Natarajan>Descale a kettle with citric acid once a month if you live in a hard-water area.

00:01:20.000 --> 00:01:40.000
<v Priya Natarajan>Vinegar works too, but it leaves a smell that takes several boils to clear.
`;

let environment: Environment.Environment;
let chunks: Items.ChunkDraft[];

beforeAll(async () => {
  chunks = Chunker.chunk(await Transcript.fromCaptions(vtt, 'vtt'), Chunker.sizes(320));
  environment = await Environment.create();
  const { store } = environment.services;
  const profile = await store.profiles.create({ slug: 'kettle-hour', name: 'Kettle Hour', visibility: 'unlisted' });
  const channel = await store.channels.create({ profileId: profile.id, kind: 'youtube', label: 'Videos', accessLevel: 'public', ratePerMillionTokens: 1 });
  await store.items.put(SearchTerms.indexed({ channelId: channel.id, externalId: 'kettle-ep', title: 'Kettle care', sourceUrl: 'https://www.youtube.com/watch?v=kettle123', contentHash: 'ep-v1', chunks }));
}, 60_000);

afterAll(async () => environment?.close());

describe('cue offsets', () => {
  test('behavior: a transcript chunk keeps where each cue starts in its text, with the cue’s time', () => {
    expect(chunks).toHaveLength(1);
    const [chunk] = chunks;
    expect(chunk!.cues!.map(([, seconds]) => seconds)).toEqual([2, 9, 65, 80]);
    const at = (seconds: number) => chunk!.text.slice(chunk!.cues!.find(([, s]) => s === seconds)![0]);
    expect(at(65)).toMatch(/^Descale a kettle with citric acid/);
    expect(at(80)).toMatch(/^Vinegar works too/);
    expect(at(2)).toMatch(/^Welcome back/);
  });

  test('behavior: the citation of a sentence spoken at 1:05 says 1:05, carries startSeconds 65 and links the video at 65s', async () => {
    const r = (await Tools.invoke({
      services: environment.services,
      name: 'profile_query',
      args: { question: 'How often should I descale a kettle with citric acid in a hard-water area?', paymentMode: 'credits' },
      presented: { apiKey: environment.keys.callerKey, origin: 'test' },
      binding: { kind: 'profile', slug: 'kettle-hour' },
    })) as any;
    expect(r.answer).toMatch(/Descale a kettle with citric acid once a month/);
    const [citation] = r.citations;
    expect(citation.startSeconds).toBe(65);
    expect(citation.label).toMatch(/at 1:05\)$/);
    expect(citation.sourceUrl).toBe('https://www.youtube.com/watch?v=kettle123&t=65s');
    // The raw chunk still starts where the chunk starts.
    expect(r.retrieval.sources[0].sourceUrl).toBe('https://www.youtube.com/watch?v=kettle123');
  });
});
