import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../src/config/Config.js';
import * as LexicalIndex from '../src/retrieval/index/LexicalIndex.js';
import * as MaxScore from '../src/retrieval/index/MaxScore.js';
import { PostingList } from '../src/retrieval/index/Postings.js';
import * as SearchShards from '../src/retrieval/index/SearchShards.js';
import * as Items from '../src/store/Items.js';
import { after, connect, corpus, item, query, random, vocabulary } from './support/IndexCorpus.js';

/**
 * A question's first stage split over threads (SearchShards): the chunks in ranges, each searched by a thread of its
 * own over the index in shared memory, the ranges sharing one threshold. Whatever the threads do, a question gets
 * what one thread searching every chunk gets: the exact top k.
 */

const questions = (seed: number, count: number, channels: string[]) => {
  const r = random(seed);
  return Array.from({ length: count }, (_, q) => {
    const words = Array.from({ length: 1 + Math.floor(r() * 8) }, () => vocabulary[Math.floor(r() * r() * vocabulary.length)]!);
    return query(words, q % 5 === 0 ? channels.slice(0, 1 + (q % 2)) : channels, q % 7 === 0 ? 10 : 100);
  });
};

async function threaded(store: Parameters<typeof LexicalIndex.open>[0], threads: number, onThreadFailure?: (error: Error) => void) {
  const index = await LexicalIndex.open(store, { threads, threadMinChunks: 0, ...(onThreadFailure && { onThreadFailure }) });
  after(() => index.close());
  expect(await index.threads()).toBe(threads);
  return index;
}

/**
 * One list of 20,000 chunks whose best lie past the first range, and the same list as a thread is sent it with its
 * parts disagreeing on its length: the thread refuses it and answers with the error.
 */
function oneList() {
  const n = 20_000;
  const r = random(3);
  const docs = Array.from({ length: n }, (_, doc) => doc).filter(() => r() < 0.3);
  const list = new PostingList(docs.length);
  for (const doc of docs) list.push(doc, doc > 15_000 ? 8 : 1 + Math.floor(r() * 4));
  list.trim();
  const broken = Object.assign(Object.create(Object.getPrototypeOf(list) as object) as PostingList, list);
  broken.view = () => ({ ...list.view(), length: list.length + 1 });
  const docLength = new Int32Array(new SharedArrayBuffer(4 * n)).fill(50);
  const filter = { deleted: new Uint8Array(new SharedArrayBuffer(n)), channelOfDoc: new Int32Array(new SharedArrayBuffer(4 * n)), allowed: Uint8Array.of(1) };
  return { n, list, broken, filter, scoring: { k1: 1.2, b: 0.75, averageLength: 50, docLength } };
}

describe('search threads', () => {
  test('behavior: a question searched by three threads gets exactly what one thread gets, and the exhaustive top k, from rows and from a snapshot', async () => {
    // 3,000 items of 3 chunks: three ranges of whole 4,096-chunk windows.
    const { store, channels } = await corpus('threads-exact', 3000);
    const single = await LexicalIndex.open(store);
    const three = await threaded(store, 3);
    await single.writeSnapshot();
    const restored = await threaded(store, 3);
    expect(restored.origin().source).toBe('snapshot');
    const split = SearchShards.counters.split;
    for (const q of questions(5, 100, channels)) {
      const expected = await single.search(q);
      expect(await single.searchExhaustive(q)).toEqual(expected);
      expect(await three.search(q)).toEqual(expected);
      expect(await restored.search(q)).toEqual(expected);
    }
    // Every question went to the threads, twice (the index from rows and the one from the snapshot), but those that
    // found a thread busy.
    expect(SearchShards.counters.split - split).toBeGreaterThan(180);
  }, 120_000);

  test('behavior: writes from another connection while questions run on threads leave every answer exact, and the index current', async () => {
    const { place, store, channels } = await corpus('threads-writes', 3000);
    const index = await threaded(store, 2);
    const writer = await connect(place);
    const r = random(31);
    const asked = questions(9, 80, channels);
    // Questions in flight together with writes and removals: a question finds the threads busy (searched here whole)
    // or free (split), and a write waits for the threads to finish reading.
    await Promise.all([
      ...asked.map((q) => index.search(q)),
      (async () => {
        for (let i = 0; i < 60; i++) {
          await writer.items.put(item(r, channels[i % 3]!, `late-${i}`));
          if (i % 4 === 0) await writer.items.remove(Items.itemId(channels[(i * 7) % 3]!, `i${i * 7}`));
        }
      })(),
    ]);
    const fresh = await LexicalIndex.open(store, { snapshot: false });
    for (const q of asked) expect(await index.search(q)).toEqual(await fresh.search(q));
  }, 120_000);

  test('behavior: a range a thread fails to search is searched here, and the answer is the same', async () => {
    const { n, list, broken, filter, scoring } = oneList();
    const failures: Error[] = [];
    const shards = SearchShards.create({ threads: 2, minDocuments: 0, onFailure: (error) => failures.push(error) });
    after(() => shards.close());
    expect(await shards.start(n)).toBe(2);
    const expected = MaxScore.topK({ terms: [{ list, idf: 1.5 }], k: 20, scoring, documents: n, accept: () => true });
    const plan = MaxScore.plan({ terms: [{ list: broken, idf: 1.5 }], k: 20, scoring, accept: () => true })!;
    expect(expected.every((r) => r.doc > 15_000)).toBe(true);
    expect(MaxScore.best(await shards.search(plan, n, filter), 20)).toEqual(expected);
    // A refused question is not a failed thread: the next one is split again.
    expect(failures).toEqual([]);
    const split = SearchShards.counters.split;
    const fine = MaxScore.plan({ terms: [{ list, idf: 1.5 }], k: 20, scoring, accept: () => true })!;
    expect(MaxScore.best(await shards.search(fine, n, filter), 20)).toEqual(expected);
    expect(SearchShards.counters.split).toBe(split + 1);
    // Closed, it searches here alone.
    await shards.close();
    expect(MaxScore.best(await shards.search(fine, n, filter), 20)).toEqual(expected);
    expect(failures).toEqual([]);
  });

  test('behavior: a change to the index waits for a question split over threads, its fallback included, and questions asked meanwhile are not split', async () => {
    const { list, broken, filter, scoring, n } = oneList();
    const shards = SearchShards.create({ threads: 2, minDocuments: 0 });
    after(() => shards.close());
    await shards.start(n);
    const expected = MaxScore.topK({ terms: [{ list, idf: 1.5 }], k: 20, scoring, documents: n, accept: () => true });
    // The thread refuses this question, so it is searched again here, whole, after the thread has answered.
    const asking = shards.search(MaxScore.plan({ terms: [{ list: broken, idf: 1.5 }], k: 20, scoring, accept: () => true })!, n, filter);
    let changed = false;
    const change = shards.exclusive(() => {
      // What a write does: the chunks found are removed.
      for (const r of expected) filter.deleted[r.doc] = 1;
      changed = true;
    });
    // Asked while the change waits: searched here, whole, with the change not yet made.
    const split = SearchShards.counters.split;
    const meanwhile = await shards.search(MaxScore.plan({ terms: [{ list, idf: 1.5 }], k: 20, scoring, accept: () => true })!, n, filter);
    expect(SearchShards.counters.split).toBe(split);
    expect(MaxScore.best(meanwhile, 20)).toEqual(expected);
    expect(changed).toBe(false);
    expect(MaxScore.best(await asking, 20)).toEqual(expected);
    await change;
    expect(changed).toBe(true);
  });

  test('behavior: a process whose search threads are running ends when its work is done, unclosed', () => {
    const module = path.join(projectRoot, 'dist', 'src', 'retrieval', 'index', 'SearchShards.js');
    // The built module, as `profile-edge` runs it: a question's thread answers, and nothing closes the threads.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'threads-'));
    after(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const script = path.join(dir, 'exit.mjs');
    fs.writeFileSync(
      script,
      `const S = await import(${JSON.stringify(module)});
      const { PostingList } = await import(${JSON.stringify(path.join(path.dirname(module), 'Postings.js'))});
      const M = await import(${JSON.stringify(path.join(path.dirname(module), 'MaxScore.js'))});
      const s = S.create({ threads: 2, minDocuments: 0, onFailure: (e) => console.log(String(e)) });
      const threads = await s.start(100000);
      const list = new PostingList(50000);
      for (let doc = 0; doc < 100000; doc += 2) list.push(doc, 1 + (doc % 3));
      const n = 100000;
      const scoring = { k1: 1.2, b: 0.75, averageLength: 50, docLength: new Int32Array(new SharedArrayBuffer(4 * n)).fill(50) };
      const filter = { deleted: new Uint8Array(new SharedArrayBuffer(n)), channelOfDoc: new Int32Array(new SharedArrayBuffer(4 * n)), allowed: Uint8Array.of(1) };
      const found = await s.search(M.plan({ terms: [{ list, idf: 1 }], k: 5, scoring, accept: () => true }), n, filter);
      console.log(threads, found.length, S.counters.split);`,
    );
    const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
    expect(run.error).toBeUndefined();
    // Two threads, each with its finalists, one question split.
    expect(run.stdout.trim()).toBe('2 2 1');
    expect(run.status).toBe(0);
  });

  test('behavior: the ranges threads claim are whole windows of 4,096 chunks, and cover every chunk once however the claims interleave', () => {
    expect(SearchShards.stepFor(1_000_000, 2)).toBe(65_536);
    expect(SearchShards.stepFor(4000, 2)).toBe(4096);
    const r = random(17);
    for (const [documents, threads] of [[1_000_000, 2], [123_457, 3], [4097, 2], [40_000, 4]] as const) {
      const step = SearchShards.stepFor(documents, threads);
      expect(step % 4096).toBe(0);
      const buffer = new SharedArrayBuffer(4);
      const claimers = Array.from({ length: threads }, () => SearchShards.claims(buffer, documents, step));
      const taken: { from: number; to: number }[][] = claimers.map(() => []);
      const live = new Set(claimers.keys());
      while (live.size > 0) {
        const t = [...live][Math.floor(r() * live.size)]!;
        const range = claimers[t]!();
        if (range) taken[t]!.push(range);
        else live.delete(t);
      }
      // Each thread's ranges ascend; together they tile the documents.
      for (const mine of taken) mine.forEach((range, i) => i > 0 && expect(range.from).toBeGreaterThanOrEqual(mine[i - 1]!.to));
      const all = taken.flat().sort((x, y) => x.from - y.from);
      expect(all[0]!.from).toBe(0);
      expect(all.at(-1)!.to).toBe(documents);
      all.forEach((range, i) => i > 0 && expect(range.from).toBe(all[i - 1]!.to));
    }
  });
});
