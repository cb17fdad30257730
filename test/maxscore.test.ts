import { describe, expect, test } from 'vitest';
import * as MaxScore from '../src/retrieval/index/MaxScore.js';
import { PostingList } from '../src/retrieval/index/Postings.js';

/**
 * The pruned search on hand-made lists, for what random questions rarely meet: many chunks tied at the k-th best
 * (the same footer on every page of a manual), and documents numbered past the ones the search is told of.
 */

function list(docs: number[], count = 1): PostingList {
  const made = new PostingList(docs.length);
  for (const doc of docs) made.push(doc, count);
  made.trim();
  return made;
}

const scoring = (documents: number) => ({ k1: 1.2, b: 0.75, averageLength: 100, docLength: new Int32Array(documents).fill(100) });

describe('MaxScore', () => {
  test('behavior: 40,000 chunks tied at the k-th best give the k earliest, pruned and exhaustive alike', () => {
    const n = 40_000;
    const footer = list(Array.from({ length: n }, (_, doc) => doc));
    // A few chunks hold a rarer word too: they come first, then the earliest of the tied ones.
    const rare = list([7, 20_000, 39_999]);
    const terms = [
      { list: footer, idf: 0.5 },
      { list: rare, idf: 3 },
    ];
    for (const exhaustive of [false, true]) {
      const top = MaxScore.topK({ terms, k: 10, scoring: scoring(n), documents: n, accept: () => true, exhaustive });
      expect(top.map((r) => r.doc)).toEqual([7, 20_000, 39_999, 0, 1, 2, 3, 4, 5, 6]);
      expect(new Set(top.slice(3).map((r) => r.score)).size).toBe(1);
    }
  });

  test('behavior: the documents searched in ranges by threads sharing one threshold give the whole search\'s top k, ties included', () => {
    let seed = 11;
    const r = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const n = 30_000;
    const docLength = Int32Array.from({ length: n }, () => 20 + Math.floor(r() * 200));
    for (let question = 0; question < 40; question++) {
      const terms = Array.from({ length: 1 + Math.floor(r() * 6) }, () => {
        const share = r() * r();
        const docs = Array.from({ length: n }, (_, doc) => doc).filter(() => r() < share);
        const made = new PostingList(docs.length);
        // Counts of 1 on a shared footer give ties at the k-th best; the others vary.
        for (const doc of docs) made.push(doc, question % 4 === 0 ? 1 : 1 + Math.floor(r() * 5));
        made.trim();
        return { list: made, idf: 0.2 + r() * 4 };
      });
      const scoring = { k1: 1.2, b: 0.75, averageLength: 120, docLength };
      const accept = (doc: number) => doc % 13 !== 0;
      const k = question % 3 === 0 ? 10 : 100;
      const whole = MaxScore.topK({ terms, k, scoring, documents: n, accept });
      const plan = MaxScore.plan({ terms, k, scoring, accept })!;
      // Ranges as threads claim them: each thread's ascending, the threads' interleaved.
      for (const cuts of [[0, 4096, n], [0, 8192, 16_384, 24_576, n], [0, 4096, 8192, 12_288, 16_384, 20_480, n], [0, 29_999, n]]) {
        const ranges = cuts.slice(1).map((to, i) => ({ from: cuts[i]!, to }));
        for (const threads of [2, 3]) {
          const shared = new MaxScore.SharedThreshold();
          const parts = Array.from({ length: threads }, (_, t) => {
            const mine = ranges.filter((_, i) => i % threads === t);
            return MaxScore.search(plan, () => mine.shift(), accept, shared);
          });
          expect(MaxScore.best(parts, k)).toEqual(whole);
        }
      }
    }
  });

  test('behavior: a shared threshold only rises, whoever raises it', () => {
    const shared = new MaxScore.SharedThreshold();
    expect(shared.value()).toBe(-Infinity);
    shared.raise(2.5);
    shared.raise(1);
    expect(shared.value()).toBe(2.5);
    const seen = new MaxScore.SharedThreshold(shared.buffer);
    seen.raise(3.75);
    expect(shared.value()).toBe(3.75);
  });

  test('behavior: documents past those the search is told of are not scored, wherever they fall', () => {
    for (const docs of [[10_000], [50, 10_000], [50, 99, 100, 4_095, 4_096, 70_000]]) {
      const top = MaxScore.topK({ terms: [{ list: list(docs), idf: 1 }], k: 10, scoring: scoring(100_000), documents: 100, accept: () => true });
      expect(top.map((r) => r.doc)).toEqual(docs.filter((doc) => doc < 100));
    }
  });
});
