import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as Connectors from '../src/sources/Connectors.js';
import type * as Fetcher from '../src/sources/Fetcher.js';
import * as Podcast from '../src/sources/Podcast.js';
import * as Sync from '../src/sources/Sync.js';
import * as Transcriber from '../src/sources/Transcriber.js';
import * as Items from '../src/store/Items.js';
import * as FeedHost from './support/FeedHost.js';
import * as Shared from './support/Shared.js';
import * as Sources from './support/Sources.js';
import * as TranscriptionServer from './support/TranscriptionServer.js';

let host: Awaited<ReturnType<typeof FeedHost.start>>;
let whisper: Awaited<ReturnType<typeof TranscriptionServer.start>>;
let store: Awaited<ReturnType<typeof Sources.store>>;

beforeAll(async () => {
  host = await FeedHost.start();
  whisper = await TranscriptionServer.start();
  store = await Sources.store('podcast');
});
afterAll(async () => {
  await store.close();
  await host.close();
  await whisper.close();
});

const itunes = 'http://www.itunes.com/dtds/podcast-1.0.dtd';
const pc20 = 'https://podcastindex.org/namespace/1.0';
type Episode = { guid: string; title: string; date: string; notes: string; extra?: string };
const feed = (episodes: Episode[]) => `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="${itunes}" xmlns:podcast="${pc20}" xmlns:content="http://purl.org/rss/1.0/modules/content/">
<channel><title>Soil Talk</title><link>${host.url}/show</link><language>en-us</language><itunes:author>Gus Green</itunes:author>
${episodes
  .map(
    (e) => `<item><title>${e.title}</title><guid>${e.guid}</guid><link>${host.url}/show/${e.guid}</link><pubDate>${new Date(e.date).toUTCString()}</pubDate>
  <description><![CDATA[${e.notes}]]></description><enclosure url="${host.url}/audio/${e.guid}.mp3" type="audio/mpeg" length="1000"/>${e.extra ?? ''}</item>`,
  )
  .join('\n')}
</channel></rss>`;

const jsonTranscript = {
  version: '1.0.0',
  segments: [
    { speaker: 'Gus Green', startTime: 0, endTime: 4, body: 'Welcome to Soil Talk.' },
    { speaker: 'Gus Green', startTime: 4, endTime: 9, body: 'Today my guest is Ria Moss.' },
    { speaker: 'Ria Moss', startTime: 9, endTime: 20, body: 'A hot compost pile should reach fifty-five degrees within a week.' },
    { speaker: 'Gus Green', startTime: 60, endTime: 66, body: 'Now, worms.' },
    { speaker: 'Ria Moss', startTime: 66, endTime: 80, body: 'Red wigglers eat half their weight in scraps every day.' },
  ],
};

async function serveShow(id: string, episodes: Episode[]): Promise<void> {
  host.routes.set(`/feeds/${id}.xml`, { body: feed(episodes), type: 'application/rss+xml' });
  await store.store.channels.create({ id, profileId: store.profileId, kind: 'podcast_rss', label: 'Soil Talk', accessLevel: 'public', ratePerMillionTokens: 2, sourceUrl: `${host.url}/feeds/${id}.xml` });
}

const chunksOf = (channelId: string, guid: string) =>
  store.peek.all<{ text: string; startSeconds: number | null; endSeconds: number | null; speaker: string | null }>(
    `SELECT c.text, c.start_seconds AS startSeconds, c.end_seconds AS endSeconds, c.speaker FROM chunks c JOIN items i ON i.id = c.item_id
     WHERE i.channel_id = ? AND i.external_id = ? ORDER BY c.ordinal`,
    channelId,
    guid,
  );
const metadataOf = async (channelId: string, guid: string) => JSON.parse((await store.store.items.metadata(channelId, guid))!);

describe('podcast_rss connector', () => {
  test('behavior: the publisher transcript is preferred, keeps speakers and cue times, and chapters label and bound chunks', async () => {
    host.routes.set('/t/ep1.json', { body: JSON.stringify(jsonTranscript), type: 'application/json' });
    host.routes.set('/t/ep1.srt', { body: '1\n00:00:00,000 --> 00:00:04,000\nA worse transcript.\n', type: 'application/srt' });
    host.routes.set('/c/ep1.json', { body: JSON.stringify({ version: '1.2.0', chapters: [{ startTime: 0, title: 'Hot compost' }, { startTime: 60, title: 'Worm bins' }] }), type: 'application/json+chapters' });
    await serveShow('ch_soil_1', [
      {
        guid: 'ep1',
        title: 'Compost, hot and cold',
        date: '2025-05-01',
        notes: 'Show notes for ep1.',
        extra: `<podcast:transcript url="/t/ep1.srt" type="application/srt"/><podcast:transcript url="/t/ep1.json" type="application/json"/>
          <podcast:chapters url="/c/ep1.json" type="application/json+chapters"/>`,
      },
    ]);
    expect(await Sync.syncChannel(store.deps(), 'ch_soil_1')).toMatchObject({ outcome: 'synced', created: 1, failed: 0 });
    const chunks = await chunksOf('ch_soil_1', 'ep1');
    expect(chunks).toHaveLength(2);
    expect(chunks[0]).toMatchObject({ startSeconds: 0, endSeconds: 20, speaker: 'Ria Moss' });
    expect(chunks[0]!.text).toBe('Hot compost\nGus Green: Welcome to Soil Talk. Today my guest is Ria Moss.\nRia Moss: A hot compost pile should reach fifty-five degrees within a week.');
    expect(chunks[1]).toMatchObject({ startSeconds: 60, endSeconds: 80 });
    expect(chunks[1]!.text).toMatch(/^Worm bins\nGus Green: Now, worms\./);
    expect(await metadataOf('ch_soil_1', 'ep1')).toMatchObject({ text: 'transcript', transcriptFormat: 'json' });
  });

  test('behavior: an episode without a transcript is indexed from its show notes and marked as such; a dead transcript link falls back too', async () => {
    await serveShow('ch_soil_2', [
      { guid: 'ep2', title: 'Leaf mould', date: '2025-05-08', notes: '<p>Leaf mould takes <b>two years</b> to mature.</p>' },
      { guid: 'ep3', title: 'Mulch', date: '2025-05-15', notes: '<p>Mulch in spring.</p>', extra: '<podcast:transcript url="/t/missing.vtt" type="text/vtt"/>' },
    ]);
    expect(await Sync.syncChannel(store.deps(), 'ch_soil_2')).toMatchObject({ created: 2, failed: 0 });
    expect((await chunksOf('ch_soil_2', 'ep2'))[0]).toMatchObject({ text: 'Leaf mould takes two years to mature.', startSeconds: null });
    expect((await metadataOf('ch_soil_2', 'ep2')).text).toBe('show_notes');
    expect((await metadataOf('ch_soil_2', 'ep3')).text).toBe('show_notes');
  });

  test('behavior: with a transcriber configured, an episode without a transcript is transcribed from its audio', async () => {
    host.routes.set('/audio/ep4.mp3', { body: Buffer.alloc(2048, 7), type: 'audio/mpeg' });
    await serveShow('ch_soil_3', [{ guid: 'ep4', title: 'Compost heat', date: '2025-05-22', notes: 'Notes only.' }]);
    const transcriber = Transcriber.openAi({ baseUrl: whisper.url, apiKey: 'sk-whisper', model: 'whisper-1' });
    const deps = store.deps({ connectors: Connectors.create({ transcriber }) });
    expect(await Sync.syncChannel(deps, 'ch_soil_3')).toMatchObject({ created: 1, failed: 0 });
    expect(whisper.requests.at(-1)).toEqual({ model: 'whisper-1', responseFormat: 'verbose_json', fileName: 'ep4.mp3', fileBytes: 2048, authorization: 'Bearer sk-whisper' });
    expect((await chunksOf('ch_soil_3', 'ep4'))[0]).toMatchObject({ text: 'Welcome back to the show. Today we talk about compost heat.', startSeconds: 0, endSeconds: 12 });
    expect((await metadataOf('ch_soil_3', 'ep4')).text).toBe('transcription');
  });

  test('error: a transcription endpoint that is down leaves a new episode on its show notes until it is back; one that refuses it leaves them for good', async () => {
    host.routes.set('/audio/ep5.mp3', { body: Buffer.alloc(512, 1), type: 'audio/mpeg' });
    host.routes.set('/audio/ep6.mp3', { body: Buffer.alloc(512, 2), type: 'audio/mpeg' });
    await serveShow('ch_soil_4', [{ guid: 'ep5', title: 'Bokashi', date: '2025-05-29', notes: 'Bokashi ferments scraps.' }]);
    const deps = store.deps({ connectors: Connectors.create({ transcriber: Transcriber.openAi({ baseUrl: whisper.url, model: 'whisper-1' }) }) });
    whisper.failWith = 503;
    try {
      const down = await Sync.syncChannel(deps, 'ch_soil_4');
      expect(down).toMatchObject({ failed: 0, created: 1, provisional: 1 });
      expect((await metadataOf('ch_soil_4', 'ep5')).text).toBe('show_notes');
      expect((await store.store.channels.get('ch_soil_4')).lastError).toMatch(/1 new items indexed from stand-in text for now.*transcription endpoint answered 503/);
    } finally {
      whisper.failWith = undefined;
    }
    expect(await Sync.syncChannel({ ...deps, now: () => Date.now() + 16 * 60_000 }, 'ch_soil_4')).toMatchObject({ updated: 1, failed: 0, provisional: 0 });
    expect((await metadataOf('ch_soil_4', 'ep5')).text).toBe('transcription');
    expect((await store.store.channels.get('ch_soil_4')).lastError).toBeNull();

    await serveShow('ch_soil_5', [{ guid: 'ep6', title: 'Worm tea', date: '2025-06-05', notes: 'Worm tea is not a fertiliser.' }]);
    whisper.failWith = 400;
    try {
      expect(await Sync.syncChannel(deps, 'ch_soil_5')).toMatchObject({ created: 1, failed: 0 });
    } finally {
      whisper.failWith = undefined;
    }
    expect((await chunksOf('ch_soil_5', 'ep6'))[0]!.text).toBe('Worm tea is not a fertiliser.');
    await expect(Transcriber.openAi({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2_000 }).transcribe(Uint8Array.of(1), { name: 'a.mp3', type: 'audio/mpeg' })).rejects.toThrow(/unreachable/);
  });

  test('error: a transcript host that is down: a new episode stands on its notes, an indexed one keeps its transcript, until it answers', async () => {
    host.routes.set('/t/ep7.vtt', { body: 'WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Gus>Soil is alive.\n', type: 'text/vtt', failFirst: [{ status: 503 }] });
    const episode = { guid: 'ep7', title: 'Living soil', date: '2025-06-12', notes: 'Notes.', extra: '<podcast:transcript url="/t/ep7.vtt" type="text/vtt"/>' };
    await serveShow('ch_soil_6', [episode]);
    expect(await Sync.syncChannel(store.deps(), 'ch_soil_6')).toMatchObject({ created: 1, failed: 0, provisional: 1 });
    expect((await chunksOf('ch_soil_6', 'ep7'))[0]!.text).toBe('Notes.');
    expect((await store.store.channels.get('ch_soil_6')).lastError).toMatch(/transcript unavailable for now/);
    expect(await Sync.syncChannel({ ...store.deps(), now: () => Date.now() + 16 * 60_000 }, 'ch_soil_6')).toMatchObject({ updated: 1, failed: 0, provisional: 0 });
    expect((await chunksOf('ch_soil_6', 'ep7'))[0]).toMatchObject({ text: 'Gus: Soil is alive.', startSeconds: 1 });
    // The episode is edited while the host is down again: it fails, and keeps its transcript.
    host.routes.get('/t/ep7.vtt')!.failFirst = [{ status: 503 }];
    host.routes.set('/feeds/ch_soil_6.xml', { body: feed([{ ...episode, notes: 'Edited notes.' }]), type: 'application/rss+xml' });
    expect(await Sync.syncChannel(store.deps(), 'ch_soil_6')).toMatchObject({ failed: 1, provisional: 0 });
    expect((await chunksOf('ch_soil_6', 'ep7'))[0]!.text).toBe('Gus: Soil is alive.');
  });

  test('error: a transcript whose host does not resolve or refuses connections is recorded on the episode and the channel, and retried with backoff until it arrives', async () => {
    // The name does not resolve: answered by the fetcher's resolver, so the test makes no DNS lookup.
    const resolver: Fetcher.Resolver = (hostname, callback) => (hostname.endsWith('.invalid') ? callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })) : callback(null, [{ address: '127.0.0.1', family: 4 }]));
    const fetcher = Sources.fetcher({ resolver });
    let clock = Date.parse('2025-07-01T00:00:00Z');
    const deps = store.deps({ fetcher, now: () => clock });
    const vtt = 'WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Gus>Roots need air.\n';
    const episodes = [
      { guid: 'ep9', title: 'Roots', date: '2025-06-26', notes: 'Notes on roots.', extra: '<podcast:transcript url="http://transcripts.invalid/ep9.vtt" type="text/vtt"/>' },
      { guid: 'ep10', title: 'Air', date: '2025-06-27', notes: 'Notes on air.', extra: '<podcast:transcript url="http://127.0.0.1:9/ep10.vtt" type="text/vtt"/>' },
    ];
    await serveShow('ch_soil_9', episodes);
    const first = await Sync.syncChannel(deps, 'ch_soil_9');
    expect(first).toMatchObject({ created: 2, failed: 0, provisional: 2 });
    expect(first.errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^ep10: transcript unavailable for now \(could not fetch: connect ECONNREFUSED.*\) \(tried 1 times; next after 2025-07-01T00:15:00\.000Z\)$/),
        expect.stringMatching(/^ep9: transcript unavailable for now \(could not fetch: getaddrinfo ENOTFOUND transcripts\.invalid\) \(tried 1 times; next after 2025-07-01T00:15:00\.000Z\)$/),
      ]),
    );
    expect(await metadataOf('ch_soil_9', 'ep9')).toMatchObject({ text: 'show_notes', pendingText: { attempts: 1, reason: expect.stringMatching(/ENOTFOUND/), next: clock + 15 * 60_000 } });
    expect((await store.store.channels.get('ch_soil_9')).lastError).toMatch(/2 new items indexed from stand-in text for now, their real text retried with backoff/);
    expect((await store.store.items.textNotes('ch_soil_9')).get(Items.itemId('ch_soil_9', 'ep9'))).toMatch(/^stand-in text; transcript unavailable for now .*ENOTFOUND.*; next try after 2025-07-01T00:15:00\.000Z$/);

    // Before its time nothing is fetched; after it, each failure doubles the wait.
    const asked = () => host.requests.length;
    clock += 5 * 60_000;
    const early = await Sync.syncChannel(deps, 'ch_soil_9');
    expect(early).toMatchObject({ provisional: 2, updated: 0, unchanged: 2 });
    clock += 11 * 60_000;
    const due = await Sync.syncChannel(deps, 'ch_soil_9');
    expect(due, JSON.stringify(due)).toMatchObject({ provisional: 2 });
    expect((await metadataOf('ch_soil_9', 'ep9')).pendingText).toMatchObject({ attempts: 2, next: clock + 30 * 60_000 });

    // The transcript arrives for one (its host is up again); the other is given up on after 30 days, and says so.
    episodes[1]!.extra = '<podcast:transcript url="/t/ep10.vtt" type="text/vtt"/>';
    host.routes.set('/t/ep10.vtt', { body: vtt.replace('Roots need air', 'Air reaches roots'), type: 'text/vtt' });
    host.routes.set('/feeds/ch_soil_9.xml', { body: feed(episodes), type: 'application/rss+xml' });
    const before = asked();
    clock += 31 * 60_000;
    expect(await Sync.syncChannel(deps, 'ch_soil_9')).toMatchObject({ updated: 1, provisional: 1 });
    expect(asked() - before).toBeGreaterThan(1);
    expect((await chunksOf('ch_soil_9', 'ep10'))[0]).toMatchObject({ text: 'Gus: Air reaches roots.', startSeconds: 1 });
    expect((await metadataOf('ch_soil_9', 'ep10')).pendingText).toBeUndefined();
    clock += 31 * 24 * 3_600_000;
    const last = await Sync.syncChannel(deps, 'ch_soil_9');
    expect(last).toMatchObject({ provisional: 0, gaveUp: 1 });
    expect(await metadataOf('ch_soil_9', 'ep9')).toMatchObject({ text: 'show_notes', textUnavailable: expect.stringMatching(/ENOTFOUND.*gave up after 4 tries since 2025-07-01T00:00:00\.000Z/) });
    expect((await store.store.channels.get('ch_soil_9')).lastError).toMatch(/1 items keep their stand-in text for good; first: ep9/);
    // Given up, it is read again only when its entry changes.
    expect((await Sync.syncChannel(deps, 'ch_soil_9')).outcome).toBe('unchanged');
  });

  test('behavior: an HTML transcript that is a plain page is read as text, not as timed cues', async () => {
    const page = `<html><head><title>Transcript</title></head><body><article><h1>Transcript</h1>${Array.from({ length: 3 }, () => '<p>Compost needs air, water and a mix of greens and browns, turned every week or two.</p>').join('')}</article></body></html>`;
    host.routes.set('/t/ep8.html', { body: page, type: 'text/html' });
    await serveShow('ch_soil_7', [{ guid: 'ep8', title: 'Turning', date: '2025-06-19', notes: 'Notes.', extra: '<podcast:transcript url="/t/ep8.html" type="text/html"/>' }]);
    expect(await Sync.syncChannel(store.deps(), 'ch_soil_7')).toMatchObject({ created: 1 });
    expect((await chunksOf('ch_soil_7', 'ep8'))[0]).toMatchObject({ startSeconds: null, text: expect.stringContaining('Compost needs air') });
  });

  test('error: TRANSCRIBER=openai needs a key for api.openai.com and an http(s) endpoint', () => {
    expect(() => Config.load({ TRANSCRIBER: 'openai' })).toThrow(/TRANSCRIBE_API_KEY: required/);
    expect(() => Config.load({ TRANSCRIBER: 'openai', TRANSCRIBE_BASE_URL: 'ftp://whisper.example/v1' })).toThrow(/TRANSCRIBE_BASE_URL: must be an http\(s\) URL/);
    expect(Config.load({ TRANSCRIBER: 'openai', TRANSCRIBE_BASE_URL: 'http://127.0.0.1:9000/v1' }).transcription).toMatchObject({ provider: 'openai', apiKey: undefined, maxBytes: 26_214_400 });
  });

  test('behavior: transcript links are ranked by language, then by richness', () => {
    const raw = {
      podcast: {
        transcripts: [
          { url: '/a.srt', type: 'application/srt' },
          { url: '/b.vtt', type: 'text/vtt', language: 'es' },
          { url: '/c.json', type: 'application/json', language: 'en' },
          { url: '/d.txt', type: 'text/plain' },
        ],
      },
    };
    expect(Podcast.transcriptLinks(raw, 'https://x.example/feed', 'en-us').map((l) => l.url)).toEqual([
      'https://x.example/c.json',
      'https://x.example/a.srt',
      'https://x.example/d.txt',
      'https://x.example/b.vtt',
    ]);
  });
});

describe.skipIf(!Shared.hasFixtures)('real-world podcast feeds (../shared/fixtures/podcast)', () => {
  test.each(Shared.fixtures('podcast', ['.xml', '.rss']).filter((f) => !f.includes('schema-podcast-example')).map((f) => [path.basename(f), f]))(
    'behavior: %s syncs every episode without a failure',
    async (name, file) => {
      const id = `ch_fx_${name.replace(/[^a-z0-9]/gi, '_').toLowerCase().slice(0, 40)}`;
      host.routes.set(`/fixtures/${name}`, { body: fs.readFileSync(file), type: 'application/rss+xml' });
      await store.store.channels.create({ id, profileId: store.profileId, kind: 'podcast_rss', label: name, accessLevel: 'public', ratePerMillionTokens: 1, sourceUrl: `${host.url}/fixtures/${name}` });
      // Transcript, chapter and article links name real hosts: tests stay on loopback, so those fall back to notes.
      const report = await Sync.syncChannel(store.deps({ fetcher: Sources.loopbackOnly() }), id);
      expect(report.outcome).toBe('synced');
      // Every episode is indexed, or named as having no text (neither transcript nor notes), never failed.
      expect(report).toMatchObject({ failed: 0, provisional: 0, errors: [] });
      expect(report.created + report.empty).toBeGreaterThan(0);
    },
  );

  test('behavior: real JSON chapters label the cues they start at', () => {
    const chapters = Podcast.parseChapters(fs.readFileSync(Shared.fixture('chapters/podcastindex_example.json'), 'utf8'));
    expect(chapters.slice(0, 3)).toEqual([
      { startSeconds: 0, title: 'Intro' },
      { startSeconds: 168, title: 'Hearing Aids' },
      { startSeconds: 260, title: 'Progress Report' },
    ]);
    const doc = Podcast.withChapters({ blocks: [{ kind: 'cue', text: 'a', startSeconds: 0, endSeconds: 5 }, { kind: 'cue', text: 'b', startSeconds: 170, endSeconds: 175 }] }, chapters);
    expect(doc.blocks.map((b) => b.text)).toEqual(['Intro', 'a', 'Hearing Aids', 'b']);
  });

  test('behavior: a real Podcasting 2.0 feed: episodes, titles, dates and show notes', async () => {
    const items = await store.store.items.byChannel('ch_fx_partytime_pc20rss_xml');
    expect(items).toHaveLength(56);
    const latest = items[0]!;
    expect(latest).toMatchObject({ title: 'Episode 57: Rebel Rubes', externalId: 'PC2057', publishedAt: Date.parse('2021-10-08T18:55:32Z') });
    expect(JSON.parse((await store.store.items.metadata(latest.channelId, latest.externalId))!).text).toBe('show_notes');
  });
});
