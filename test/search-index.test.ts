import { describe, expect, test } from 'vitest';
import * as LexicalIndex from '../src/retrieval/index/LexicalIndex.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as Text from '../src/retrieval/Text.js';
import * as Items from '../src/store/Items.js';
import type * as Stores from '../src/store/Store.js';
import * as SearchDocs from '../src/store/SearchDocs.js';
import { connect, corpus, query, random, vocabulary } from './support/IndexCorpus.js';
import type * as Peek from './support/Peek.js';

/**
 * The in-memory lexical index: exact (the pruned search returns what scoring every match returns, and both equal a
 * plain BM25 written out below), current (a chunk written through any connection is found at the next search, a
 * removed one is gone), and rebuilt from the store after a restart.
 */

/** BM25 as written in the textbook, over the store's own rows: the reference both searches must equal. */
async function reference(store: Stores.Store, peek: Peek.Peek) {
  const docs = await peek.all<{ rowid: number; channelId: string; length: number; terms: Uint8Array }>('SELECT rowid, channel_id AS channelId, length, terms FROM search_docs ORDER BY rowid');
  const tf = docs.map((d) => {
    const m = new Map<number, number>();
    SearchDocs.decode(d.terms, (id, n) => m.set(id, n));
    return m;
  });
  return (stems: string[], channels: Set<string>, k: number) => bm25({ store, docs, tf, stems, channels, k });
}

async function bm25(input: { store: Stores.Store; docs: { rowid: number; channelId: string; length: number }[]; tf: Map<number, number>[]; stems: string[]; channels: Set<string>; k: number }) {
  const { store, docs, tf, stems, channels, k } = input;
  const known = await store.search.termIds(stems);
  const ids = stems.map((s) => known.get(s));
  const n = docs.length;
  const avg = docs.reduce((a, d) => a + d.length, 0) / n;
  const idf = ids.map((id) => {
    const df = id === undefined ? 0 : tf.filter((m) => m.has(id)).length;
    return Math.log(1 + (n - df + 0.5) / (df + 0.5));
  });
  return docs
    .map((d, i) => {
      let score = 0;
      let matched = false;
      ids.forEach((id, t) => {
        const f = id === undefined ? undefined : tf[i]!.get(id);
        if (f !== undefined) matched = true;
        score += f === undefined ? 0 : idf[t]! * ((f * 2.2) / (f + 1.2 * (0.25 + (0.75 * d.length) / avg)));
      });
      return { rowid: d.rowid, score, matched, channelId: d.channelId };
    })
    .filter((d) => d.matched && channels.has(d.channelId))
    .sort((a, b) => b.score - a.score || a.rowid - b.rowid)
    .slice(0, k)
    .map(({ rowid, score }) => ({ rowid, score }));
}

describe('LexicalIndex', () => {
  test.each([
    ['1,500 chunks', 1500],
    ['300 chunks: short lists, most of one open block', 300],
  ])('behavior: the pruned search returns exactly the exhaustive top 100, and both are plain BM25, on 300 random questions (%s)', async (name, size) => {
    const { store, peek, channels } = await corpus(`exact-${size}`, size);
    const index = await LexicalIndex.open(store);
    const plain = await reference(store, peek);
    const r = random(99);
    for (let q = 0; q < 300; q++) {
      const words = Array.from({ length: 1 + Math.floor(r() * 8) }, () => vocabulary[Math.floor(r() * r() * vocabulary.length)]!);
      // Every fifth question is scoped to one or two channels: the filter must not change exactness.
      const scope = q % 5 === 0 ? channels.slice(0, 1 + (q % 2)) : channels;
      const limit = q % 7 === 0 ? 10 : 100;
      const pruned = await index.search(query(words, scope, limit));
      const exhaustive = await index.searchExhaustive(query(words, scope, limit));
      expect(pruned).toEqual(exhaustive);
      const expected = await plain([...new Set(words.map(Text.stem))], new Set(scope), limit);
      expect(pruned.map((h) => h.rowid)).toEqual(expected.map((h) => h.rowid));
      pruned.forEach((h, i) => expect(h.score).toBeCloseTo(expected[i]!.score, 9));
    }
  });

  test('behavior: a chunk written or removed through another connection is found, or gone, at the next search', async () => {
    const { place, store, peek, channels } = await corpus('current', 50);
    const index = await LexicalIndex.open(store);
    const writerStore = await connect(place);
    const ask = async () => (await index.search(query(['glimmerwort'], channels, 5))).map((h) => h.rowid);
    expect(await ask()).toEqual([]);
    await writerStore.items.put(SearchTerms.indexed({ channelId: channels[0]!, externalId: 'fresh', title: 'Glimmerwort', contentHash: 'f1', chunks: [{ text: 'All about glimmerwort.' }] }));
    const [rowid] = await ask();
    expect(rowid).toBe(await peek.value("SELECT c.rowid FROM chunks c WHERE c.text LIKE '%glimmerwort%'"));
    expect((await index.statistics(new Set(channels), [Text.stem('glimmerwort')])).df(Text.stem('glimmerwort'))).toBe(1);
    // Replaced content: the old chunk's words go, the new ones come.
    await writerStore.items.put(SearchTerms.indexed({ channelId: channels[0]!, externalId: 'fresh', title: 'Moonpetal', contentHash: 'f2', chunks: [{ text: 'Now about moonpetal.' }] }));
    expect(await ask()).toEqual([]);
    expect((await index.statistics(new Set(channels), [Text.stem('glimmerwort')])).df(Text.stem('glimmerwort'))).toBe(0);
    expect(await index.search(query(['moonpetal'], channels, 5))).toHaveLength(1);
    await writerStore.items.remove(Items.itemId(channels[0]!, 'fresh'));
    expect(await index.search(query(['moonpetal'], channels, 5))).toEqual([]);
  });

  test('behavior: a write that rolls back leaves no trace, and the term ids it gave are not reused for other words', async () => {
    const { store, channels } = await corpus('rollback', 20);
    const index = await LexicalIndex.open(store);
    await expect(
      store.transaction(async (tx) => {
        await tx.items.put(SearchTerms.indexed({ channelId: channels[0]!, externalId: 'doomed', title: 'Doomed', contentHash: 'd', chunks: [{ text: 'quixotic zephyrs' }] }));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await store.items.put(SearchTerms.indexed({ channelId: channels[0]!, externalId: 'kept', title: 'Kept', contentHash: 'k', chunks: [{ text: 'vermilion lanterns' }] }));
    expect(await index.search(query(['quixotic'], channels, 5))).toEqual([]);
    expect(await index.search(query(['vermilion'], channels, 5))).toHaveLength(1);
    expect((await store.search.termIds([Text.stem('quixotic')])).get(Text.stem('quixotic'))).toBeUndefined();
  });

  test('behavior: after a restart the index is rebuilt from what was committed, and matches an index kept current', async () => {
    const { place, store, channels } = await corpus('restart', 200);
    const live = await LexicalIndex.open(store);
    for (let i = 0; i < 40; i++) await store.items.remove(Items.itemId(channels[i % 3]!, `i${i}`));
    await store.items.put(SearchTerms.indexed({ channelId: channels[1]!, externalId: 'late', title: 'Late', contentHash: 'l', chunks: [{ text: `${vocabulary[3]} ${vocabulary[5]}` }] }));
    const restarted = await LexicalIndex.open(await connect(place));
    for (const words of [[vocabulary[0]!, vocabulary[3]!], [vocabulary[5]!], vocabulary.slice(0, 8)]) {
      expect(await restarted.search(query(words, channels))).toEqual(await live.search(query(words, channels)));
    }
    expect(restarted.size().chunks).toBe(live.size().chunks);
  });

  test('behavior: a store from before the index is filled on open, resuming where an interrupted fill stopped', async () => {
    const { store, peek, channels } = await corpus('fill', 30);
    const expected = await (await LexicalIndex.open(store)).search(query([vocabulary[1]!, vocabulary[2]!], channels));
    // As a store from before the index would be: some rows missing, and no mark of a finished fill.
    expect(await peek.run('DELETE FROM search_docs WHERE rowid % 2 = 0')).toBeGreaterThan(0);
    await peek.run("DELETE FROM meta WHERE key = 'search_docs_filled'");
    const reopened = await LexicalIndex.open(store);
    expect(await reopened.search(query([vocabulary[1]!, vocabulary[2]!], channels))).toEqual(expected);
  });

  test('behavior: pausing a channel takes its chunks out of results and statistics; resuming brings them back', async () => {
    const { store, peek, channels } = await corpus('pause', 60);
    const index = await LexicalIndex.open(store);
    const all = new Set(channels);
    const before = await index.statistics(all, [Text.stem(vocabulary[0]!)]);
    await store.channels.update(channels[0]!, { status: 'paused' });
    const paused = await index.statistics(all, []);
    expect(paused.chunkCount).toBe(before.chunkCount - 60);
    const hits = await index.search(query(vocabulary.slice(0, 5), channels));
    const channelOf = (rowid: number) => peek.value('SELECT i.channel_id FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid = ?', rowid);
    expect(hits.length).toBeGreaterThan(0);
    for (const h of hits) expect(await channelOf(h.rowid)).not.toBe(channels[0]);
    await store.channels.update(channels[0]!, { status: 'live' });
    expect((await index.statistics(all, [])).chunkCount).toBe(before.chunkCount);
    expect((await index.statistics(all, [Text.stem(vocabulary[0]!)])).df(Text.stem(vocabulary[0]!))).toBe(before.df(Text.stem(vocabulary[0]!)));
  });
});
