import type { Config } from './config/Config.js';
import type { Logger } from './log/Logger.js';
import * as Log from './log/Logger.js';
import * as RateLimiter from './payments/RateLimiter.js';
import * as Extractive from './answer/Extractive.js';
import type { Synthesizer } from './answer/Synthesizer.js';
import * as Stats from './retrieval/Stats.js';
import type { VectorSearch } from './retrieval/Vectors.js';
import type { Database } from './store/Database.js';
import * as Store from './store/Database.js';

/** Everything a tool handler stands on, built once per process and handed down. */
export type Services = {
  config: Config;
  db: Database;
  logger: Logger;
  quoteLimiter: RateLimiter.RateLimiter;
  /** Collection statistics for ranking, reused while the store is unchanged. */
  stats: ReturnType<typeof Stats.create>;
  synthesizer: Synthesizer;
  /** Vector search, when an embedder is configured. */
  vectors: VectorSearch | undefined;
  /** True when this process created the database file. */
  createdStore: boolean;
  close(): void;
};

/** Opens the store and builds the shared services from configuration. */
export function create(config: Config, options: { logger?: Logger } = {}): Services {
  const { db, created } = Store.open(config.databasePath);
  return {
    config,
    db,
    logger: options.logger ?? Log.create({ level: config.logLevel }),
    quoteLimiter: RateLimiter.create({ perMinute: config.quoteRateLimitPerMinute }),
    stats: Stats.create(db),
    synthesizer: Extractive.create(),
    vectors: undefined,
    createdStore: created,
    close: () => db.close(),
  };
}
