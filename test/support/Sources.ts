import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as Log from '../../src/log/Logger.js';
import * as Connectors from '../../src/sources/Connectors.js';
import * as Fetcher from '../../src/sources/Fetcher.js';
import type { SyncDependencies } from '../../src/sources/Sync.js';
import * as Store from '../../src/store/Database.js';
import type { Database } from '../../src/store/Database.js';
import * as Stores from '../../src/store/Store.js';

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

/** A temporary store with one public profile, for sync tests. */
export async function store(prefix: string): Promise<{
  db: Database;
  store: Stores.Store;
  profileId: string;
  logLines: string[];
  deps(overrides?: Partial<SyncDependencies>): SyncDependencies;
  close(): void;
}> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), `profile-edge-${prefix}-`));
  const db = Store.open(path.join(directory, 'sync.db')).db;
  const store = Stores.overSqlite(db);
  const profileId = (await store.profiles.create({ slug: 'writer', name: 'Wren Writer', visibility: 'public' })).id;
  const logLines: string[] = [];
  return {
    db,
    store,
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
    close() {
      db.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
