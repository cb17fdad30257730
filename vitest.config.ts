import { defineConfig } from 'vitest/config';

/**
 * Two groups, one after the other: every test file, in parallel; then the on-chain payment files alone. Their bursts
 * of paid requests sign, verify and settle on loopback chains in one process, and a signed tempo transfer lives 25 s:
 * run beside other files on two cores, the last of a burst can arrive after its own expiry (and callers who leave at
 * chosen moments would leave at other ones).
 */
const alone = ['test/onchain.test.ts', 'test/onchain-departure.test.ts'];

/** Three instances under a thousand paid queries, killed and restarted: PostgreSQL only (several processes on one file is SQLite's case for a few, not for load). */
const loadOnPostgres = ['test/several-instances-load.test.ts'];

/**
 * The end-to-end suites run a second time on PostgreSQL (the store suites run both engines themselves): every
 * transport, both payment rails, a sync of each connector kind, citation pages. Their environments make a database
 * each at PROFILE_EDGE_TEST_POSTGRES (default the machine's cluster) and drop it after; with none reachable they fail
 * saying how to start one.
 */
const endToEnd = [
  'test/rest.test.ts',
  'test/mcp.test.ts',
  'test/mcp-remote.test.ts',
  'test/mcp-hosts.test.ts',
  'test/query.test.ts',
  'test/contract.test.ts',
  'test/synthesis.test.ts',
  'test/signed-links.test.ts',
  'test/citation-pages.test.ts',
  'test/onchain-contract.test.ts',
  'test/onchain-crash.test.ts',
  'test/onchain-unsponsored.test.ts',
  'test/sync.test.ts',
  'test/podcast.test.ts',
  'test/notion.test.ts',
  'test/youtube.test.ts',
  'test/ingest-text.test.ts',
  'test/formats.test.ts',
  'test/captions.test.ts',
  'test/cli.test.ts',
  'test/demo.test.ts',
  'test/fusion.test.ts',
  'test/vectors.test.ts',
  'test/pdf.test.ts',
  'test/store.test.ts',
  'test/search-index.test.ts',
  'test/search-threads.test.ts',
  'test/search-snapshot.test.ts',
  'test/vector-snapshot.test.ts',
  'test/term-model.test.ts',
  'test/several-instances.test.ts',
  'test/several-instances-payments.test.ts',
  'test/backup.test.ts',
];
const onPostgres = { PROFILE_EDGE_TEST_ENGINE: 'postgres' };

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // The processes tests spawn run the built JavaScript: built here first when the sources changed.
    globalSetup: ['test/support/Build.ts'],
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time (vitest's default is one fewer than the cores: one, on CI's two), the payment files alone.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: [...alone, ...loadOnPostgres], sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'end to end on postgres', include: endToEnd, env: onPostgres, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'payments under load', include: alone, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'payments under load on postgres', include: [...alone, ...loadOnPostgres], env: onPostgres, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});
