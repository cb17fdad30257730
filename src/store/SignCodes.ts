import fs from 'node:fs';

/**
 * Chunks' vectors reduced to their signs (one bit a dimension), held in WebAssembly memory for the nearest-neighbour
 * scan: a 64-bit popcount (SignCodes.wat) compares 384 dimensions in six instructions, where JavaScript has no
 * popcount and took eight times as long (2.5 ms against 0.3 at 100k chunks).
 */
export type SignCodes = {
  readonly dimensions: number;
  /** How many codes are held. */
  readonly count: number;
  /** Holds one chunk's code, filed under its channel. */
  add(rowid: number, channelId: string, vector: Float32Array): void;
  /**
   * The rowids of the `wanted` chunks within the channels whose signs differ least from the vector's (Hamming
   * distance), in the order they were added: all of them when the channels hold fewer.
   */
  nearest(vector: Float32Array, channelIds: Iterable<string>, wanted: number): number[];
};

type Scan = {
  memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  distances(rows: number, count: number, words: number, query: number, allowed: number, out: number, tiers: number): void;
  collect(distances: number, count: number, edge: number, room: number, out: number): number;
};

/** The part of the WebAssembly API used here: Node's types declare it only with the DOM library. */
type WebAssemblyApi = { Module: new (binary: Uint8Array) => object; Instance: new (module: object) => { exports: unknown } };
const wasm = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;
let compiled: object | undefined;
const scanModule = () => (compiled ??= new wasm.Module(fs.readFileSync(new URL('./SignCodes.wasm', import.meta.url))));

/**
 * Memory layout: the question's code at 0, the count of chunks at each distance at 1 KiB, the codes from 64 KiB (a
 * row is the channel's number, 4 bytes of padding and the signs in 64-bit words), then a question's scratch space:
 * distances, the channels it may read, the chunks it keeps. Codes never move, so growing keeps them in place.
 */
const pageBytes = 65536;
const queryAt = 0;
const tiersAt = 1024;
const rowsAt = pageBytes;
/** The largest dimension the fixed area holds: its distance counts end below the codes. */
export const maxDimensions = 8192;
const align8 = (n: number) => Math.ceil(n / 8) * 8;

/** An empty set of codes for vectors of a dimension. */
export function create(dimensions: number): SignCodes {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > maxDimensions) throw new Error(`bad vector dimension ${dimensions}`);
  const words = Math.ceil(dimensions / 64);
  const stride = 8 + words * 8;
  const scan = new wasm.Instance(scanModule()).exports as Scan;
  const channelNumbers = new Map<string, number>();
  let rowids = new Float64Array(0);
  let count = 0;
  let bytes = new Uint8Array(scan.memory.buffer);
  let view = new DataView(scan.memory.buffer);
  const reserve = (size: number) => {
    const short = size - scan.memory.buffer.byteLength;
    if (short > 0) scan.memory.grow(Math.ceil(short / pageBytes));
    // Growing detaches the old buffer: views are taken anew.
    if (bytes.buffer !== scan.memory.buffer) {
      bytes = new Uint8Array(scan.memory.buffer);
      view = new DataView(scan.memory.buffer);
    }
  };
  const pack = (vector: Float32Array, at: number) => {
    bytes.fill(0, at, at + words * 8);
    for (let d = 0; d < dimensions; d++) if (vector[d]! > 0) bytes[at + (d >>> 3)]! |= 1 << (d & 7);
  };
  return {
    dimensions,
    get count() {
      return count;
    },
    add(rowid, channelId, vector) {
      if (vector.length !== dimensions) throw new Error(`vector of ${vector.length} dimensions for codes of ${dimensions}`);
      if (count === rowids.length) {
        const grown = new Float64Array(Math.max(1024, rowids.length * 2));
        grown.set(rowids);
        rowids = grown;
        reserve(rowsAt + rowids.length * stride);
      }
      let channel = channelNumbers.get(channelId);
      if (channel === undefined) channelNumbers.set(channelId, (channel = channelNumbers.size));
      const row = rowsAt + count * stride;
      // WebAssembly reads memory little-endian, whatever the machine.
      view.setInt32(row, channel, true);
      pack(vector, row + 8);
      rowids[count] = rowid;
      count += 1;
    },
    nearest(vector, channelIds, wanted) {
      if (count === 0 || wanted < 1) return [];
      const distancesAt = rowsAt + rowids.length * stride;
      const allowedAt = distancesAt + align8(count * 2);
      const outAt = allowedAt + align8(channelNumbers.size);
      reserve(outAt + Math.min(wanted, count) * 4);
      bytes.fill(0, allowedAt, allowedAt + channelNumbers.size);
      let any = false;
      for (const id of channelIds) {
        const n = channelNumbers.get(id);
        if (n === undefined) continue;
        bytes[allowedAt + n] = 1;
        any = true;
      }
      if (!any) return [];
      pack(vector, queryAt);
      bytes.fill(0, tiersAt, tiersAt + (dimensions + 1) * 4);
      scan.distances(rowsAt, count, words, queryAt, allowedAt, distancesAt, tiersAt);
      // The nearest distance that reaches `wanted` chunks, and how many chunks at it still fit.
      const tier = (d: number) => view.getUint32(tiersAt + d * 4, true);
      let edge = 0;
      for (let seen = 0; edge <= dimensions; edge++) {
        seen += tier(edge);
        if (seen >= wanted) break;
      }
      let room = wanted;
      for (let d = 0; d < edge; d++) room -= tier(d);
      const kept = scan.collect(distancesAt, count, edge, room, outAt);
      return Array.from({ length: kept }, (_, j) => rowids[view.getInt32(outAt + j * 4, true)]!);
    },
  };
}
