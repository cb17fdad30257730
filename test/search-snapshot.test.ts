import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, test, vi } from 'vitest';
import * as Jobs from '../src/health/Jobs.js';
import * as Log from '../src/log/Logger.js';
import * as LexicalIndex from '../src/retrieval/index/LexicalIndex.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as SnapshotStore from '../src/retrieval/index/SnapshotStore.js';
import * as SnapshotKeeper from '../src/retrieval/SnapshotKeeper.js';
import * as Text from '../src/retrieval/Text.js';
import * as Items from '../src/store/Items.js';
import type * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import { connect, corpus, fresh, item, query, random, vocabulary } from './support/IndexCorpus.js';
import * as Served from './support/Served.js';

/**
 * The lexical index's snapshot: an instance that starts from it holds what one built from the rows holds, follows the
 * write log from the position it covers, and refuses one that is damaged, of another store, analysis or format, or
 * older than the log reaches back: it says why and builds from the rows, never searching what it refused.
 */

/** 300 random questions, some scoped to one channel: every answer and every statistic of `a` equals `b`'s. */
async function sameAnswers(a: LexicalIndex.LexicalIndex, b: LexicalIndex.LexicalIndex, channels: string[]): Promise<void> {
  const r = random(41);
  for (let q = 0; q < 300; q++) {
    const words = Array.from({ length: 1 + Math.floor(r() * 6) }, () => vocabulary[Math.floor(r() * r() * vocabulary.length)]!);
    const scope = q % 4 === 0 ? channels.slice(q % channels.length, (q % channels.length) + 1) : channels;
    expect(await a.search(query(words, scope))).toEqual(await b.search(query(words, scope)));
    expect(await a.searchExhaustive(query(words, scope, 10))).toEqual(await b.searchExhaustive(query(words, scope, 10)));
    const stems = words.map(Text.stem);
    const [sa, sb] = [await a.statistics(new Set(scope), stems), await b.statistics(new Set(scope), stems)];
    expect([sa.chunkCount, sa.averageTokens, ...stems.map((s) => sa.df(s))]).toEqual([sb.chunkCount, sb.averageTokens, ...stems.map((s) => sb.df(s))]);
  }
  // Postings of removed chunks stay in a followed index until it is filled afresh: only live chunks compare.
  expect(a.size().chunks).toBe(b.size().chunks);
}

/** A corpus with a private channel, a paused one and removed items besides the public ones: every kind of count. */
async function mixed(name: string) {
  const c = await corpus(name, 900);
  const r = random(5);
  const owner = await c.store.profiles.create({ slug: `private-${name}`, name: 'Private', visibility: 'private' });
  const hidden = (await c.store.channels.create({ profileId: owner.id, kind: 'rss', label: 'notes', accessLevel: 'public', ratePerMillionTokens: 1 })).id;
  for (let i = 0; i < 60; i++) await c.store.items.put(item(r, hidden, `p${i}`));
  await c.store.channels.update(c.channels[2]!, { status: 'paused' });
  for (let i = 0; i < 30; i++) await c.store.items.remove(Items.itemId(c.channels[i % 2]!, `i${i * 3 + (i % 2)}`));
  return { ...c, all: [...c.channels, hidden], r };
}

const refusals = () => {
  const said: string[] = [];
  return { said, onSnapshotRefused: (reason: string) => said.push(reason) };
};

describe('search index snapshots', () => {
  test('behavior: an index started from the snapshot answers and counts exactly as one built from the rows', async () => {
    const { place, store, all } = await mixed('round-trip');
    const written = await (await LexicalIndex.open(store)).writeSnapshot();
    expect(written.bytes).toBeGreaterThan(0);
    const restarted = await LexicalIndex.open(await connect(place));
    expect(restarted.origin()).toEqual({ source: 'snapshot', position: written.position });
    const fromRows = await LexicalIndex.open(store, { snapshot: false });
    expect(fromRows.origin().source).toBe('rows');
    await sameAnswers(restarted, fromRows, all);
  });

  test('behavior: a snapshot cut in many parts is read whole, parts in flight together', async () => {
    const { place, store, all } = await mixed('parts');
    await (await LexicalIndex.open(store)).writeSnapshot();
    // The same bytes cut again into parts of 4 kB, under a new id.
    const row = (await store.snapshots.current('search'))!;
    const body = new Uint8Array(row.bytes);
    for (let part = 0, at = 0; part < row.parts; part++) {
      const bytes = (await store.snapshots.part('search', row.id, part))!;
      body.set(bytes, at);
      at += bytes.length;
    }
    await store.snapshots.replace('search', { id: 'snap_recut', position: row.position, header: row.header, createdAt: row.createdAt }, body, 4096);
    expect((await store.snapshots.current('search'))!.parts).toBeGreaterThan(10);
    const seen: number[] = [];
    const restarted = await LexicalIndex.open(await connect(place), { onLoading: (p) => seen.push(p.done) });
    expect(restarted.origin().source).toBe('snapshot');
    expect(seen.at(-1)).toBe(row.bytes);
    await sameAnswers(restarted, await LexicalIndex.open(store, { snapshot: false }), all);
  });

  test('behavior: writes after the snapshot (new, replaced and removed chunks, a channel paused and resumed) are followed from its position', async () => {
    const { place, store, channels, all, r } = await mixed('follow');
    const writer = await LexicalIndex.open(store);
    await writer.writeSnapshot();
    // Enough new chunks that restored lists seal blocks of their own, and every other kind of write.
    for (let i = 0; i < 400; i++) await store.items.put(item(r, channels[i % 2]!, `late${i}`));
    for (let i = 0; i < 20; i++) await store.items.put(item(r, channels[0]!, `i${i * 3}`));
    for (let i = 100; i < 130; i++) await store.items.remove(Items.itemId(channels[i % 3]!, `i${i}`));
    await store.channels.update(channels[2]!, { status: 'live' });
    await store.channels.update(channels[1]!, { status: 'paused' });
    const restarted = await LexicalIndex.open(await connect(place));
    expect(restarted.origin().source).toBe('snapshot');
    await sameAnswers(restarted, await LexicalIndex.open(store, { snapshot: false }), all);
    // And it keeps following: a chunk written now is found at the next search.
    await store.items.put(item(r, channels[0]!, 'newest'));
    await sameAnswers(restarted, await LexicalIndex.open(store, { snapshot: false }), all);
  });

  test('behavior: on a log pruned to its last entry, as a store copy leaves it, an index built from the rows writes a snapshot the next instance starts from', async () => {
    const { place, store, peek, channels, all, r } = await mixed('copied');
    await peek.run('DELETE FROM search_log WHERE seq < (SELECT max(seq) FROM search_log)');
    const told = refusals();
    const loaded = await LexicalIndex.open(store, told);
    expect(loaded.origin().source).toBe('rows');
    await loaded.writeSnapshot();
    const restarted = await LexicalIndex.open(await connect(place), told);
    expect(told.said).toEqual([]);
    expect(restarted.origin().source).toBe('snapshot');
    await sameAnswers(restarted, await LexicalIndex.open(store, { snapshot: false }), all);
    await store.items.put(item(r, channels[0]!, 'after-the-copy'));
    await sameAnswers(restarted, await LexicalIndex.open(store, { snapshot: false }), all);
  });

  test('behavior: an instance started from the snapshot looks at the holes it carries until 5 minutes after they were noted, as its writer would, not after it read them', async () => {
    const { place, store, peek } = await mixed('aged');
    await peek.run('DELETE FROM search_log WHERE seq < (SELECT max(seq) FROM search_log)');
    // The positions below the log's last entry are noted as holes while the rows are read.
    const loaded = await LexicalIndex.open(store);
    const noted = Date.now();
    await loaded.writeSnapshot();
    const carried = async () => (JSON.parse((await peek.value<string>('SELECT header FROM search_snapshot'))!) as { holes: number[] }).holes.length;
    expect(await carried()).toBeGreaterThan(0);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(noted + 4 * 60_000);
      const restarted = await LexicalIndex.open(await connect(place));
      expect(restarted.origin().source).toBe('snapshot');
      await restarted.writeSnapshot();
      expect(await carried()).toBeGreaterThan(0);
      vi.setSystemTime(noted + 5 * 60_000 + 1);
      await restarted.writeSnapshot();
      expect(await carried()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  const spoilers: [string, (store: Stores.Store, peek: Awaited<ReturnType<typeof corpus>>['peek']) => Promise<unknown>, RegExp][] = [
    ['a byte of it changed', (_, peek) => flipByte(peek), /do not check/],
    ['made from another store', (store) => store.meta.set('store_id', 'store_elsewhere'), /another store/],
    ['of another analysis', (_, peek) => peek.run(`UPDATE search_snapshot SET header = replace(header, '"analysis":"1"', '"analysis":"0"')`), /analysed with version 0/],
    ['of another format', (_, peek) => peek.run(`UPDATE search_snapshot SET header = replace(header, '"format":1', '"format":99')`), /format 99/],
    ['with a header that is not one', (_, peek) => peek.run(`UPDATE search_snapshot SET header = 'null'`), /not a snapshot header/],
    ['of an impossible size', (_, peek) => peek.run(`UPDATE search_snapshot SET bytes = -1, header = replace(header, '"bytes":', '"bytes":-1,"was":')`), /not whole numbers/],
    ['a part missing', (_, peek) => peek.run('DELETE FROM search_snapshot_parts'), /parts were missing/],
    ['older than the log reaches back', (_, peek) => peek.run('DELETE FROM search_log WHERE seq < (SELECT max(seq) FROM search_log)'), /covers the write log to/],
    [
      'waiting for a write the log was pruned past',
      async (_, peek) => {
        await peek.run(`UPDATE search_snapshot SET header = replace(header, '"holes":[]', '"holes":[1]')`);
        await peek.run('DELETE FROM search_log WHERE seq = (SELECT min(seq) FROM search_log)');
      },
      /pruned past position 1/,
    ],
  ];

  test.each(spoilers)('behavior: a snapshot %s is refused with the reason, and the index is built from the rows', async (_, spoil, reason) => {
    const { place, store, peek, all, channels, r } = await mixed('refused');
    await (await LexicalIndex.open(store)).writeSnapshot();
    // A write after it, so a stale snapshot is also behind the rows.
    for (let i = 0; i < 5; i++) await store.items.put(item(r, channels[0]!, `after${i}`));
    await spoil(store, peek);
    const told = refusals();
    const restarted = await LexicalIndex.open(await connect(place), told);
    expect(told.said).toEqual([expect.stringMatching(reason)]);
    expect(restarted.origin().source).toBe('rows');
    await sameAnswers(restarted, await LexicalIndex.open(store, { snapshot: false }), all);
  });

  test('behavior: readiness is told how far a load has got, from the snapshot or from the rows', async () => {
    const { place, store } = await mixed('progress');
    const rows: { source: string; done: number; total: number }[] = [];
    await LexicalIndex.open(store, { snapshot: false, onLoading: (p) => rows.push(p) });
    const chunks = await store.search.count();
    expect(rows.at(-1)).toEqual({ source: 'rows', done: chunks, total: chunks });
    const written = await (await LexicalIndex.open(store)).writeSnapshot();
    const bytes: { source: string; done: number; total: number }[] = [];
    await LexicalIndex.open(await connect(place), { onLoading: (p) => bytes.push(p) });
    expect(bytes.at(-1)).toEqual({ source: 'snapshot', done: written.bytes, total: written.bytes });
  });
});

/**
 * A write of "slowpoke" left in flight (its log entry numbered, not committed) while another connection commits
 * "quickstep" after it; `commit` lets the first commit, and returns once it has.
 */
/** Runs `work` with the clock 6 minutes on: past the 5 minutes a hole is waited for. */
async function afterTheWait(work: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    vi.setSystemTime(Date.now() + 6 * 60_000);
    await work();
  } finally {
    vi.useRealTimers();
  }
}

async function overtaken(store: Stores.Store, other: Stores.Store, channelId: string): Promise<{ commit: () => Promise<void> }> {
  const only = (word: string, id: string) => SearchTerms.indexed({ channelId, externalId: id, title: id, contentHash: id, chunks: [{ text: `${word} ${word}` }] });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let written!: () => void;
  const inLog = new Promise<void>((resolve) => (written = resolve));
  const slow = store.transaction(async (tx) => {
    await tx.items.put(only('slowpoke', 'slow'));
    written();
    await held;
  });
  await inLog;
  await other.items.put(only('quickstep', 'quick'));
  return {
    commit: async () => {
      release();
      await slow;
    },
  };
}

describe('writes that commit out of order', () => {
  // PostgreSQL numbers log entries as they are written, not as they commit; SQLite has one writer at a time.
  test.runIf(Engines.current === 'postgres')(
    'behavior: an entry that commits after a later one is still applied: by a running index, one built from rows meanwhile, and one started from a snapshot written meanwhile',
    async () => {
      const { place, store, channels } = await corpus('late', 30);
      const index = await LexicalIndex.open(store);
      const other = await connect(place);
      const { commit } = await overtaken(store, other, channels[0]!);
      const found = async (i: LexicalIndex.LexicalIndex, word: string) => (await i.search(query([word], channels, 5))).length;
      expect(await found(index, 'quickstep')).toBe(1);
      expect(await found(index, 'slowpoke')).toBe(0);
      // A snapshot written now covers the later entry, not the one still in flight; so does an index built from rows.
      await index.writeSnapshot();
      const fromRows = await LexicalIndex.open(other, { snapshot: false });
      await commit();
      expect(await found(index, 'slowpoke')).toBe(1);
      expect(await found(fromRows, 'slowpoke')).toBe(1);
      const restarted = await LexicalIndex.open(await connect(place));
      expect(restarted.origin().source).toBe('snapshot');
      expect(await found(restarted, 'slowpoke')).toBe(1);
      expect(await found(restarted, 'quickstep')).toBe(1);
      // Started from the snapshot after the hole's wait ran out: it still looks once.
      await afterTheWait(async () => {
        const later = await LexicalIndex.open(await connect(place));
        expect(later.origin().source).toBe('snapshot');
        expect(await found(later, 'slowpoke')).toBe(1);
      });
    },
  );

  test.runIf(Engines.current === 'postgres')('behavior: an index no question read for longer than a hole\'s wait still applies the write that committed late into it', async () => {
    const { place, store, channels } = await corpus('idle', 30);
    const index = await LexicalIndex.open(store);
    const { commit } = await overtaken(store, await connect(place), channels[0]!);
    const found = async (word: string) => (await index.search(query([word], channels, 5))).length;
    expect(await found('quickstep')).toBe(1);
    await commit();
    await afterTheWait(async () => expect(await found('slowpoke')).toBe(1));
  });

  test.runIf(Engines.current === 'postgres')(
    'behavior: a write in flight when the log was emptied to its last entry commits below it, and is applied by an index built from rows then and by one started from its snapshot',
    async () => {
      const { place, store, peek, channels } = await corpus('emptied', 30);
      const other = await connect(place);
      const { commit } = await overtaken(store, other, channels[0]!);
      // What a store copy leaves, and what a writer emptying the log meanwhile would: the entry in flight is not seen.
      await peek.run('DELETE FROM search_log WHERE seq < (SELECT max(seq) FROM search_log)');
      const fromRows = await LexicalIndex.open(other, { snapshot: false });
      await fromRows.writeSnapshot();
      await commit();
      const found = async (i: LexicalIndex.LexicalIndex, word: string) => (await i.search(query([word], channels, 5))).length;
      expect(await found(fromRows, 'slowpoke')).toBe(1);
      const told = refusals();
      const restarted = await LexicalIndex.open(await connect(place), told);
      expect(told.said).toEqual([]);
      expect(restarted.origin().source).toBe('snapshot');
      expect(await found(restarted, 'slowpoke')).toBe(1);
      expect(await found(restarted, 'quickstep')).toBe(1);
    },
  );

  test.runIf(Engines.current === 'postgres')('behavior: an index waiting on a hole the log was pruned past is built again from the rows', async () => {
    const { place, store, peek, channels } = await corpus('pruned-hole', 30);
    const index = await LexicalIndex.open(store);
    const other = await connect(place);
    const { commit } = await overtaken(store, other, channels[0]!);
    const found = async (word: string) => (await index.search(query([word], channels, 5))).length;
    expect(await found('quickstep')).toBe(1);
    await commit();
    // The log is trimmed to its last entry: the slow write's entries are gone before the index looked at them again.
    await peek.run('DELETE FROM search_log WHERE seq < (SELECT max(seq) FROM search_log)');
    expect(await found('slowpoke')).toBe(1);
  });
});

describe('the snapshot keeper', () => {
  test('behavior: it writes a snapshot when none fits, then not until the log has moved past its lag limit, and leaves it to the holder of the lease', async () => {
    const { store, peek, channels, r } = await mixed('keeper');
    const index = await LexicalIndex.open(store);
    const logger = Log.create({ level: 'silent' });
    const keeper = (minChunks: number) => SnapshotKeeper.start({ store, subject: SnapshotStore.subject(store, () => index), logger, minChunks, everyMs: 3_600_000 });
    const small = keeper(1_000_000);
    expect(await small.check()).toBe('small store');
    small.stop();
    const kept = keeper(0);
    expect(await kept.check()).toBe('written');
    for (let i = 0; i < 5; i++) await store.items.put(item(r, channels[0]!, `more${i}`));
    expect(await kept.check()).toBe('not due');
    // A snapshot the index refused at its load is made again however recent it is.
    await flipByte(peek);
    const refusing = await LexicalIndex.open(store, refusals());
    const keptAfterRefusal = SnapshotKeeper.start({ store, subject: SnapshotStore.subject(store, () => refusing), logger, minChunks: 0, everyMs: 3_600_000 });
    expect(await keptAfterRefusal.check()).toBe('written');
    expect((await LexicalIndex.open(store)).origin().source).toBe('snapshot');
    // While another process holds the lease, the snapshot is left to it.
    await store.snapshots.drop('search');
    let release!: () => void;
    const holding = Jobs.oneAtATime(store, 'search_snapshot', () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await kept.check()).toBe('left to another');
    release();
    await holding;
    expect(await kept.check()).toBe('written');
    kept.stop();
    keptAfterRefusal.stop();
  });

  test('behavior: the lag limit is 5% of the chunks, from 10,000 log entries to half what the log keeps (200,000 for the search index, 100,000 for vectors)', () => {
    const sizes = [0, 100_000, 1_000_000, 4_000_000];
    expect(sizes.map((chunks) => SnapshotKeeper.lagLimit(chunks))).toEqual([10_000, 10_000, 50_000, 100_000]);
    expect(sizes.map((chunks) => SnapshotKeeper.lagLimit(chunks, 100_000))).toEqual([10_000, 10_000, 50_000, 50_000]);
  });
});

describe('search index snapshots between serving instances', () => {
  const children: ChildProcess[] = [];
  afterAll(() => children.forEach((child) => child.kill('SIGKILL')));

  const until = async (what: () => boolean | Promise<boolean>, label: string) => {
    for (const started = Date.now(); !(await what()); await new Promise((resolve) => setTimeout(resolve, 100))) {
      if (Date.now() - started > 30_000) throw new Error(`waited 30 s for ${label}`);
    }
  };

  test('behavior: a serving instance writes the snapshot once its index is loaded, and the next one starts from it', async () => {
    const place = await fresh('serve');
    // Every store keeps a snapshot here: the demo store is far below the default's 50,000 chunks.
    const env = { ENVIRONMENT: 'test', ...place.env, SYNC_SCHEDULE: 'false', LOG_LEVEL: 'info', SEARCH_SNAPSHOT_MIN_CHUNKS: '0' };
    const first = await Served.serve(env, children);
    await until(() => first.log().includes('snapshot written'), 'the first instance to write its snapshot');
    expect(first.log()).toMatch(/"from":"rows".*"message":"search index loaded"/);
    first.child.kill('SIGTERM');
    await first.exited;
    const second = await Served.serve(env, children);
    await until(async () => (await fetch(`${second.url}/ready`)).status === 200, 'the second instance to be ready');
    expect(second.log()).toMatch(/"from":"snapshot".*"message":"search index loaded"/);
    // It follows the snapshot's own position: nothing is due, so it writes none.
    expect(second.log()).not.toContain('snapshot written');
    const answer = await fetch(`${second.url}/api/profiles`);
    expect(answer.status).toBe(200);
  });
});

/** Flips one byte in the middle of the snapshot's first part, as a disk or a careless hand might. */
async function flipByte(peek: Awaited<ReturnType<typeof corpus>>['peek']): Promise<void> {
  const bytes = Buffer.from((await peek.value<Uint8Array>('SELECT bytes FROM search_snapshot_parts WHERE part = 0'))!);
  bytes[bytes.length >> 1]! ^= 0x10;
  await peek.run('UPDATE search_snapshot_parts SET bytes = ? WHERE part = 0', bytes);
}
