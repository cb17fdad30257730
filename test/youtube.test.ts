import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import * as Connectors from '../src/sources/Connectors.js';
import * as Sync from '../src/sources/Sync.js';
import * as Youtube from '../src/sources/Youtube.js';
import * as Tools from '../tools/Tools.js';
import * as Services from '../src/Services.js';
import * as Config from '../src/config/Config.js';
import * as Keys from '../src/auth/Keys.js';
import * as Items from '../src/store/Items.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as FeedHost from './support/FeedHost.js';
import * as Shared from './support/Shared.js';
import * as Sources from './support/Sources.js';

let host: Awaited<ReturnType<typeof FeedHost.start>>;
let store: Awaited<ReturnType<typeof Sources.store>>;
let directory: string;
/** The operator's store, filled through the CLI (an import) and read by a query. */
let cliPlace: Awaited<ReturnType<typeof Engines.fresh>>;

const channelId = 'UCbakingbakingbaking01';
const videos = [
  { id: 'vid_levain1', title: 'Levain in 5 days', date: '2025-03-01', description: 'How to build a levain from flour and water.' },
  { id: 'vid_nocapt2', title: 'Oven spring Q&amp;A', date: '2025-02-01', description: 'Questions about oven spring, answered live.' },
];

const atom = () => `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns:yt="http://www.youtube.com/xml/schemas/2015" xmlns:media="http://search.yahoo.com/mrss/" xmlns="http://www.w3.org/2005/Atom">
<id>yt:channel:${channelId}</id><yt:channelId>${channelId}</yt:channelId><title>Crumb TV</title>
<link rel="alternate" href="https://www.youtube.com/channel/${channelId}"/><author><name>Crumb TV</name></author>
${videos
  .map(
    (v) => `<entry><id>yt:video:${v.id}</id><yt:videoId>${v.id}</yt:videoId><yt:channelId>${channelId}</yt:channelId><title>${v.title}</title>
<link rel="alternate" href="https://www.youtube.com/watch?v=${v.id}"/><author><name>Crumb TV</name></author><published>${v.date}T10:00:00+00:00</published>
<media:group><media:title>${v.title}</media:title><media:description>${v.description}</media:description></media:group></entry>`,
  )
  .join('\n')}
</feed>`;

const timedText = `<?xml version="1.0" encoding="utf-8" ?><transcript>
<text start="0" dur="4.5">Day one: equal weights of flour and water.</text>
<text start="4.5" dur="5">Keep it at &amp;#39;room temperature&amp;#39;, around 24 degrees.</text>
<text start="95" dur="6">By day five the levain doubles in four hours.</text></transcript>`;

beforeAll(async () => {
  host = await FeedHost.start();
  store = await Sources.store('youtube');
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-youtube-'));
  cliPlace = await Engines.fresh(Engines.current, 'youtube-cli');
  host.routes.set(`/feeds/videos.xml?channel_id=${channelId}`, { body: atom(), type: 'application/atom+xml' });
  host.routes.set('/@crumbtv', { body: `<html><head><link rel="canonical" href="https://www.youtube.com/channel/${channelId}"></head></html>`, type: 'text/html' });
  host.routes.set('/youtubei/v1/player?prettyPrint=false', {
    body: '',
    respond: (request) => {
      const { videoId } = JSON.parse(request.body) as { videoId: string };
      const tracks =
        videoId === 'vid_levain1'
          ? [
              { baseUrl: `${host.url}/api/timedtext?v=${videoId}&lang=en&kind=asr&fmt=srv3`, languageCode: 'en', kind: 'asr' },
              { baseUrl: `${host.url}/api/timedtext?v=${videoId}&lang=en&fmt=srv3`, languageCode: 'en' },
              { baseUrl: `${host.url}/api/timedtext?v=${videoId}&lang=de&fmt=srv3`, languageCode: 'de' },
            ]
          : [];
      return { body: JSON.stringify({ playabilityStatus: { status: 'OK' }, captions: tracks.length ? { playerCaptionsTracklistRenderer: { captionTracks: tracks } } : undefined }), type: 'application/json' };
    },
  });
  host.routes.set('/api/timedtext?v=vid_levain1&lang=en', { body: timedText, type: 'text/xml' });
});
afterAll(async () => {
  await store.close();
  await cliPlace.drop();
  await host.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

const deps = () => store.deps({ connectors: Connectors.create({ youtubeBaseUrl: host.url }) });
const chunksOf = async (channel: string, videoId: string) => (await store.store.items.withChunks(Items.itemId(channel, videoId)))?.chunks ?? [];
const metadataOf = async (channel: string, videoId: string) => JSON.parse((await store.store.items.metadata(channel, videoId))!);

describe('youtube connector', () => {
  test('behavior: a channel page is found through its feed; captions are read from the creator track with cue times', async () => {
    await store.store.channels.create({ id: 'ch_crumb', profileId: store.profileId, kind: 'youtube', label: 'Crumb TV', accessLevel: 'public', ratePerMillionTokens: 3, sourceUrl: `${host.url}/@crumbtv` });
    expect(await Sync.syncChannel(deps(), 'ch_crumb')).toMatchObject({ outcome: 'synced', created: 2, failed: 0 });
    const items = await store.store.items.byChannel('ch_crumb');
    expect(items.map((i) => [i.externalId, i.title, i.sourceUrl])).toEqual([
      ['vid_levain1', 'Levain in 5 days', 'https://www.youtube.com/watch?v=vid_levain1'],
      ['vid_nocapt2', 'Oven spring Q&A', 'https://www.youtube.com/watch?v=vid_nocapt2'],
    ]);
    const captions = await chunksOf('ch_crumb', 'vid_levain1');
    expect(captions[0]).toMatchObject({ startSeconds: 0 });
    expect(captions[0]!.text).toContain("Keep it at 'room temperature', around 24 degrees.");
    expect(await metadataOf('ch_crumb', 'vid_levain1')).toMatchObject({ text: 'captions', track: 'en' });
    // No captions: the description stands in, marked as such.
    expect((await chunksOf('ch_crumb', 'vid_nocapt2'))[0]!.text).toBe('Questions about oven spring, answered live.');
    expect((await metadataOf('ch_crumb', 'vid_nocapt2')).text).toBe('description');
    expect((await Sync.syncChannel(deps(), 'ch_crumb')).outcome).toBe('unchanged');
  });

  test('behavior: captions saved by yt-dlp are imported for a video, and later syncs keep them', async () => {
    const env = { ...cliPlace.env, DEMO_DATA: 'false', LOG_LEVEL: 'silent' };
    await Cli.profileWithChannel(env, { slug: 'crumb', kind: 'youtube', channelId: 'ch_cli_crumb' });
    const file = path.join(directory, 'Oven spring Q&A [vid_nocapt2].en.vtt');
    fs.writeFileSync(file, 'WEBVTT\n\n00:00:10.000 --> 00:00:14.000\nOven spring comes from steam and a hot deck.\n');
    expect(await Cli.run(env, 'import', '--channel', 'ch_cli_crumb', file)).toMatchObject({ code: 0, stdout: expect.stringContaining('1 new') });

    // The same in the sync store, then a sync: the imported captions are kept over the description.
    const stored = Sync.syncChannel(deps(), 'ch_crumb', {
      listing: {
        entries: [
          {
            externalId: 'vid_nocapt2',
            version: 'import-1',
            load: async () => ({ title: 'Oven spring Q&A', document: { blocks: [{ kind: 'cue', text: 'Oven spring comes from steam and a hot deck.', startSeconds: 10, endSeconds: 14 }] }, metadata: { text: Youtube.importedCaptions } }),
          },
        ],
        coverage: { kind: 'partial', reason: 'captions only' },
        state: {},
      },
    });
    expect(await stored).toMatchObject({ updated: 1 });
    videos[1]!.description = 'An edited description.';
    host.routes.get(`/feeds/videos.xml?channel_id=${channelId}`)!.body = atom();
    expect(await Sync.syncChannel(deps(), 'ch_crumb')).toMatchObject({ outcome: 'synced', unchanged: 2 });
    expect((await chunksOf('ch_crumb', 'vid_nocapt2'))[0]).toMatchObject({ text: 'Oven spring comes from steam and a hot deck.', startSeconds: 10 });

    const noId = path.join(directory, 'captions.vtt');
    fs.writeFileSync(noId, 'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHi.\n');
    expect(await Cli.run(env, 'import', '--channel', 'ch_cli_crumb', noId)).toMatchObject({ code: 2, stderr: expect.stringContaining('no video id') });
    expect((await Cli.run(env, 'import', '--channel', 'ch_cli_crumb', '--video', 'abcdefghijk', noId)).code).toBe(0);
  });

  test('behavior: answers from captions link to the moment in the video', async () => {
    const env = { ...cliPlace.env, DEMO_DATA: 'false', LOG_LEVEL: 'silent' };
    const services = await Services.create(Config.load(env));
    try {
      const account = await services.store.accounts.create({ name: 'viewer' });
      await services.store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 100 });
      const key = (await Keys.issue(services.store, { kind: 'api_key', accountId: account.id })).token;
      const r = (await Tools.invoke({
        services,
        name: 'profile_query',
        args: { question: 'Where does oven spring come from?', mode: 'raw', paymentMode: 'credits' },
        presented: { apiKey: key, origin: 'test' },
        binding: { kind: 'profile', slug: 'crumb' },
      })) as { chunks: { sourceUrl?: string; startSeconds?: number }[] };
      expect(r.chunks[0]).toMatchObject({ startSeconds: 10, sourceUrl: 'https://www.youtube.com/watch?v=vid_nocapt2&t=10s' });
    } finally {
      await services.close();
    }
  });

  test('error: the caption endpoint failing for a while leaves a new video on its description until it answers; refusing it leaves it for good', async () => {
    const id = 'ch_crumb_failures';
    const videoIds = ['vid_503xxxx', 'vid_404xxxx'];
    const feed = `/feeds/videos.xml?channel_id=UCfailuresfailures01`;
    host.routes.set(feed, {
      body: atom().replace(/vid_levain1/g, videoIds[0]!).replace(/vid_nocapt2/g, videoIds[1]!),
      type: 'application/atom+xml',
    });
    const player = host.routes.get('/youtubei/v1/player?prettyPrint=false')!;
    const original = player.respond!;
    let playerFailures = 1;
    player.respond = (request) => {
      const { videoId } = JSON.parse(request.body) as { videoId: string };
      if (videoId === videoIds[0] && playerFailures-- > 0) return { body: 'busy', status: 503 };
      if (videoId === videoIds[1]) return { body: 'gone', status: 404 };
      return original(request);
    };
    try {
      await store.store.channels.create({ id, profileId: store.profileId, kind: 'youtube', label: 'Failures', accessLevel: 'public', ratePerMillionTokens: 1, sourceUrl: `${host.url}${feed}` });
      const first = await Sync.syncChannel(deps(), id);
      expect(first).toMatchObject({ created: 2, failed: 0, provisional: 1 });
      expect(first.errors[0]).toMatch(/vid_503xxxx: .*answered 503/);
      expect((await metadataOf(id, videoIds[1]!)).text).toBe('description');
      // The endpoint is back: when its retry is due, the stand-in video is read again (no captions here, so its
      // description for good).
      const later = { ...deps(), now: () => Date.now() + 16 * 60_000 };
      expect(await Sync.syncChannel(later, id)).toMatchObject({ updated: 1, unchanged: 1, failed: 0, provisional: 0 });
      expect((await Sync.syncChannel(later, id)).outcome).toBe('unchanged');
    } finally {
      player.respond = original;
    }
  });

  test('behavior: YOUTUBE_BASE_URL sends a configured sync to its host, youtube.com sources included; links stay on youtube.com', async () => {
    const place = await Engines.fresh(Engines.current, 'youtube-configured');
    onTestFinished(() => place.drop());
    const env = { ...place.env, DEMO_DATA: 'false', LOG_LEVEL: 'silent', FETCH_ALLOW_PRIVATE: 'true', YOUTUBE_BASE_URL: `${host.url}/` };
    await Cli.profileWithChannel(env, { slug: 'crumb-configured', kind: 'youtube', channelId: 'ch_configured' });
    expect((await Cli.run(env, 'channels', 'update', 'ch_configured', '--source-url', 'https://www.youtube.com/@crumbtv')).code).toBe(0);
    const services = await Services.create(Config.load(env));
    const before = host.requests.length;
    try {
      // The connectors are the configured ones; the fetcher only refuses anything past loopback, as every test's does.
      const report = await Sync.syncChannel({ ...Services.syncDependencies(services), fetcher: Sources.loopbackOnly(services.fetcher) }, 'ch_configured');
      expect(report, report.reason).toMatchObject({ outcome: 'synced', created: 2, failed: 0 });
      const paths = host.requests.slice(before).map((r) => r.path);
      expect(paths.slice(0, 2)).toEqual(['/@crumbtv', `/feeds/videos.xml?channel_id=${channelId}`]);
      expect(paths).toEqual(expect.arrayContaining(['/youtubei/v1/player?prettyPrint=false', '/api/timedtext?v=vid_levain1&lang=en']));
      expect((await services.store.items.byChannel('ch_configured')).map((i) => i.sourceUrl).sort()).toEqual(['https://www.youtube.com/watch?v=vid_levain1', 'https://www.youtube.com/watch?v=vid_nocapt2']);
      const metadata = (await services.store.items.metadata('ch_configured', 'vid_levain1')) as string;
      expect(JSON.parse(metadata)).toMatchObject({ text: 'captions', track: 'en' });
    } finally {
      await services.close();
    }
  });

  test('behavior: feed URLs for channels, playlists and feeds; yt-dlp file names', async () => {
    const fetcher = Sources.fetcher();
    expect(await Youtube.feedUrlOf('https://www.youtube.com/channel/UCabcdefghijklmnop', fetcher, 'https://www.youtube.com')).toBe('https://www.youtube.com/feeds/videos.xml?channel_id=UCabcdefghijklmnop');
    expect(await Youtube.feedUrlOf('https://www.youtube.com/playlist?list=PL123', fetcher, 'https://www.youtube.com')).toBe('https://www.youtube.com/feeds/videos.xml?playlist_id=PL123');
    expect(await Youtube.feedUrlOf('https://www.youtube.com/feeds/videos.xml?channel_id=UCx', fetcher, 'https://www.youtube.com')).toBe('https://www.youtube.com/feeds/videos.xml?channel_id=UCx');
    // Another base (a proxy with a path prefix) takes youtube.com sources; other hosts' feeds are read where they are.
    expect(await Youtube.feedUrlOf('https://m.youtube.com/feeds/videos.xml?channel_id=UCx', fetcher, 'http://127.0.0.1:9/yt')).toBe('http://127.0.0.1:9/yt/feeds/videos.xml?channel_id=UCx');
    expect(await Youtube.feedUrlOf('https://www.youtube.com/playlist?list=PL123', fetcher, 'http://127.0.0.1:9/yt')).toBe('http://127.0.0.1:9/yt/feeds/videos.xml?playlist_id=PL123');
    expect(await Youtube.feedUrlOf('https://www.youtube.com/channel/UCabcdefghijklmnop', fetcher, 'http://127.0.0.1:9/yt')).toBe('http://127.0.0.1:9/yt/feeds/videos.xml?channel_id=UCabcdefghijklmnop');
    expect(await Youtube.feedUrlOf('https://feeds.example.org/feeds/videos.xml?channel_id=UCx', fetcher, 'http://127.0.0.1:9/yt')).toBe('https://feeds.example.org/feeds/videos.xml?channel_id=UCx');
    host.routes.set('/@nobody', { body: '<html>no channel here</html>', type: 'text/html' });
    await expect(Youtube.feedUrlOf(`${host.url}/@nobody`, fetcher, host.url)).rejects.toThrow(/not a YouTube channel or playlist/);
    expect(Youtube.videoIdOfFile('Levain in 5 days [dQw4w9WgXcQ].en.vtt')).toBe('dQw4w9WgXcQ');
    expect(Youtube.titleOfFile('Levain in 5 days [dQw4w9WgXcQ].en.vtt')).toBe('Levain in 5 days');
    expect(Youtube.chooseTrack([{ languageCode: 'en', kind: 'asr' }, { languageCode: 'de' }, { languageCode: 'en-GB' }], 'en')).toEqual({ languageCode: 'en-GB' });
  });
});

describe.skipIf(!Shared.hasFixtures)('real-world YouTube files (../shared/fixtures/youtube)', () => {
  test('behavior: classic timed text, with its entities decoded and markup dropped', () => {
    const doc = Youtube.parseTimedText(fs.readFileSync(Shared.fixture('youtube/ytapi_timedtext-transcript.xml'), 'utf8'));
    expect(doc.blocks).toEqual([
      { kind: 'cue', text: 'Hey, this is just a test', startSeconds: 0, endSeconds: 1.54 },
      { kind: 'cue', text: 'this is not the original transcript', startSeconds: 1.54, endSeconds: 5.7 },
      { kind: 'cue', text: 'just something shorter, I made up for testing', startSeconds: 5.7, endSeconds: 8.939 },
    ]);
  });

  test('behavior: a real player response: the English creator track is chosen over automatic captions', () => {
    const player = JSON.parse(fs.readFileSync(Shared.fixture('youtube/ytapi_innertube-player-ww1_nl_en.json'), 'utf8'));
    const tracks = player.captions.playerCaptionsTracklistRenderer.captionTracks;
    expect(Youtube.chooseTrack(tracks, 'en')).toMatchObject({ languageCode: 'en', vssId: '.en' });
  });
});
