import { describe, expect, test } from 'vitest';
import { blockLength, Cursor, PostingList, Probe } from '../src/retrieval/index/Postings.js';

/**
 * Posting lists in blocks: whatever is pushed reads back the same, through every way a search reads it (in order,
 * block by block, by looking documents up), before and after a list is trimmed, and with postings appended
 * afterwards.
 */

function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

/** Ascending documents with gaps from 1 to `widest`, and counts up to 65,535. */
function postings(n: number, widest: number, seed: number): { docs: number[]; counts: number[] } {
  const r = random(seed);
  const docs: number[] = [];
  const counts: number[] = [];
  let doc = Math.floor(r() * 10);
  for (let i = 0; i < n; i++) {
    docs.push(doc);
    counts.push(r() < 0.9 ? 1 + Math.floor(r() * 5) : Math.floor(r() * 65_536));
    doc += 1 + Math.floor(r() * r() * widest);
  }
  return { docs, counts };
}

const sizes = [0, 1, 2, blockLength - 1, blockLength, blockLength + 1, 3 * blockLength, 1000, 5000];

describe('PostingList', () => {
  test.each(sizes)('behavior: %i postings read back as pushed, in order and block by block', (n) => {
    for (const widest of [2, 300, 1 << 19]) {
      const { docs, counts } = postings(n, widest, n + widest);
      const list = new PostingList(n);
      docs.forEach((doc, i) => list.push(doc, counts[i]!));
      for (const trimmed of [false, true]) {
        if (trimmed) list.trim();
        const seen: [number, number][] = [];
        list.forEach((doc, count) => seen.push([doc, count]));
        expect(seen).toEqual(docs.map((doc, i) => [doc, counts[i]]));
        const cursor = new Cursor(list);
        expect(cursor.length).toBe(n);
        for (let p = 0; p < n; p += 1 + Math.floor(p / 7)) expect(cursor.doc(p)).toBe(docs[p]);
        expect([...cursor.firstDocs(1000)]).toEqual(docs.slice(0, 1000));
        // A seek finds the first document at or after any target, wherever it falls (one made anew each time, as a
        // search thread's first claim does, and one seeking forward again and again, as its later claims do).
        const onward = new Cursor(list);
        const first = (target: number) => docs.findIndex((doc) => doc >= target);
        for (const target of [0, ...docs.filter((_, i) => i % 37 === 0).flatMap((doc) => [doc - 1, doc, doc + 1]), (docs.at(-1) ?? 0) + 1]) {
          const expected = first(target) < 0 ? n : first(target);
          expect(new Cursor(list).seek(target)).toBe(expected);
          expect(onward.seek(target)).toBe(expected);
        }
        // Over its view, as a search thread reads it: the same postings.
        const over: [number, number][] = [];
        PostingList.over(list.view()).forEach((doc, count) => over.push([doc, count]));
        expect(over).toEqual(seen);
      }
    }
  });

  test.each(sizes)('behavior: a probe of %i postings gives the count of every document asked in rising order, 0 for one absent', (n) => {
    for (const widest of [2, 300, 1 << 19]) {
      const { docs, counts } = postings(n, widest, 7 * n + widest);
      const list = new PostingList(n);
      docs.forEach((doc, i) => list.push(doc, counts[i]!));
      const held = new Map(docs.map((doc, i) => [doc, counts[i]!]));
      const r = random(n + widest);
      // Every density of asking: each document and its neighbours, every few, or a few far apart.
      for (const share of [1, 0.3, 0.01]) {
        const asked = new Set<number>();
        for (const doc of docs) if (r() < share) [doc - 1, doc, doc + 1, doc + Math.floor(r() * widest)].forEach((t) => t >= 0 && asked.add(t));
        const targets = [...asked].sort((x, y) => x - y);
        const probe = new Probe(list);
        const found = targets.map((t) => probe.countOf(t));
        expect(found).toEqual(targets.map((t) => held.get(t) ?? 0));
      }
    }
  });

  test.each(['trimmed', 'restored from its parts'])('behavior: postings appended after a list was %s read back after the rest, by every reader, and into parts again', (how) => {
    const { docs, counts } = postings(1500, 1000, 5);
    let list = new PostingList(500);
    docs.slice(0, 500).forEach((doc, i) => list.push(doc, counts[i]!));
    list.trim();
    if (how !== 'trimmed') list = PostingList.restore(list.parts());
    // Enough to seal several blocks after the load, into memory of their own.
    docs.slice(500).forEach((doc, i) => list.push(doc, counts[500 + i]!));
    const seen: [number, number][] = [];
    list.forEach((doc, count) => seen.push([doc, count]));
    expect(seen).toEqual(docs.map((doc, i) => [doc, counts[i]]));
    const probe = new Probe(list);
    expect(docs.map((doc) => probe.countOf(doc))).toEqual(counts);
    const again: [number, number][] = [];
    PostingList.restore(list.parts()).forEach((doc, count) => again.push([doc, count]));
    expect(again).toEqual(seen);
  });

  test('behavior: a long list of small gaps and counts takes about two bytes a posting; plain arrays took six', () => {
    const { docs } = postings(100_000, 40, 9);
    const list = new PostingList(docs.length);
    docs.forEach((doc, i) => list.push(doc, 1 + (i % 5)));
    list.trim();
    expect(list.byteSize() / docs.length).toBeLessThan(2.1);
  });
});
