import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, test, vi } from 'vitest';
import * as Jobs from '../src/health/Jobs.js';
import * as Log from '../src/log/Logger.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as LogHoles from '../src/retrieval/LogHoles.js';
import * as SnapshotKeeper from '../src/retrieval/SnapshotKeeper.js';
import * as VectorCodes from '../src/retrieval/vectors/VectorCodes.js';
import * as Items from '../src/store/Items.js';
import * as SignCodes from '../src/store/SignCodes.js';
import * as Stores from '../src/store/Store.js';
import * as Cli from './support/Cli.js';
import * as EmbeddingServer from './support/EmbeddingServer.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';
import * as Served from './support/Served.js';

/**
 * The vector codes' snapshot: an instance that starts from it finds what one that read the stored vectors finds,
 * follows the vector log from the position it covers, and refuses one that is damaged, of another store, index or
 * format, or older than the log reaches back: it says why and reads the stored vectors, never scanning what it refused.
 */

const dimensions = 24;

/** A seeded random number generator, so every run draws the same vectors and questions. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

const vectorOf = (r: () => number) => Float32Array.from({ length: dimensions }, () => r() * 2 - 1);

type Place = Awaited<ReturnType<typeof Engines.fresh>>;

const opened: { close(): Promise<void> }[] = [];
const places: Place[] = [];
afterAll(async () => {
  for (const store of opened) await store.close();
  for (const place of places) await place.drop();
});

async function connect(place: Place): Promise<Stores.Store> {
  const { store } = await Stores.open(place.target);
  opened.push(store);
  return store;
}

/** Puts an item of `count` chunks, each with a random vector, in a channel. */
async function put(store: Stores.Store, r: () => number, channelId: string, externalId: string, count: number): Promise<void> {
  await store.items.put(
    SearchTerms.indexed({
      channelId,
      externalId,
      title: externalId,
      contentHash: `${externalId}-${r()}`,
      chunks: Array.from({ length: count }, (_, i) => ({ text: `chunk ${i} of ${externalId}` })),
      vectors: Array.from({ length: count }, () => vectorOf(r)),
    }),
  );
}

/** A store of three channels and 600 chunks with vectors, on this run's engine; the connection that wrote it. */
async function stocked(name: string) {
  const place = await Engines.fresh(Engines.current, `vector-snapshot-${name}`);
  places.push(place);
  const store = await connect(place);
  const peek = await Peek.open(place.env);
  opened.push(peek);
  const r = random(17);
  const profile = await store.profiles.create({ slug: name, name, visibility: 'public' });
  const channels = ['ch_one', 'ch_two', 'ch_three'];
  for (const id of channels) await store.channels.create({ id, profileId: profile.id, kind: 'user_upload', label: id, accessLevel: 'public', ratePerMillionTokens: 1 });
  await store.vectors.create({ embedderId: 'fixed', dimensions });
  for (let i = 0; i < 20; i++) await put(store, r, channels[i % 3]!, `item${i}`, 30);
  return { place, store, peek, channels, r };
}

/** 60 random questions, some scoped to one channel: what `a` finds equals what `b` finds. */
async function sameNearest(a: Stores.Store, b: Stores.Store, channels: string[]): Promise<void> {
  const r = random(29);
  for (let q = 0; q < 60; q++) {
    const query = { vector: vectorOf(r), limit: 10, channelIds: q % 3 === 0 ? [channels[q % channels.length]!] : channels, oversample: 4 };
    expect(await VectorCodes.nearest(a, query)).toEqual(await VectorCodes.nearest(b, query));
  }
}

const silent = () => Log.create({ level: 'silent' });

describe('sign codes as an image', () => {
  test('behavior: codes made from another set\'s image find the same chunks, and take writes as it does', () => {
    const r = random(3);
    const original = SignCodes.create(70);
    // Rows out of rowid order, a removed code, and two channels.
    for (const rowid of [5, 9, 2, 40, 41, 7, 100]) original.put(rowid, rowid % 2 ? 'odd' : 'even', Float32Array.from({ length: 70 }, () => r() - 0.5));
    original.remove(40);
    const copy = SignCodes.create(70, structuredClone(original.image()));
    expect([copy.size, copy.dead]).toEqual([original.size, original.dead]);
    for (let q = 0; q < 30; q++) {
      const vector = Float32Array.from({ length: 70 }, () => r() - 0.5);
      const scope = q % 2 ? ['odd'] : ['odd', 'even'];
      expect(copy.nearest(vector, scope, 4)).toEqual(original.nearest(vector, scope, 4));
    }
    const later = Float32Array.from({ length: 70 }, () => r() - 0.5);
    for (const codes of [original, copy]) {
      codes.put(2, 'odd', later);
      codes.put(3, 'new', later);
      codes.remove(9);
      codes.compact();
    }
    expect(copy.nearest(later, ['odd', 'even', 'new'], 10)).toEqual(original.nearest(later, ['odd', 'even', 'new'], 10));
    expect(copy.nearest(later, ['odd', 'even', 'new'], 2)).toEqual([2, 3]);
  });

  test('error: an image that is not one is refused with the reason', () => {
    const codes = SignCodes.create(64);
    codes.put(1, 'a', new Float32Array(64).fill(1));
    codes.put(2, 'b', new Float32Array(64).fill(-1));
    const image = () => structuredClone(codes.image());
    const short = image();
    expect(() => SignCodes.create(64, { ...short, rows: short.rows.subarray(1) })).toThrow(/bytes of codes for 2 rows/);
    const twice = image();
    twice.rowids[1] = 1;
    expect(() => SignCodes.create(64, twice)).toThrow(/chunk 1 .* two rows/);
    const unnamed = image();
    expect(() => SignCodes.create(64, { ...unnamed, channels: ['a'] })).toThrow(/channel 2, which is not named/);
    expect(() => SignCodes.create(64, { ...image(), channels: ['a', 'a'] })).toThrow(/named twice/);
    // 70 dimensions fill two 64-bit words but for 58 bits, which no vector sets.
    const wide = SignCodes.create(70);
    wide.put(1, 'a', new Float32Array(70).fill(1));
    const spare = structuredClone(wide.image());
    expect(() => SignCodes.create(70, structuredClone(spare))).not.toThrow();
    spare.rows[8 + 9]! |= 0x40;
    expect(() => SignCodes.create(70, spare)).toThrow(/signs past dimension 70/);
  });

  test('behavior: holes a snapshot header carries are whole positions below it, each once, the nearest 10,000 at most, each with when it was noted where the header says', () => {
    expect(LogHoles.carried([5, 5, 3, -1, 0, 2.5, '4', 9, 10, 12], undefined, 10).map((h) => h.seq)).toEqual([9, 5, 3]);
    expect(LogHoles.carried('many', [1], 10)).toEqual([]);
    const flood = LogHoles.carried(Array.from({ length: 50_000 }, (_, i) => i + 1), undefined, 60_000);
    expect([flood.length, flood[0]!.seq, flood.at(-1)!.seq]).toEqual([10_000, 50_000, 40_001]);
    // Times stay with their positions; one that is not a positive whole number is unknown, and so are all of them
    // when the two lists differ in length.
    expect(LogHoles.carried([3, 9, 5, 7], [30, 90, 'x', -7], 10)).toEqual([
      { seq: 9, since: 90 },
      { seq: 7, since: undefined },
      { seq: 5, since: undefined },
      { seq: 3, since: 30 },
    ]);
    expect(LogHoles.carried([3, 9], [30], 10)).toEqual([
      { seq: 9, since: undefined },
      { seq: 3, since: undefined },
    ]);
  });

  test('behavior: holes taken from a snapshot are looked at until 5 minutes after they were noted, not after they were read, and once more', () => {
    let now = 1_000_000;
    const writer = new LogHoles.Holes(() => now);
    writer.between(10, 14);
    now += 4 * 60_000;
    const reader = new LogHoles.Holes(() => now);
    const header = LogHoles.header(writer.carry());
    reader.adopt(LogHoles.carried(header.holes, header.holesSince, 20));
    // One without a time (a snapshot written before they were kept), or with one still to come, waits from now.
    reader.adopt([{ seq: 17, since: undefined }, { seq: 18, since: now + 60_000 }]);
    expect(reader.open().sort()).toEqual([11, 12, 13, 17, 18]);
    now += 60_000 + 1;
    // Past their wait, holes get one last look before they are forgotten (one it found filled is applied next).
    const last = reader.look();
    expect(last.seqs.sort()).toEqual([11, 12, 13, 17, 18]);
    last.done([12]);
    expect(reader.look().seqs.sort()).toEqual([12, 17, 18]);
    reader.fill(12);
    expect(reader.open().sort()).toEqual([17, 18]);
    now += 4 * 60_000;
    expect(reader.open()).toEqual([]);
  });
});

describe('vector snapshots', () => {
  test('behavior: codes started from the snapshot find what codes read from the stored vectors find, and follow later writes', async () => {
    const { place, store, channels, r } = await stocked('round-trip');
    expect((await VectorCodes.warm(store))!.origin.source).toBe('rows');
    const written = await VectorCodes.subject(store).write();
    expect(written.bytes).toBeGreaterThan(600 * (8 + SignCodes.rowBytes(dimensions)));
    const restarted = await connect(place);
    expect(await VectorCodes.warm(restarted)).toEqual({ held: 600, origin: { source: 'snapshot' } });
    await sameNearest(restarted, store, channels);
    // Writes after the snapshot, from another connection: replaced content, a removed item, a new one.
    await put(store, r, channels[0]!, 'item0', 12);
    await store.items.remove(Items.itemId(channels[1]!, 'item1'));
    await put(store, r, channels[2]!, 'newest', 25);
    await sameNearest(restarted, store, channels);
    // And a third connection started from the same (now older) snapshot follows them as well.
    const third = await connect(place);
    expect((await VectorCodes.warm(third))!.origin.source).toBe('snapshot');
    await sameNearest(third, store, channels);
  });

  test('behavior: a snapshot is written as the codes are now, though no question has read the log since the writes', async () => {
    const { place, store, channels, r } = await stocked('current');
    await VectorCodes.warm(store);
    const writer = await connect(place);
    for (let i = 0; i < 5; i++) await put(writer, r, channels[i % 3]!, `later${i}`, 10);
    const written = await VectorCodes.subject(store).write();
    expect(written.position).toBe((await store.vectors.logBounds()).last);
    const restarted = await connect(place);
    expect(await VectorCodes.warm(restarted)).toEqual({ held: 650, origin: { source: 'snapshot' } });
    await sameNearest(restarted, writer, channels);
  });

  test('behavior: on a log pruned to its last entry, as a store copy leaves it, codes read from the stored vectors write a snapshot the next instance starts from', async () => {
    const { place, store, peek, channels, r } = await stocked('copied');
    await peek.run('DELETE FROM vector_log WHERE seq < (SELECT max(seq) FROM vector_log)');
    expect((await VectorCodes.warm(store))!.origin.source).toBe('rows');
    await VectorCodes.subject(store).write();
    const restarted = await connect(place);
    expect(await VectorCodes.warm(restarted)).toEqual({ held: 600, origin: { source: 'snapshot' } });
    await sameNearest(restarted, store, channels);
    await put(store, r, channels[0]!, 'after-the-copy', 5);
    await sameNearest(restarted, store, channels);
  });

  test('behavior: codes started from the snapshot look at the holes it carries until 5 minutes after they were noted, as its writer would, not after they read them', async () => {
    const { place, store, peek } = await stocked('aged');
    await peek.run('DELETE FROM vector_log WHERE seq < (SELECT max(seq) FROM vector_log)');
    // The positions below the log's last entry are noted as holes while the vectors are read.
    expect((await VectorCodes.warm(store))!.origin.source).toBe('rows');
    const noted = Date.now();
    await VectorCodes.subject(store).write();
    const carried = async () => (JSON.parse((await peek.value<string>('SELECT header FROM vector_snapshot'))!) as { holes: number[] }).holes.length;
    expect(await carried()).toBeGreaterThan(0);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(noted + 4 * 60_000);
      const restarted = await connect(place);
      expect((await VectorCodes.warm(restarted))!.origin.source).toBe('snapshot');
      await VectorCodes.subject(restarted).write();
      expect(await carried()).toBeGreaterThan(0);
      vi.setSystemTime(noted + 5 * 60_000 + 1);
      await VectorCodes.subject(restarted).write();
      expect(await carried()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  const spoilers: [string, (store: Stores.Store, peek: Peek.Peek) => Promise<unknown>, RegExp][] = [
    ['a byte of it changed', (_, peek) => flipByte(peek), /do not check/],
    ['made from another store', (store) => store.meta.set('store_id', 'store_elsewhere'), /another store/],
    ['of another format', (_, peek) => peek.run(`UPDATE vector_snapshot SET header = replace(header, '"format":1', '"format":99')`), /format 99/],
    ['of a rebuilt vector index', (_, peek) => peek.run(`UPDATE vector_snapshot SET header = replace(header, '"index":"', '"index":"older')`), /another vector index/],
    ['with a header that is not one', (_, peek) => peek.run(`UPDATE vector_snapshot SET header = '[]'`), /not a snapshot header/],
    ['a part missing', (_, peek) => peek.run('DELETE FROM vector_snapshot_parts'), /parts were missing/],
    ['older than the log reaches back', (_, peek) => peek.run('DELETE FROM vector_log WHERE seq < (SELECT max(seq) FROM vector_log)'), /covers the write log to/],
    [
      'waiting for a write the log was pruned past',
      async (_, peek) => {
        await peek.run(`UPDATE vector_snapshot SET header = replace(header, '"holes":[]', '"holes":[1]')`);
        await peek.run('DELETE FROM vector_log WHERE seq = (SELECT min(seq) FROM vector_log)');
      },
      /pruned past position 1/,
    ],
  ];

  test.each(spoilers)('behavior: a snapshot %s is refused with the reason, and the codes are read from the stored vectors', async (_, spoil, reason) => {
    const { place, store, peek, channels, r } = await stocked('refused');
    await VectorCodes.warm(store);
    await VectorCodes.subject(store).write();
    // A write after it, so a stale snapshot is also behind the rows.
    await put(store, r, channels[0]!, 'after', 5);
    await spoil(store, peek);
    const restarted = await connect(place);
    const warmed = (await VectorCodes.warm(restarted))!;
    expect(warmed.origin).toEqual({ source: 'rows', refused: { id: expect.stringMatching(/^snap_/), reason: expect.stringMatching(reason) } });
    expect(warmed.held).toBe(605);
    await sameNearest(restarted, store, channels);
  });

  test('behavior: a rebuilt index is not read from the snapshot of the one before', async () => {
    const { place, store } = await stocked('rebuilt');
    await VectorCodes.warm(store);
    await VectorCodes.subject(store).write();
    await store.vectors.create({ embedderId: 'fixed', dimensions });
    const warmed = (await VectorCodes.warm(await connect(place)))!;
    expect(warmed).toEqual({ held: 0, origin: { source: 'rows', refused: { id: expect.stringMatching(/^snap_/), reason: expect.stringMatching(/another vector index/) } } });
  });
});

describe('vector writes that commit out of order', () => {
  // PostgreSQL numbers log entries as they are written, not as they commit; SQLite has one writer at a time.
  test.runIf(Engines.current === 'postgres')(
    'behavior: an entry that commits after a later one is still applied: by codes following the log, codes read from the stored vectors meanwhile, and codes started from a snapshot written meanwhile',
    async () => {
      const { place, store, channels, r } = await stocked('late');
      await VectorCodes.warm(store);
      const other = await connect(place);
      const [slowVector, quickVector] = [vectorOf(r), vectorOf(r)];
      const commit = await outOfOrder(store, other, channels[0]!, slowVector, quickVector);
      // Whether the chunk with exactly this vector is found.
      const found = async (codes: Stores.Store, vector: Float32Array) => ((await VectorCodes.nearest(codes, { vector, limit: 1, channelIds: channels }))[0]?.similarity ?? 0) > 0.9999;
      expect(await found(store, quickVector)).toBe(true);
      expect(await found(store, slowVector)).toBe(false);
      // Codes read from the rows now, and a snapshot written now, cover the later entry, not the one still in flight.
      const fromRows = await connect(place);
      expect((await VectorCodes.warm(fromRows))!.origin.source).toBe('rows');
      await VectorCodes.subject(store).write();
      await commit();
      expect(await found(store, slowVector)).toBe(true);
      expect(await found(fromRows, slowVector)).toBe(true);
      const restarted = await connect(place);
      expect((await VectorCodes.warm(restarted))!.origin.source).toBe('snapshot');
      expect(await found(restarted, slowVector)).toBe(true);
      expect(await found(restarted, quickVector)).toBe(true);
      // Started from the snapshot after the hole's wait ran out: they still look once.
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        vi.setSystemTime(Date.now() + 6 * 60_000);
        const later = await connect(place);
        expect((await VectorCodes.warm(later))!.origin.source).toBe('snapshot');
        expect(await found(later, slowVector)).toBe(true);
      } finally {
        vi.useRealTimers();
      }
    },
  );

  test.runIf(Engines.current === 'postgres')('behavior: codes waiting on a hole the log was pruned past read the stored vectors again', async () => {
    const { place, store, channels, r } = await stocked('pruned-hole');
    await VectorCodes.warm(store);
    const [other, peek] = [await connect(place), await Peek.open(place.env)];
    opened.push(peek);
    const [slowVector, quickVector] = [vectorOf(r), vectorOf(r)];
    const commit = await outOfOrder(store, other, channels[0]!, slowVector, quickVector);
    const found = async (vector: Float32Array) => ((await VectorCodes.nearest(store, { vector, limit: 1, channelIds: channels }))[0]?.similarity ?? 0) > 0.9999;
    expect(await found(quickVector)).toBe(true);
    await commit();
    // The log is trimmed to its last entry: the slow write's entry is gone before the codes looked at it again.
    await peek.run('DELETE FROM vector_log WHERE seq < (SELECT max(seq) FROM vector_log)');
    expect(await found(slowVector)).toBe(true);
  });
});

describe('the vector snapshot keeper', () => {
  test('behavior: it writes once the codes are read, not again until the log has moved past its lag limit, again for a rebuilt index, and leaves it to the holder of the lease', async () => {
    const { place, store, peek } = await stocked('keeper');
    const logger = silent();
    const keeper = SnapshotKeeper.start({ store, subject: VectorCodes.subject(store), logger, minChunks: 0, everyMs: 3_600_000 });
    expect(await keeper.check()).toBe('not loaded');
    await VectorCodes.warm(store);
    const small = SnapshotKeeper.start({ store, subject: VectorCodes.subject(store), logger, minChunks: 1_000_000, everyMs: 3_600_000 });
    expect(await small.check()).toBe('small store');
    small.stop();
    expect(await keeper.check()).toBe('written');
    expect(await keeper.check()).toBe('not due');
    // A snapshot another connection refused is made again by it, however recent.
    await flipByte(peek);
    const other = await connect(place);
    expect((await VectorCodes.warm(other))!.origin.refused).toBeDefined();
    const otherKeeper = SnapshotKeeper.start({ store: other, subject: VectorCodes.subject(other), logger, minChunks: 0, everyMs: 3_600_000 });
    expect(await otherKeeper.check()).toBe('written');
    otherKeeper.stop();
    expect((await VectorCodes.warm(await connect(place)))!.origin.source).toBe('snapshot');
    // A rebuilt index: the old index's snapshot is made again, by an instance that has not read the new codes yet too.
    await store.vectors.create({ embedderId: 'fixed', dimensions });
    expect(await keeper.check()).toBe('written');
    // Another instance, still holding the old index's codes, finds that snapshot fits the store's index: not due.
    const idle = await connect(place);
    await VectorCodes.warm(idle);
    const idleKeeper = SnapshotKeeper.start({ store: idle, subject: VectorCodes.subject(idle), logger, minChunks: 0, everyMs: 3_600_000 });
    await idle.vectors.create({ embedderId: 'fixed', dimensions });
    expect(await keeper.check()).toBe('written');
    expect(await idleKeeper.check()).toBe('not due');
    idleKeeper.stop();
    // While another process holds the lease, the snapshot is left to it.
    await store.snapshots.drop('vectors');
    let release!: () => void;
    const holding = Jobs.oneAtATime(store, 'vector_snapshot', () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await keeper.check()).toBe('left to another');
    release();
    await holding;
    expect(await keeper.check()).toBe('written');
    keeper.stop();
  });
});

describe('vector snapshots between serving instances', () => {
  const children: ChildProcess[] = [];
  let embeddings: Awaited<ReturnType<typeof EmbeddingServer.start>> | undefined;
  afterAll(async () => {
    children.forEach((child) => child.kill('SIGKILL'));
    await embeddings?.close();
  });

  const until = async (what: () => boolean | Promise<boolean>, label: string) => {
    for (const started = Date.now(); !(await what()); await new Promise((resolve) => setTimeout(resolve, 100))) {
      if (Date.now() - started > 30_000) throw new Error(`waited 30 s for ${label}`);
    }
  };

  test('behavior: a serving instance writes the vector snapshot once its codes are read, and the next one starts from it', async () => {
    embeddings = await EmbeddingServer.start();
    const place = await Engines.fresh(Engines.current, 'vector-snapshot-serve');
    places.push(place);
    // Every store keeps a snapshot here: the demo store is far below the default's 50,000 chunks.
    const env = {
      ENVIRONMENT: 'test',
      ...place.env,
      SYNC_SCHEDULE: 'false',
      LOG_LEVEL: 'info',
      SEARCH_SNAPSHOT_MIN_CHUNKS: '0',
      EMBEDDER: 'openai',
      EMBEDDING_BASE_URL: embeddings.url,
      EMBEDDING_MODEL: 'stand-in',
      EMBEDDING_API_KEY: 'sk-test',
    };
    // The demo dataset, then its vectors.
    const seeding = await Served.serve(env, children);
    await until(() => seeding.log().includes('search index: snapshot written'), 'the demo dataset to be loaded');
    seeding.child.kill('SIGTERM');
    await seeding.exited;
    expect((await Cli.run({ ...env, LOG_LEVEL: 'silent' }, 'reindex', '--no-terms')).code).toBe(0);
    const first = await Served.serve(env, children);
    await until(() => first.log().includes('vector index: snapshot written'), 'the first instance to write its vector snapshot');
    expect(first.log()).toMatch(/"source":"rows".*"message":"vector index loaded"/);
    first.child.kill('SIGTERM');
    await first.exited;
    const second = await Served.serve(env, children);
    await until(() => second.log().includes('vector index loaded'), 'the second instance to read its codes');
    expect(second.log()).toMatch(/"source":"snapshot".*"message":"vector index loaded"/);
    // It follows the snapshot's own position: nothing is due, so it writes none.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(second.log()).not.toContain('vector index: snapshot written');
  });
});

/**
 * Two writes that commit out of order, as PostgreSQL numbers them: a chunk with `slow` written on `store` and held in
 * its transaction, then one with `quick` written and committed on `other`. Returns what commits the first.
 */
async function outOfOrder(store: Stores.Store, other: Stores.Store, channelId: string, slow: Float32Array, quick: Float32Array): Promise<() => Promise<void>> {
  const only = (id: string, vector: Float32Array) => SearchTerms.indexed({ channelId, externalId: id, title: id, contentHash: id, chunks: [{ text: id }], vectors: [vector] });
  let commit!: () => void;
  const held = new Promise<void>((resolve) => (commit = resolve));
  let written!: () => void;
  const inLog = new Promise<void>((resolve) => (written = resolve));
  const transaction = store.transaction(async (tx) => {
    await tx.items.put(only('slow', slow));
    written();
    await held;
  });
  await inLog;
  await other.items.put(only('quick', quick));
  return async () => {
    commit();
    await transaction;
  };
}

/** Flips one byte in the middle of the snapshot's first part, as a disk or a careless hand might. */
async function flipByte(peek: Peek.Peek): Promise<void> {
  const bytes = Buffer.from((await peek.value<Uint8Array>('SELECT bytes FROM vector_snapshot_parts WHERE part = 0'))!);
  bytes[bytes.length >> 1]! ^= 0x10;
  await peek.run('UPDATE vector_snapshot_parts SET bytes = ? WHERE part = 0', bytes);
}
