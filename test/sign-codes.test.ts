import fs from 'node:fs';
import { describe, expect, test } from 'vitest';
import * as SignCodes from '../src/store/SignCodes.js';
import * as Wat from './support/Wat.js';

let seed = 7;
const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const vectorOf = (dimensions: number) => Float32Array.from({ length: dimensions }, () => random() - 0.5);

/** What the scan must find, computed the slow way: Hamming distance of signs, ties to the earlier chunk. */
function reference(chunks: { rowid: number; channel: string; vector: Float32Array }[], query: Float32Array, channels: Set<string>, wanted: number): number[] {
  const distance = (v: Float32Array) => v.reduce((d, x, i) => d + (x > 0 !== query[i]! > 0 ? 1 : 0), 0);
  return chunks
    .map((c, order) => ({ ...c, order, d: distance(c.vector) }))
    .filter((c) => channels.has(c.channel))
    .sort((a, b) => a.d - b.d || a.order - b.order)
    .slice(0, wanted)
    .sort((a, b) => a.order - b.order)
    .map((c) => c.rowid);
}

describe('SignCodes', () => {
  test.each([384, 100, 64, 1])('behavior: finds the chunks whose signs differ least, within the channels (%i dimensions)', (dimensions) => {
    const codes = SignCodes.create(dimensions);
    // Enough chunks that the codes outgrow WebAssembly memory's first pages several times.
    const chunks = Array.from({ length: 5000 }, (_, i) => ({ rowid: 10 + i * 3, channel: `ch_${i % 7}`, vector: vectorOf(dimensions) }));
    for (const c of chunks) codes.put(c.rowid, c.channel, c.vector);
    expect(codes.size).toBe(5000);
    for (const [channels, wanted] of [
      [new Set(['ch_0', 'ch_1', 'ch_2', 'ch_3', 'ch_4', 'ch_5', 'ch_6']), 40],
      [new Set(['ch_3']), 25],
      [new Set(['ch_2', 'ch_5', 'ch_unknown']), 100],
      [new Set(['ch_6']), 5000],
    ] as const) {
      const query = vectorOf(dimensions);
      const found = codes.nearest(query, channels, wanted);
      expect(found).toEqual(reference(chunks, query, channels, wanted));
    }
  });

  test('behavior: codes added after a scan are found by the next', () => {
    const codes = SignCodes.create(16);
    const near = Float32Array.from({ length: 16 }, (_, i) => (i % 2 ? 1 : -1));
    codes.put(1, 'ch_a', Float32Array.from(near, (x) => -x));
    expect(codes.nearest(near, ['ch_a'], 1)).toEqual([1]);
    codes.put(2, 'ch_a', near);
    codes.put(3, 'ch_b', near);
    expect(codes.nearest(near, ['ch_a'], 1)).toEqual([2]);
    expect(codes.nearest(near, ['ch_a', 'ch_b'], 2)).toEqual([2, 3]);
  });

  test('behavior: a code put again replaces the one held; a removed code is never found', () => {
    const codes = SignCodes.create(16);
    const a = Float32Array.from({ length: 16 }, (_, i) => (i % 2 ? 1 : -1));
    const b = Float32Array.from(a, (x) => -x);
    // Out of rowid order, as vectors written late arrive.
    for (const [rowid, vector] of [[5, a], [9, b], [2, b], [7, a]] as const) codes.put(rowid, 'ch_a', vector);
    expect(codes.nearest(a, ['ch_a'], 2)).toEqual([5, 7]);
    codes.put(5, 'ch_a', b);
    codes.put(2, 'ch_a', a);
    expect(codes.nearest(a, ['ch_a'], 2)).toEqual([2, 7]);
    codes.remove(7);
    codes.remove(7);
    codes.remove(404);
    expect([codes.size, codes.dead]).toEqual([3, 1]);
    // All the channel holds, in the order rows were first held.
    expect(codes.nearest(a, ['ch_a'], 4)).toEqual([5, 9, 2]);
    // A removed chunk's code put again lives in its old row; one moved to another channel is found only there.
    codes.put(7, 'ch_b', a);
    expect([codes.size, codes.dead]).toEqual([4, 0]);
    expect(codes.nearest(a, ['ch_a'], 1)).toEqual([2]);
    expect(codes.nearest(a, ['ch_b'], 4)).toEqual([7]);
  });

  test('behavior: any mix of puts, removals and compactions finds what a plain list of the live codes does', () => {
    const dimensions = 70;
    const codes = SignCodes.create(dimensions);
    // The reference: rows in the order first held, a removed one keeping its place until compacted.
    const rows: { rowid: number; channel: string; vector: Float32Array; dead: boolean }[] = [];
    for (let step = 0; step < 3000; step++) {
      const rowid = 1 + Math.floor(random() * 600);
      const action = random();
      const row = rows.find((r) => r.rowid === rowid);
      if (action < 0.6) {
        const put = { rowid, channel: `ch_${Math.floor(random() * 3)}`, vector: vectorOf(dimensions), dead: false };
        codes.put(put.rowid, put.channel, put.vector);
        if (row) Object.assign(row, put);
        else rows.push(put);
      } else if (action < 0.95) {
        codes.remove(rowid);
        if (row) row.dead = true;
      } else {
        codes.compact();
        rows.splice(0, rows.length, ...rows.filter((r) => !r.dead));
      }
      if (step % 50 === 0) {
        const live = rows.filter((r) => !r.dead);
        expect([codes.size, codes.dead]).toEqual([live.length, rows.length - live.length]);
        const query = vectorOf(dimensions);
        const channels = new Set(['ch_0', 'ch_2']);
        expect(codes.nearest(query, channels, 15)).toEqual(reference(live, query, channels, 15));
      }
    }
  });

  test('behavior: no channel held, or nothing held, finds nothing', () => {
    const codes = SignCodes.create(8);
    expect(codes.nearest(vectorOf(8), ['ch_a'], 3)).toEqual([]);
    codes.put(1, 'ch_a', vectorOf(8));
    expect(codes.nearest(vectorOf(8), ['ch_b'], 3)).toEqual([]);
    expect(codes.nearest(vectorOf(8), ['ch_a'], 0)).toEqual([]);
  });

  test('error: a dimension the scan cannot hold, or a vector of another, is refused', () => {
    expect(() => SignCodes.create(0)).toThrow(/dimension/);
    expect(() => SignCodes.create(SignCodes.maxDimensions + 1)).toThrow(/dimension/);
    expect(() => SignCodes.create(8).put(1, 'ch_a', vectorOf(9))).toThrow(/9 dimensions/);
  });

  test('behavior: the checked-in WebAssembly is what its text compiles to (`npm run build:wasm` remakes it)', async () => {
    const sources = Wat.sources();
    expect(sources.length).toBeGreaterThan(0);
    for (const file of sources) expect(Buffer.from(fs.readFileSync(Wat.binaryOf(file))).equals(Buffer.from(await Wat.compile(file)))).toBe(true);
  });
});
