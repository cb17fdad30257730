import type { Config } from '../config/Config.js';
import type { Connector } from './Connector.js';
import * as Fetcher from './Fetcher.js';
import * as Notion from './Notion.js';
import * as Podcast from './Podcast.js';
import * as Rss from './Rss.js';
import * as Subtext from './Subtext.js';
import * as Transcriber from './Transcriber.js';
import * as Youtube from './Youtube.js';
import { version } from '../Version.js';

export type ConnectorSet = Partial<Record<Connector['kind'], Connector>>;

/** The connector of each channel kind that syncs from a remote source. Uploads have none: an operator sends files. */
export function create(
  options: { transcriber?: Transcriber.Transcriber | undefined; youtubeBaseUrl?: string; notion?: Notion.NotionOptions } = {},
): ConnectorSet {
  return {
    rss: Rss.connector,
    podcast_rss: Podcast.connector({ transcriber: options.transcriber }),
    subtext: Subtext.connector,
    youtube: Youtube.connector({ baseUrl: options.youtubeBaseUrl }),
    notion: Notion.connector(options.notion ?? { tokens: {} }),
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
