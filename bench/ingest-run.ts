/**
 * One ingest run, in its own process so its peak memory is its own: syncs a podcast channel from a feed URL into a
 * fresh store and prints one JSON line of figures. Started by bench/ingest.ts.
 */
import { parseArgs } from 'node:util';
import * as Config from '../src/config/Config.js';
import * as Services from '../src/Services.js';
import * as Sync from '../src/sources/Sync.js';
import * as SqliteFile from '../test/support/SqliteFile.js';

const { values } = parseArgs({ options: { feed: { type: 'string' }, db: { type: 'string' }, embeddings: { type: 'string' } } });
const env: Record<string, string> = { DATABASE_PATH: values.db!, LOG_LEVEL: 'silent', ENVIRONMENT: 'test', FETCH_ALLOW_PRIVATE: 'true', FETCH_CONCURRENCY: '8' };
if (values.embeddings) Object.assign(env, { EMBEDDER: 'openai', EMBEDDING_BASE_URL: values.embeddings, EMBEDDING_MODEL: 'stand-in' });
const services = await Services.create(Config.load(env));
const profile = await services.store.profiles.create({ slug: 'bench-show', name: 'Bench Show', visibility: 'public' });
await services.store.channels.create({ id: 'ch_bench', profileId: profile.id, kind: 'podcast_rss', label: 'Bench', accessLevel: 'public', ratePerMillionTokens: 1, sourceUrl: values.feed! });
if (services.embedder) {
  // The index exists before the sync, as after `reindex`: new items are embedded as they are written.
  const [probe] = await services.embedder.embed(['probe'], 'document');
  await services.store.vectors.create({ embedderId: services.embedder.id, dimensions: probe!.length });
}
const deps = { ...Services.syncDependencies(services), embedder: services.embedder };

const time = async (run: () => Promise<Sync.SyncReport>) => {
  const started = performance.now();
  const report = await run();
  return { report, seconds: (performance.now() - started) / 1000 };
};
const first = await time(() => Sync.syncChannel(deps, 'ch_bench'));
const again = await time(() => Sync.syncChannel(deps, 'ch_bench'));
// A changed feed whose episodes did not change: every entry is listed and skipped by its version. The store offers no
// way to forget a feed's validators and keep its listing, so SQLite's own connection forgets them.
const sqlite = SqliteFile.open(values.db!).db;
sqlite.prepare(`UPDATE channels SET sync_state = json_remove(sync_state, '$.source') WHERE id = 'ch_bench'`).run();
sqlite.close();
const relist = await time(() => Sync.syncChannel(deps, 'ch_bench'));

process.stdout.write(
  `${JSON.stringify({
    items: first.report.created,
    failed: first.report.failed,
    chunks: await services.store.chunks.count(),
    vectors: await services.store.vectors.count(),
    firstSeconds: first.seconds,
    unchangedOutcome: again.report.outcome,
    unchangedSeconds: again.seconds,
    relistUnchanged: relist.report.unchanged,
    relistSeconds: relist.seconds,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  })}\n`,
);
await services.close();
