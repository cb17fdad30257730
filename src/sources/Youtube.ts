import * as Charset from '../ingest/Charset.js';
import type { Block, Document } from '../ingest/Document.js';
import { decodeEntities, fromPlainText, squash } from '../ingest/Document.js';
import * as Ids from '../store/Ids.js';
import { type Connector, type Entry, type SourceItem, type SyncContext, hasRealText, withStandIn } from './Connector.js';
import * as Feed from './Feed.js';
import { type Fetcher, mayPass } from './Fetcher.js';
import { type Loose, record, records, str } from './Loose.js';


export const defaultBaseUrl = 'https://www.youtube.com';

/** Item metadata marking captions an operator imported (yt-dlp `.vtt`): a sync keeps them. */
export const importedCaptions = 'imported_captions';

/** A video's public watch URL. */
export const watchUrl = (videoId: string, base = defaultBaseUrl): string => `${base}/watch?v=${encodeURIComponent(videoId)}`;

/** YouTube's own host names: a source on one of them is read from the configured base URL. */
const youtubeHosts = new Set(['youtube.com', 'www.youtube.com', 'm.youtube.com']);

/** A URL on youtube.com moved onto `base` (a stand-in, or a proxy whose path prefix is kept); any other as it is. */
const onBase = (url: URL, base: string): string => (youtubeHosts.has(url.hostname.toLowerCase()) ? `${base}${url.pathname}${url.search}` : url.href);

/**
 * The public Atom feed of a channel or playlist source: a feed URL as it is; `/channel/UC…` and `?list=…` (playlist)
 * URLs mapped to their feed; `/@handle` and `/c/…` pages read for their channel id. Sources on youtube.com are read
 * from `base`.
 */
export async function feedUrlOf(source: string, fetcher: Fetcher, base: string): Promise<string> {
  const url = new URL(source);
  if (url.pathname.endsWith('/feeds/videos.xml')) return onBase(url, base);
  const feed = (param: 'channel_id' | 'playlist_id', id: string) => `${base}/feeds/videos.xml?${param}=${encodeURIComponent(id)}`;
  const playlist = url.searchParams.get('list');
  if (playlist) return feed('playlist_id', playlist);
  const channel = /^\/channel\/(UC[\w-]{10,})/.exec(url.pathname)?.[1];
  if (channel) return feed('channel_id', channel);
  const page = await fetcher.get(onBase(url, base), { accept: 'text/html' });
  if (page.status !== 200) throw new Error(`${url.href} did not answer with a page`);
  const html = page.body.toString('utf8');
  const id = /<link rel="canonical" href="[^"]*\/channel\/(UC[\w-]{10,})"/.exec(html)?.[1] ?? /"(?:externalId|channelId)":"(UC[\w-]{10,})"/.exec(html)?.[1];
  if (!id) throw new Error(`${url.href} is not a YouTube channel or playlist (no channel id found)`);
  return feed('channel_id', id);
}

/**
 * Timed text as YouTube serves it: the classic format (`<text start dur>`, seconds) or srv3 (`<p t d>`,
 * milliseconds). Entities may be encoded twice ("&amp;#39;").
 */
export function parseTimedText(xml: string): Document {
  const blocks: Block[] = [];
  const classic = /<text\b[^>]*\bstart="([\d.]+)"(?:[^>]*\bdur="([\d.]+)")?[^>]*>([\s\S]*?)<\/text>/g;
  const srv3 = /<p\b[^>]*\bt="(\d+)"(?:[^>]*\bd="(\d+)")?[^>]*>([\s\S]*?)<\/p>/g;
  const isSrv3 = /<timedtext\b/.test(xml) && !/<text\b/.test(xml);
  for (const m of xml.matchAll(isSrv3 ? srv3 : classic)) {
    const scale = isSrv3 ? 1000 : 1;
    const start = Number(m[1]) / scale;
    const end = start + Number(m[2] ?? 0) / scale;
    const text = squash(decodeEntities(decodeEntities(m[3]!).replace(/<[^>]*>/g, ' ')));
    if (text !== '') blocks.push({ kind: 'cue', text, startSeconds: start, endSeconds: end });
  }
  return { blocks };
}

/** The caption track to read: the wanted language, a creator's track before automatic speech recognition. */
export function chooseTrack(tracks: Loose[], language: string): Loose | undefined {
  const lang = (t: Loose) => String(t.languageCode ?? '').toLowerCase().split('-')[0];
  const wanted = language.toLowerCase().split('-')[0];
  const rank = (t: Loose) => (lang(t) === wanted ? 0 : 10) + (t.kind === 'asr' ? 1 : 0);
  return [...tracks].sort((a, b) => rank(a) - rank(b))[0];
}

/** A video's captions through the player endpoint's caption tracks, or undefined when it has none. */
async function captions(fetcher: Fetcher, videoId: string, options: { base: string; language: string }): Promise<{ document: Document; track: string } | undefined> {
  const player = await fetcher.get(`${options.base}/youtubei/v1/player?prettyPrint=false`, {
    json: { context: { client: { clientName: 'ANDROID', clientVersion: '20.10.38', hl: options.language } }, videoId },
    accept: 'application/json',
  });
  if (player.status !== 200) return undefined;
  const data = record(JSON.parse(player.body.toString('utf8')));
  const tracks = records(record(record(data?.captions)?.playerCaptionsTracklistRenderer)?.captionTracks);
  const track = chooseTrack(tracks, options.language);
  const baseUrl = str(track?.baseUrl);
  if (!baseUrl) return undefined;
  // The classic format (no fmt parameter) is the simplest to read; srv3 is read too.
  const trackUrl = new URL(baseUrl, options.base);
  trackUrl.searchParams.delete('fmt');
  const response = await fetcher.get(trackUrl.href, { accept: 'text/xml' });
  if (response.status !== 200) return undefined;
  const document = parseTimedText(Charset.decode(response.body, response.contentType));
  return document.blocks.length > 0 ? { document, track: `${String(track!.languageCode)}${track!.kind === 'asr' ? ' (automatic)' : ''}` } : undefined;
}

export type YoutubeOptions = { baseUrl?: string; language?: string };

/**
 * YouTube channels and playlists: videos are discovered through the public Atom feed (its newest 15), and each is
 * indexed from its captions (a creator's track before automatic ones, in the channel's language, `settings.language`,
 * default English), with cue times kept so citations link to the moment. A video without readable captions is indexed
 * from its description until captions exported by yt-dlp are imported for it (`profile-edge import`).
 */
export function connector(options: YoutubeOptions = {}): Connector {
  const base = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '');
  return {
    kind: 'youtube',
    async list(context: SyncContext) {
      const feedUrl = await feedUrlOf(context.source, context.fetcher, base);
      const read = await readFeedAt(context, feedUrl);
      if (!read) return { unchanged: true, state: context.state };
      const language = str(context.channel.settings.language) ?? options.language ?? 'en';
      const entries: Entry[] = read.feed.entries.map((entry) => {
        const videoId = str(record(entry.raw.yt)?.videoId) ?? /^yt:video:(.+)$/.exec(entry.id)?.[1] ?? entry.id;
        const group = records(record(entry.raw.media)?.groups)[0];
        const description = Feed.plain(str(record(group?.description)?.value) ?? str(group?.description)) ?? '';
        return {
          externalId: videoId,
          version: Ids.fingerprint(JSON.stringify([entry.title, entry.publishedAt, description, language])),
          publishedAt: entry.publishedAt,
          keep: context.stored(videoId)?.metadata.text === importedCaptions,
          load() {
            const item = (found: { document: Document; track: string } | undefined): SourceItem => ({
              title: entry.title ?? videoId,
              sourceUrl: entry.link ?? watchUrl(videoId),
              publishedAt: entry.publishedAt,
              author: entry.author,
              document: found?.document ?? fromPlainText(description),
              metadata: found ? { text: 'captions', track: found.track, videoId } : { text: 'description', videoId },
            });
            // No caption tracks (or a refused request) means the description. A passing failure (network, 429, 5xx)
            // leaves an indexed video as it is and a new one on its description, and the next sync tries again.
            return withStandIn(
              async () =>
                item(
                  await captions(context.fetcher, videoId, { base, language }).catch((error: unknown) => {
                    if (mayPass(error)) throw error;
                    return undefined;
                  }),
                ),
              () => item(undefined),
              { indexed: hasRealText(context, videoId), passing: mayPass },
            );
          },
        };
      });
      return { entries, coverage: { kind: 'window' }, state: { feedUrl, validators: read.validators } };
    },
  };
}

async function readFeedAt(context: SyncContext, feedUrl: string) {
  // Validators belong to the feed they came from: a changed source starts afresh.
  const state = context.state.feedUrl === feedUrl ? context.state : {};
  const response = await context.fetcher.get(feedUrl, { validators: state.validators as Record<string, string> | undefined, accept: 'application/atom+xml, application/xml;q=0.9' });
  if (response.status === 304) return undefined;
  return { feed: Feed.parse(Charset.decode(response.body, response.contentType), response.url), validators: response.validators };
}

/** The video id in a yt-dlp caption file name ("Title [dQw4w9WgXcQ].en.vtt"), if it has one. */
export const videoIdOfFile = (name: string): string | undefined => /\[([\w-]{11})\](?:\.[\w-]+)?\.vtt$/i.exec(name)?.[1];

/** The title in a yt-dlp caption file name, without the id and language. */
export const titleOfFile = (name: string): string =>
  name.replace(/\.vtt$/i, '').replace(/\.[\w-]+$/, '').replace(/\s*\[[\w-]{11}\]\s*$/, '').trim() || name;
