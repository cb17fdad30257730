import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import * as Keys from '../src/auth/Keys.js';
import { projectRoot } from '../src/config/Config.js';
import * as Demo from '../src/demo/Demo.js';
import * as LexicalIndex from '../src/retrieval/LexicalIndex.js';
import * as SearchTerms from '../src/retrieval/SearchTerms.js';
import * as Text from '../src/retrieval/Text.js';
import * as Copy from '../src/store/Copy.js';
import * as Stores from '../src/store/Store.js';
import type { OpenStore, Target } from '../src/store/Store.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import type { EngineName } from './support/Engines.js';
import * as Peek from './support/Peek.js';

type Place = Awaited<ReturnType<typeof Engines.fresh>>;

/** Every place a test made, dropped after the file. */
const made: Place[] = [];
afterAll(async () => {
  await Promise.all(made.map((p) => p.drop()));
});

async function fresh(engine: EngineName): Promise<Place> {
  const place = await Engines.fresh(engine, 'copy');
  made.push(place);
  return place;
}

/** What the source holds besides the demo, to find again in the copy. */
type Source = { place: Place; token: string; accountId: string; paymentId: string; vectorRowids: number[] };

/**
 * A store on `engine` with a row in every copied table: the demo as a first start loads it (with its markers), an
 * account with a key, a grant on the ledger and a private profile, an on-chain payment that left a credit, a bound
 * credential, a channel's listing, and a vector index. Built once per engine, then left alone: copies read it.
 */
const sources = new Map<EngineName, Promise<Source>>();
function source(engine: EngineName): Promise<Source> {
  let built = sources.get(engine);
  if (!built) sources.set(engine, (built = build(engine)));
  return built;
}

async function build(engine: EngineName): Promise<Source> {
  const place = await fresh(engine);
  const { store } = await Stores.open(place.target);
  try {
    await Demo.loadOnFirstStart({ store }, { chunkTargetTokens: 320 });
    const account = await store.accounts.create({ name: 'mover', email: 'mover@example.org' });
    const { token } = await Keys.issue(store, { kind: 'api_key', accountId: account.id, label: 'copied' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 250, unlocksDelta: 3, memo: 'before the move' });
    const profile = (await store.profiles.list())[0]!;
    await store.profiles.grantAccess(profile.id, account.id);
    const paymentId = 'pay_copied';
    await store.payments.reserve({ id: paymentId, spendKey: 'spend-copied', rail: 'tempo', wallet: '0xAbC', queryId: 'q_copied', requestDigest: 'digest', amountMillicents: 5_000 });
    await store.payments.advance(paymentId, ['verified'], 'settled', { txHash: '0xfeed' });
    await store.payments.grantCredit((await store.payments.get(paymentId))!, 'answer failed');
    await store.payments.bindCredential({ spendKey: 'spend-bound', rail: 'x402_base', challengeId: 'challenge-1' });
    const channelId = (await store.channels.byProfile(profile.id))[0]!.id;
    const hold = (await store.channels.claimSync(channelId, { now: 1_000, expired: () => false }))!;
    await store.channels.finishSync(channelId, hold.holder, { now: 2_000, listed: ['a', 'b'] });
    // Vectors whose floats have no short decimal form: a copy must keep their bytes exactly.
    await store.vectors.create({ embedderId: 'test-embedder', dimensions: 4 });
    const vectorRowids = (await store.termModel.publicChunkRowids()).slice(0, 20);
    await store.vectors.put(vectorRowids.map((rowid) => ({ rowid, vector: Float32Array.from([Math.PI / rowid, -Math.E * rowid, 1 / 3, rowid]) })));
    return { place, token, accountId: account.id, paymentId, vectorRowids };
  } finally {
    await store.close();
  }
}

/** The demo's most relevant chunks for a question, on the store's own lexical index. */
async function ask(store: OpenStore, question: string): Promise<string[]> {
  const index = await LexicalIndex.open(store);
  const channelIds = new Set([...(await store.channels.byProfiles()).values()].flat().map((c) => c.id));
  const hits = await index.search({ terms: Text.queryTerms(question), text: question, channelIds, limit: 5 });
  const rows = await store.chunks.rows(hits.map((h) => h.rowid));
  return hits.map((h) => rows.find((r) => r.rowid === h.rowid)!.chunkId);
}

/** What a caller of each store reads back, side by side. */
async function answers(store: OpenStore, from: Source) {
  const credential = await Keys.verify(store, 'api_key', from.token);
  return {
    credential: credential?.id,
    account: await store.accounts.get(from.accountId),
    ledger: (await store.ledger.entries({ accountId: from.accountId })).map(({ id, kind, creditsDelta, unlocksDelta, memo }) => ({ id, kind, creditsDelta, unlocksDelta, memo })),
    payment: await store.payments.get(from.paymentId),
    credit: await store.payments.openCredit('tempo', '0xabc'),
    profiles: (await store.profiles.list()).map((p) => p.slug),
    search: await ask(store, 'how do I prioritise work in a workshop'),
    vectors: [...(await store.vectors.embeddings(from.vectorRowids)).entries()].map(([rowid, bytes]) => [rowid, Buffer.from(bytes).toString('hex')]),
    vectorIndex: await store.vectors.info(),
    terms: (await store.termModel.terms()).slice(0, 50),
    termModel: await store.termModel.info(),
  };
}

const placeOf = (target: Target) => ('url' in target ? target.url : target.path);

const differing = (result: Copy.Result) => result.tables.filter((t) => !t.same).map((t) => t.table);

describe.each(Engines.engines)('store copy from %s', (fromEngine) => {
  const other: EngineName = fromEngine === 'sqlite' ? 'postgres' : 'sqlite';

  test.each(Engines.engines)('behavior: into %s, every table matches and the copy answers as the source does', async (toEngine) => {
    const from = await source(fromEngine);
    const to = await fresh(toEngine);
    const result = await Copy.copy({ from: from.place.target, to: to.target, batch: 500 });
    expect(differing(result)).toEqual([]);
    expect(result).toMatchObject({ resumed: false, same: true });
    // Every copied table had rows to copy, so each was exercised.
    expect(result.tables.filter((t) => t.rows.source === 0).map((t) => t.table)).toEqual([]);
    expect(result.copied).toBe(result.tables.filter((t) => t.table !== 'meta').reduce((n, t) => n + t.rows.source, 0));
    // The target's triggers logged every row as it arrived; a store nobody follows yet keeps no such log.
    const peek = await Peek.open(to.env);
    try {
      expect([await peek.value('SELECT count(*) FROM search_log'), await peek.value('SELECT count(*) FROM vector_log')].map(Number)).toEqual([0, 0]);
    } finally {
      await peek.close();
    }

    const before = await Stores.open(from.place.target);
    const after = await Stores.open(to.target);
    try {
      const expected = await answers(before.store, from);
      expect(expected.credential).toBeDefined();
      expect(expected.search.length).toBeGreaterThan(0);
      for (const chunkId of expected.search) expect(chunkId).toMatch(/^\w+_/);
      expect(expected.vectors).toHaveLength(from.vectorRowids.length);
      expect(await answers(after.store, from)).toEqual(expected);
      // The demo's markers came along: a first start on the copy does not load the demo again.
      expect(await Demo.loadOnFirstStart({ store: after.store }, { chunkTargetTokens: 320 })).toBeUndefined();
      // New rows take ids past the copied ones (PostgreSQL's identity counters were moved past them).
      const lastLedger = Math.max(...expected.ledger.map((e) => e.id));
      const next = await after.store.ledger.move({ accountId: from.accountId, kind: 'grant', creditsDelta: 1 });
      expect(next).toBeGreaterThan(lastLedger);
      const profile = (await after.store.profiles.list())[0]!;
      const channelId = (await after.store.channels.byProfile(profile.id))[0]!.id;
      const put = await after.store.items.put(SearchTerms.indexed({ channelId, externalId: 'after-copy', title: 'After', contentHash: 'after', chunks: [{ text: 'Zanzibar marmalade after the move.' }] }));
      expect(put.outcome).toBe('created');
      expect(await ask(after.store, 'zanzibar marmalade')).toHaveLength(1);
    } finally {
      await before.store.close();
      await after.store.close();
    }
  }, 120_000);

  test(`behavior: a copy into ${other} stopped after three batches resumes where it stopped, and writes no row twice`, async () => {
    const from = await source(fromEngine);
    const to = await fresh(other);
    let batches = 0;
    let landed: Copy.Progress | undefined;
    const stopped = Copy.copy({
      from: from.place.target,
      to: to.target,
      batch: 7,
      onProgress: (progress) => {
        if (++batches < 3) return;
        landed = progress;
        throw new Error('killed');
      },
    });
    await expect(stopped).rejects.toThrow('killed');
    const peek = await Peek.open(to.env);
    try {
      // The three batches landed, each with the mark of how far the copy got; nothing else did.
      const counts = await Promise.all(Copy.tables.map(async (t) => Number(await peek.value(`SELECT count(*) FROM ${t.name}`))));
      expect(counts.reduce((a, b) => a + b, 0)).toBe(landed!.done);
      expect(landed!.done).toBeGreaterThan(0);
      expect(landed!.done).toBeLessThanOrEqual(3 * 7);
      const mark = JSON.parse((await peek.value<string>("SELECT value FROM meta WHERE key = 'store_copy'"))!) as Record<string, unknown>;
      expect(mark).toMatchObject({ table: landed!.table });
      expect(mark).not.toHaveProperty('finished');
    } finally {
      await peek.close();
    }

    const resumed = await Copy.copy({ from: from.place.target, to: to.target, batch: 7 });
    expect(differing(resumed)).toEqual([]);
    expect(resumed.resumed).toBe(true);
    expect(resumed.copied).toBe(landed!.total - landed!.done);
    // Run again once finished, it copies nothing and compares again.
    const again = await Copy.copy({ from: from.place.target, to: to.target });
    expect(again).toMatchObject({ resumed: true, copied: 0, same: true });
  }, 120_000);

  test('error: a target that holds data is refused and left as it was', async () => {
    const from = await source(fromEngine);
    const to = await fresh(fromEngine);
    const opened = await Stores.open(to.target);
    await opened.store.accounts.create({ name: 'already-here' });
    await opened.store.close();
    const peek = await Peek.open(to.env);
    try {
      const before = await peek.snapshot();
      await expect(Copy.copy({ from: from.place.target, to: to.target })).rejects.toThrow(/already holds data \(1 accounts\)/);
      await expect(Copy.copy({ from: from.place.target, to: to.target })).rejects.toBeInstanceOf(Copy.Refused);
      expect(await peek.snapshot()).toEqual(before);
    } finally {
      await peek.close();
    }
  });

  test('error: the source itself, named another way, is refused', async () => {
    const from = await source(fromEngine);
    const named = placeOf(from.place.target);
    const target: Target = fromEngine === 'postgres' ? { url: `${named}?application_name=another-name` } : { path: path.join(path.dirname(named), 'link.db') };
    if ('path' in target) fs.symlinkSync(named, target.path);
    expect(placeOf(target)).not.toBe(named);
    await expect(Copy.copy({ from: from.place.target, to: target })).rejects.toThrow(/are one database/);
    await expect(Copy.copy({ from: from.place.target, to: from.place.target })).rejects.toThrow(/are one database/);
  });

  test('error: a source at another schema version, or with a table the copy does not know, is refused', async () => {
    const from = await fresh(fromEngine);
    const to = await fresh(other);
    await (await Stores.open(from.target)).store.close();
    const peek = await Peek.open(from.env);
    try {
      await peek.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from_the_future', 0)");
      await expect(Copy.copy({ from: from.target, to: to.target })).rejects.toThrow(/schema version 99 and .* at 10/);
      await peek.run('DELETE FROM schema_migrations WHERE version = 99');
      await peek.run('CREATE TABLE unheard_of (id TEXT PRIMARY KEY)');
      await expect(Copy.copy({ from: from.target, to: to.target })).rejects.toThrow(/tables this copy does not know \(unheard_of\)/);
    } finally {
      await peek.close();
    }
  });
});

describe('profile-edge store copy', () => {
  const quiet = { LOG_LEVEL: 'silent' };

  test('behavior: copies with a progress line, prints the comparison table, and exits 0 when every table matches', async () => {
    const from = await source('sqlite');
    const to = await fresh('postgres');
    const ran = await Cli.run(quiet, 'store', 'copy', '--from', placeOf(from.place.target), '--to', placeOf(to.target), '--batch', '100');
    expect(ran.stderr).toMatch(/^copy \d+\/\d+ \w+$/m);
    expect(ran.stderr).toMatch(/^compare \d+\/\d+ \w+$/m);
    expect(ran.stdout).toMatch(/^table\s+source rows\s+target rows\s+source checksum\s+target checksum\s+same$/m);
    expect(ran.stdout).toMatch(/^chunks\s+(\d+)\s+\1\s+([0-9a-f]{16})\s+\2\s+yes$/m);
    expect(ran.stdout).toMatch(/^copied \d+ rows from SQLite at .* to PostgreSQL at .*; every table matches$/m);
    expect(ran.code).toBe(0);
  }, 120_000);

  test('behavior: --json gives the comparison; a copy that no longer matches its source exits 1', async () => {
    const from = await source('postgres');
    const to = await fresh('sqlite');
    const ran = await Cli.run(quiet, 'store', 'copy', '--from', placeOf(from.place.target), '--to', placeOf(to.target), '--json');
    expect(ran.code).toBe(0);
    const result = JSON.parse(ran.stdout) as Copy.Result;
    expect(result).toMatchObject({ resumed: false, same: true });
    expect(result.tables.find((t) => t.table === 'ledger')).toMatchObject({ rows: { source: expect.any(Number) }, same: true });

    const opened = await Stores.open(to.target);
    await opened.store.accounts.create({ name: 'written-after' });
    await opened.store.close();
    const again = await Cli.run(quiet, 'store', 'copy', '--from', placeOf(from.place.target), '--to', placeOf(to.target));
    expect(again.stdout).toMatch(/^accounts\s+(\d+)\s+(?!\1\b)\d+\s+([0-9a-f]{16})\s+(?!\2)[0-9a-f]{16}\s+NO$/m);
    expect(again.stdout).toMatch(/1 differ: accounts$/m);
    expect(again.code).toBe(1);
  }, 120_000);

  test('behavior: a copy process killed part-way resumes when run again, and ends with every table matching', async () => {
    const from = await source('sqlite');
    const to = await fresh('postgres');
    // One row a batch, so the copy is still under way, most likely inside a transaction, when it is killed.
    const argv = ['store', 'copy', '--from', placeOf(from.place.target), '--to', placeOf(to.target), '--batch', '1'];
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'profile-edge.mjs'), ...argv], { env: { ...process.env, ...quiet }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = once(child, 'exit');
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (/^copy \d+\//m.test(stderr)) resolve();
      });
      child.once('exit', (code) => reject(new Error(`the copy ended (${code}) before it was killed: ${stderr}`)));
    });
    child.kill('SIGKILL');
    expect((await exited)[1]).toBe('SIGKILL');

    const resumed = await Cli.run(quiet, ...argv.slice(0, -2));
    expect(resumed.stdout).toMatch(/^resumed, copied \d+ rows from .*; every table matches$/m);
    expect(resumed.code).toBe(0);
  }, 120_000);

  test('error: a refused copy says why and exits 2, like a usage error', async () => {
    const from = await source('sqlite');
    const ran = await Cli.run(quiet, 'store', 'copy', '--from', placeOf(from.place.target), '--to', placeOf(from.place.target));
    expect(ran.stderr).toMatch(/^error: the source and the target are one database/);
    expect(ran.code).toBe(2);
    const missing = await Cli.run(quiet, 'store', 'copy', '--from', placeOf(from.place.target));
    expect(missing.stderr).toContain('--to is required');
    expect(missing.code).toBe(2);
  });
});
