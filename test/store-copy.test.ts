import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import * as Keys from '../src/auth/Keys.js';
import { projectRoot } from '../src/config/Config.js';
import * as Demo from '../src/demo/Demo.js';
import * as LexicalIndex from '../src/retrieval/index/LexicalIndex.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as Text from '../src/retrieval/Text.js';
import * as Copy from '../src/store/Copy.js';
import * as Migrations from '../src/store/Migrations.js';
import type { Param } from '../src/store/Sql.js';
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
    // The secrets it made for itself: a move carries them (links and challenges it gave stay good), unlike a restore.
    await store.meta.claim('citation_link_secret', 'c1'.repeat(32));
    await store.meta.claim('payment_secret', 'd2'.repeat(32));
    const profile = (await store.profiles.list())[0]!;
    await store.profiles.grantAccess(profile.id, account.id);
    const paymentId = 'pay_copied';
    await store.payments.reserve({ id: paymentId, spendKey: 'spend-copied', rail: 'tempo', wallet: '0xAbC', queryId: 'q_copied', requestDigest: 'digest', amountMillicents: 5_000 });
    await store.payments.advance(paymentId, ['verified'], 'settled', { txHash: '0xfeed' });
    await store.payments.creditWallet(paymentId, { from: ['settled'], reason: 'answer failed' });
    await store.payments.bindCredential({ spendKey: 'spend-bound', rail: 'x402_base', challengeId: 'challenge-1' });
    await store.queryDays.add([
      { day: '2026-11-01', profileId: profile.id, outcome: 'answered', pay: 'tempo', queries: 2, usdMicros: 100_000, units: 0 },
      { day: '2026-11-01', profileId: '', outcome: 'refused', pay: '', queries: 1, usdMicros: 0, units: 0 },
    ]);
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
    secrets: [await store.meta.get('citation_link_secret'), await store.meta.get('payment_secret')],
  };
}

const placeOf = (target: Target) => ('url' in target ? target.url : target.path);

/** What a place holds, table by table; a SQLite file that does not exist holds nothing (and is not made by looking). */
async function contents(place: Place): Promise<Record<string, unknown[]>> {
  if ('path' in place.target && !fs.existsSync(place.target.path)) return {};
  const peek = await Peek.open(place.env);
  try {
    return await peek.snapshot();
  } finally {
    await peek.close();
  }
}

/** Runs a copy that is killed once its first batch landed, as a stopped process leaves it. */
async function interrupted(from: Source, to: Place): Promise<void> {
  const stopped = Copy.copy({
    from: from.place.target,
    to: to.target,
    batch: 7,
    onProgress: () => {
      throw new Error('killed');
    },
  });
  await expect(stopped).rejects.toThrow('killed');
}

/** The lines of a CLI run's output that are neither progress nor the comparison: what it said went wrong. */
const errorLines = (output: string) => output.split('\n').filter((line) => line !== '' && !/^(copy|compare) \d+\/\d+/.test(line));

const differing = (result: Copy.Result) => result.tables.filter((t) => !t.same).map((t) => t.table);

const quiet = { LOG_LEVEL: 'silent' };

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
    // The named values and the secrets are replaced whole at the end, not copied in batches.
    expect(result.copied).toBe(result.tables.filter((t) => t.table !== 'meta' && t.table !== 'secrets').reduce((n, t) => n + t.rows.source, 0));
    expect(result.tables.find((t) => t.table === 'secrets')).toMatchObject({ rows: { source: 2, target: 2 }, same: true });
    // The target's triggers logged every row as it arrived; a store nobody follows yet keeps only the last entry of
    // each log, where an index loaded from it starts.
    const peek = await Peek.open(to.env);
    try {
      expect([await peek.value('SELECT count(*) FROM search_log'), await peek.value('SELECT count(*) FROM vector_log')].map(Number)).toEqual([1, 1]);
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
      // An index loaded from the copy follows the first write from the log, without reading every row again.
      const statements: string[] = [];
      const index = await LexicalIndex.open(after.store.observed((s) => statements.push(s.text)));
      const put = await after.store.items.put(SearchTerms.indexed({ channelId, externalId: 'after-copy', title: 'After', contentHash: 'after', chunks: [{ text: 'Zanzibar marmalade after the move.' }] }));
      expect(put.outcome).toBe('created');
      statements.length = 0;
      const channelIds = new Set([...(await after.store.channels.byProfiles()).values()].flat().map((c) => c.id));
      expect(await index.search({ terms: Text.queryTerms('zanzibar marmalade'), text: 'zanzibar marmalade', channelIds, limit: 5 })).toHaveLength(1);
      expect(statements.filter((t) => t.includes('FROM search_docs WHERE rowid >'))).toEqual([]);
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

  const latest = Migrations.migrations.at(-1)!.version;

  test('error: a source at another schema version, or with a table the copy does not know, is refused; neither side is written', async () => {
    const from = await fresh(fromEngine);
    const to = await fresh(other);
    await (await Stores.open(from.target)).store.close();
    const peek = await Peek.open(from.env);
    try {
      await peek.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from_the_future', 0)");
      await expect(Copy.copy({ from: from.target, to: to.target })).rejects.toThrow(new RegExp(`is at schema version 99, newer than this profile-edge's ${latest}: copy with the version of profile-edge that migrated it$`));
      await peek.run('DELETE FROM schema_migrations WHERE version = 99');
      await peek.run('CREATE TABLE unheard_of (id TEXT PRIMARY KEY)');
      await expect(Copy.copy({ from: from.target, to: to.target })).rejects.toThrow(/tables this copy does not know \(unheard_of\)/);
      await peek.run('DROP TABLE unheard_of');
      // An older store is not migrated by the copy: the operator is told how to migrate it.
      await peek.run('DELETE FROM schema_migrations WHERE version = ?', latest);
      const older = await peek.snapshot();
      await expect(Copy.copy({ from: from.target, to: to.target })).rejects.toThrow(
        new RegExp(`is at schema version ${latest - 1}, not this profile-edge's ${latest}: start the service or any command of this version on it once to migrate it, then copy$`),
      );
      expect(await peek.snapshot()).toEqual(older);
    } finally {
      await peek.close();
    }
  });

  test('error: a source that holds no profile-edge store, empty or another application\'s, is refused plainly and left as it was', async () => {
    const to = await fresh(other);
    const empty = await fresh(fromEngine);
    // On SQLite an empty database is a file of no bytes.
    if ('path' in empty.target) fs.writeFileSync(empty.target.path, '');
    await expect(Copy.copy({ from: empty.target, to: to.target })).rejects.toThrow(/^(SQLite|PostgreSQL) at .* holds no profile-edge store$/);
    if ('path' in empty.target) expect(fs.statSync(empty.target.path).size).toBe(0);
    else expect(await contents(empty)).toEqual({});

    const another = await fresh(fromEngine);
    const peek = await Peek.open(another.env);
    try {
      await peek.run('CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)');
      await peek.run('CREATE TABLE schema_migrations (version TEXT PRIMARY KEY)');
      await peek.run("INSERT INTO invoices (id, total) VALUES (1, 120)");
      await peek.run("INSERT INTO schema_migrations (version) VALUES ('20240101120000')");
      const before = await peek.snapshot();
      await expect(Copy.copy({ from: another.target, to: to.target })).rejects.toThrow(/holds no profile-edge store$/);
      await expect(Copy.copy({ from: another.target, to: to.target })).rejects.toBeInstanceOf(Copy.Refused);
      expect(await peek.snapshot()).toEqual(before);
      expect(Object.keys(before).sort()).toEqual(['invoices', 'schema_migrations']);
    } finally {
      await peek.close();
    }
    expect(await contents(to)).toEqual({});
  });

  test(`error: a target in ${other} that holds another application's tables is refused, naming them, before anything is created`, async () => {
    const from = await source(fromEngine);
    const to = await fresh(other);
    const peek = await Peek.open(to.env);
    try {
      await peek.run('CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)');
      await peek.run('CREATE TABLE customers (id INTEGER PRIMARY KEY)');
      await peek.run('INSERT INTO invoices (id, total) VALUES (1, 120)');
      const before = await peek.snapshot();
      await expect(Copy.copy({ from: from.place.target, to: to.target })).rejects.toThrow(/^(SQLite|PostgreSQL) at .* holds tables that are not profile-edge's \(customers, invoices\): copy into a new, empty database$/);
      expect(await peek.snapshot()).toEqual(before);
      expect(Object.keys(before).sort()).toEqual(['customers', 'invoices']);
    } finally {
      await peek.close();
    }
  });

  test(`error: a target in ${other} whose copy has not finished is refused by every way the service opens it, until the same copy finishes it`, async () => {
    const from = await source(fromEngine);
    const to = await fresh(other);
    await interrupted(from, to);
    const before = await contents(to);
    const unfinished = /^(SQLite|PostgreSQL) at .* holds a copy of (SQLite|PostgreSQL) at .* that has not finished: run the same `profile-edge store copy` again to finish it \(or drop this database and copy again\)$/;
    await expect(Stores.open(to.target)).rejects.toBeInstanceOf(Copy.Unfinished);
    await expect(Stores.open(to.target)).rejects.toThrow(unfinished);

    // A server in development, which would load the demo on a first start, stops at once with one line.
    const env = { PATH: process.env.PATH ?? '', ...to.env, ENVIRONMENT: 'development', DEMO_DATA: 'true', PORT: '0', SYNC_SCHEDULE: 'false', LOG_LEVEL: 'silent' };
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'profile-edge.mjs'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const served = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(served);
    expect({ code, stdout, stderr: stderr.split('\n').filter(Boolean) }).toMatchObject({ code: 1, stdout: '', stderr: [expect.stringMatching(/^error: .*has not finished: run the same `profile-edge store copy` again/)] });
    const listed = await Cli.run({ ...quiet, ...to.env }, 'accounts', 'list');
    expect(listed.stderr.trim()).toMatch(new RegExp(`^error: ${unfinished.source.slice(1)}`));
    expect(listed.code).toBe(1);
    expect(await contents(to)).toEqual(before);

    const finished = await Copy.copy({ from: from.place.target, to: to.target });
    expect(finished).toMatchObject({ resumed: true, same: true });
    await (await Stores.open(to.target)).store.close();
  }, 120_000);

  test(`error: a resumed copy into ${other} that meets a row written outside it stops in one line naming the table`, async () => {
    const from = await source(fromEngine);
    const to = await fresh(other);
    await interrupted(from, to);
    const [sourcePeek, targetPeek] = await Promise.all([Peek.open(from.place.env), Peek.open(to.env)]);
    try {
      const term = (await sourcePeek.get('SELECT term, idf, lsa, lsa_neighbours AS lsaNeighbours, ppmi_neighbours AS ppmiNeighbours, folded_at AS foldedAt FROM term_model_terms'))!;
      await targetPeek.run(
        'INSERT INTO term_model_terms (term, idf, lsa, lsa_neighbours, ppmi_neighbours, folded_at) VALUES (?, ?, ?, ?, ?, ?)',
        ...(Object.values(term) as Param[]),
      );
    } finally {
      await Promise.all([sourcePeek.close(), targetPeek.close()]);
    }
    const written = /^(SQLite|PostgreSQL) at .* already has a row of term_model_terms this copy was about to write, so it was written outside the copy: drop it and copy again$/;
    const resumed = Copy.copy({ from: from.place.target, to: to.target });
    await expect(resumed).rejects.toBeInstanceOf(Copy.Stopped);
    await expect(Copy.copy({ from: from.place.target, to: to.target })).rejects.toThrow(written);
    const ran = await Cli.run(quiet, 'store', 'copy', '--from', placeOf(from.place.target), '--to', placeOf(to.target));
    expect(errorLines(ran.stderr)).toEqual([expect.stringMatching(new RegExp(`^error: ${written.source.slice(1)}`))]);
    expect(ran.code).toBe(1);
  }, 120_000);

  test.runIf(fromEngine === 'sqlite')('error: a source keeping its vectors in the sqlite-vec table of before is refused, not carried over in it', async () => {
    // Only a SQLite store ever had that table.
    const from = await fresh('sqlite');
    await (await Stores.open(from.target)).store.close();
    const peek = await Peek.open(from.env);
    try {
      await peek.run('CREATE TABLE chunk_vectors (rowid INTEGER PRIMARY KEY, embedding BLOB)');
      const before = await peek.column('SELECT name FROM sqlite_master ORDER BY name');
      await expect(Copy.copy({ from: from.target, to: (await fresh(other)).target })).rejects.toThrow(
        /keeps its vectors in the sqlite-vec table of an earlier version: start the service on it once with the embedder that built them, or run `profile-edge reindex` on it, then copy$/,
      );
      expect(await peek.column('SELECT name FROM sqlite_master ORDER BY name')).toEqual(before);
    } finally {
      await peek.close();
    }
  });
});

describe('profile-edge store copy', () => {
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
    expect(again.stdout).toMatch(
      /; 1 table differs \(accounts\): the source changed while it was copied, or the target was written since: drop the target and copy again, with the source's service stopped$/m,
    );
    expect(again.code).toBe(1);
    const json = await Cli.run(quiet, 'store', 'copy', '--from', placeOf(from.place.target), '--to', placeOf(to.target), '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ same: false, message: expect.stringMatching(/^1 table differs \(accounts\): the source changed while it was copied, or the target was written since: drop the target/) });
    expect(json.code).toBe(1);
  }, 120_000);

  test('behavior: text a SQLite source holds with NUL arrives in PostgreSQL as U+FFFD, and the copy verifies', async () => {
    const from = await fresh('sqlite');
    const to = await fresh('postgres');
    const { store } = await Stores.open(from.target);
    try {
      const account = await store.accounts.create({ name: 'buyer' });
      await store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 1, memo: 'asked: what\u0000next?' });
    } finally {
      await store.close();
    }
    const result = await Copy.copy({ from: from.target, to: to.target });
    expect(differing(result)).toEqual([]);
    expect(result.tables.find((t) => t.table === 'ledger')!.rows).toEqual({ source: 1, target: 1 });
    const peek = await Peek.open(to.env);
    try {
      expect(await peek.column('SELECT memo FROM ledger')).toEqual(['asked: what\uFFFDnext?']);
    } finally {
      await peek.close();
    }
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

  test('error: a URL that is not postgres:// is refused as DATABASE_URL is, making nothing and never printing a password', async () => {
    const secret = /hunter2|hunter3/;
    for (const [option, url] of [
      ['--from', 'mysql://shop:hunter2@127.0.0.1/x'],
      ['--to', 'postgress://postgres:hunter2@127.0.0.1:5432/x?password=hunter3'],
    ] as const) {
      const other = option === '--from' ? ['--to', path.join(os.tmpdir(), 'unused.db')] : ['--from', placeOf((await source('sqlite')).place.target)];
      const ran = await Cli.run(quiet, 'store', 'copy', option, url, ...other);
      expect(ran.stderr).toMatch(new RegExp(`^error: ${option} must be a postgres:// \\(or postgresql://\\) URL \\(got a \\w+:// URL\\), or a SQLite file$`, 'm'));
      expect(ran.stdout + ran.stderr).not.toMatch(secret);
      expect(ran.code).toBe(2);
      const json = await Cli.run(quiet, 'store', 'copy', option, url, ...other, '--json');
      expect(JSON.parse(json.stdout)).toEqual({ error: 'invalid_usage', message: expect.stringContaining('must be a postgres:// (or postgresql://) URL') });
      expect(json.stdout + json.stderr).not.toMatch(secret);
      expect(json.code).toBe(2);
    }
    expect(fs.readdirSync(projectRoot).filter((name) => name.endsWith(':'))).toEqual([]);
    expect(fs.existsSync(path.join(os.tmpdir(), 'unused.db'))).toBe(false);
  });

  test('behavior: a PostgreSQL URL with a password is never printed, copied, refused or unreachable', async () => {
    const from = await source('postgres');
    const withPassword = (url: string) => {
      const named = new URL(url);
      named.password = 'hunter2';
      named.searchParams.set('password', 'hunter3');
      return named.href;
    };
    const url = withPassword(placeOf(from.place.target));
    const to = await fresh('sqlite');
    const runs = [
      await Cli.run(quiet, 'store', 'copy', '--from', url, '--to', placeOf(to.target), '--batch', '500'),
      await Cli.run(quiet, 'store', 'copy', '--from', url, '--to', placeOf(to.target), '--json'),
      await Cli.run(quiet, 'store', 'copy', '--from', url, '--to', url),
      await Cli.run(quiet, 'store', 'copy', '--from', placeOf(to.target), '--to', withPassword(placeOf(from.place.target)).replace(/\/[^/?]+\?/, '/no_such_database?')),
    ];
    expect(runs.map((r) => r.code)).toEqual([0, 0, 2, 1]);
    expect(runs[0]!.stdout).toMatch(/every table matches$/m);
    expect(runs[3]!.stderr).toMatch(/^error: cannot reach PostgreSQL at [\d.:]+\/no_such_database: .*\n$/);
    for (const run of runs) expect(run.stdout + run.stderr).not.toMatch(/hunter2|hunter3/);
  }, 120_000);

  test('error: a --from that is not a SQLite database is refused in one line, and --json gives every refusal and error as an object', async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-copy-'));
    try {
      const notes = path.join(directory, 'notes.txt');
      fs.writeFileSync(notes, 'These are notes, not a database: they are long enough for SQLite to read a header from them.\n');
      const to = path.join(directory, 'copy.db');
      const ran = await Cli.run(quiet, 'store', 'copy', '--from', notes, '--to', to);
      expect(ran.stderr).toBe(`error: ${notes} is not a SQLite database\n`);
      expect(ran.code).toBe(2);
      expect(fs.existsSync(to)).toBe(false);

      const refused = await Cli.run(quiet, 'store', 'copy', '--from', notes, '--to', to, '--json');
      expect({ ...refused, stdout: JSON.parse(refused.stdout) }).toEqual({ code: 2, stderr: '', stdout: { error: 'refused', message: `${notes} is not a SQLite database` } });
      const missing = await Cli.run(quiet, 'store', 'copy', '--from', notes, '--json');
      expect({ ...missing, stdout: JSON.parse(missing.stdout) }).toEqual({ code: 2, stderr: '', stdout: { error: 'invalid_usage', message: '--to is required' } });
      const unreachable = await Cli.run(quiet, 'store', 'copy', '--from', 'postgres://postgres@127.0.0.1:1/nowhere', '--to', to, '--json');
      expect({ ...unreachable, stdout: JSON.parse(unreachable.stdout) }).toEqual({
        code: 1,
        stderr: '',
        stdout: { error: 'service_unavailable', message: expect.stringMatching(/^cannot reach PostgreSQL at 127\.0\.0\.1:1\/nowhere: /) },
      });
    } finally {
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });

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
