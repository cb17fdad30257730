import type { Config } from '../config/Config.js';
import { lazy } from '../errors/Lazy.js';
import type { Connector } from './Connector.js';
import * as Fetcher from './Fetcher.js';
import type * as Notion from './Notion.js';
import * as Transcriber from './Transcriber.js';
import { version } from '../Version.js';

export type ConnectorSet = Partial<Record<Connector['kind'], Connector>>;

/**
 * A connector whose module (and the parsers it stands on: feedsmith, linkedom, the Notion client, the caption reader)
 * loads when a channel of its kind first syncs, not when the process starts.
 */
function deferred(kind: Connector['kind'], what: string, load: () => Promise<Connector>): Connector {
  const loaded = lazy(what, load);
  return { kind, list: async (context) => (await loaded()).list(context) };
}

/** The connector of each channel kind that syncs from a remote source. Uploads have none: an operator sends files. */
export function create(
  options: { transcriber?: Transcriber.Transcriber | undefined; youtubeBaseUrl?: string; notion?: Notion.NotionOptions } = {},
): ConnectorSet {
  return {
    rss: deferred('rss', 'The RSS and Atom connector', async () => (await import('./Rss.js')).connector),
    podcast_rss: deferred('podcast_rss', 'The podcast connector', async () => (await import('./Podcast.js')).connector({ transcriber: options.transcriber })),
    subtext: deferred('subtext', 'The Subtext connector', async () => (await import('./Subtext.js')).connector),
    youtube: deferred('youtube', 'The YouTube connector', async () => (await import('./Youtube.js')).connector({ baseUrl: options.youtubeBaseUrl })),
    notion: deferred('notion', 'The Notion connector (@notionhq/client)', async () => (await import('./Notion.js')).connector(options.notion ?? { tokens: {} })),
  };
}

/** The connectors as configured: the transcriber is on only when TRANSCRIBER names one. */
export function fromConfig(config: Config): ConnectorSet {
  const t = config.transcription;
  return create({
    transcriber: t.provider === 'openai' ? Transcriber.openAi({ baseUrl: t.baseUrl, apiKey: t.apiKey, model: t.model, maxBytes: t.maxBytes }) : undefined,
    youtubeBaseUrl: config.youtube.baseUrl,
    notion: { baseUrl: config.notion.baseUrl, tokens: config.notion.tokens },
  });
}

export const userAgent = `profile-edge/${version} (channel sync)`;

/** The fetcher connectors use, with the configured politeness and safety limits. */
export function fetcherFromConfig(config: Config): Fetcher.Fetcher {
  return Fetcher.create({
    ...config.fetch,
    maxRedirects: 5,
    retries: 2,
    maxRetryAfterMs: 30_000,
    userAgent,
  });
}
