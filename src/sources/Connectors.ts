import type { Config } from '../config/Config.js';
import type { Connector } from './Connector.js';
import * as Fetcher from './Fetcher.js';
import * as Rss from './Rss.js';

/** The connector of each channel kind that syncs from a remote source. Uploads have none: an operator sends files. */
export const byKind: Partial<Record<Connector['kind'], Connector>> = {
  rss: Rss.connector,
};

export const userAgent = 'profile-edge/0.2.0 (channel sync)';

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
