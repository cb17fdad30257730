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

  test('behavior: documents past those the search is told of are not scored, wherever they fall', () => {
    for (const docs of [[10_000], [50, 10_000], [50, 99, 100, 4_095, 4_096, 70_000]]) {
      const top = MaxScore.topK({ terms: [{ list: list(docs), idf: 1 }], k: 10, scoring: scoring(100_000), documents: 100, accept: () => true });
      expect(top.map((r) => r.doc)).toEqual(docs.filter((doc) => doc < 100));
    }
  });
});
