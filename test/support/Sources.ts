import * as Log from '../../src/log/Logger.js';
import * as Connectors from '../../src/sources/Connectors.js';
import * as Fetcher from '../../src/sources/Fetcher.js';
import type { SyncDependencies } from '../../src/sources/Sync.js';
import * as Stores from '../../src/store/Store.js';
import * as Engines from './Engines.js';
import * as Peek from './Peek.js';

/** A fetcher for tests: loopback allowed, short deadlines, no retries unless asked. */
export const fetcher = (policy: Partial<Fetcher.Policy> = {}): Fetcher.Fetcher =>
  Fetcher.create({ allowPrivate: true, timeoutMs: 2_000, maxBytes: 5_000_000, maxRedirects: 3, concurrency: 2, retries: 0, maxRetryAfterMs: 1_000, userAgent: Connectors.userAgent, ...policy });

/**
 * A fetcher that reaches only 127.0.0.1: real-world fixtures name real hosts, and tests never leave loopback
 * (not even for a DNS lookup). Other URLs fail at once, as a permanently gone host would (not worth a retry).
 */
export function loopbackOnly(inner: Fetcher.Fetcher = fetcher()): Fetcher.Fetcher {
  return {
    get(url, options) {
      if (new URL(url).hostname !== '127.0.0.1') return Promise.reject(new Fetcher.FetchError(`${url} is not reachable from tests`, { url, transient: false }));
      return inner.get(url, options);
    },
  };
}

/**
 * A temporary store with one public profile, for sync tests, on this run's engine (Engines.current): `env` names it
 * the way the configuration does (for CLI runs against it), `peek` reads its tables.
 */
export async function store(prefix: string): Promise<{
  store: Stores.Store;
  peek: Peek.Peek;
  env: Peek.Place;
  profileId: string;
  logLines: string[];
  deps(overrides?: Partial<SyncDependencies>): SyncDependencies;
  close(): Promise<void>;
}> {
  const place = await Engines.fresh(Engines.current, prefix);
  const { store } = await Stores.open(place.target);
  const peek = await Peek.open(place.env);
  const profileId = (await store.profiles.create({ slug: 'writer', name: 'Wren Writer', visibility: 'public' })).id;
  const logLines: string[] = [];
  return {
    store,
    peek,
    env: place.env,
    profileId,
    logLines,
    deps: (overrides = {}) => ({
      store,
      fetcher: fetcher(),
      connectors: Connectors.create(),
      chunkTargetTokens: 320,
      logger: Log.create({ level: 'info', write: (line) => logLines.push(line) }),
      ...overrides,
    }),
    async close() {
      await peek.close();
      await store.close();
      await place.drop();
    },
  };
}
