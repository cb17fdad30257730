import fs from 'node:fs';

/**
 * Chunks' vectors reduced to their signs (one bit a dimension), held in WebAssembly memory for the nearest-neighbour
 * scan: a 64-bit popcount (SignCodes.wat) compares 384 dimensions in six instructions, where JavaScript has no
 * popcount and took eight times as long (2.5 ms against 0.3 at 100k chunks).
 */
export type SignCodes = {
  readonly dimensions: number;
  /** How many chunks have a code. */
  readonly size: number;
  /** Rows of removed codes, which the scan still passes over until compacted. */
  readonly dead: number;
  /** Holds a chunk's code, filed under its channel, replacing any it had. */
  put(rowid: number, channelId: string, vector: Float32Array): void;
  /** Forgets a chunk's code, if it has one. */
  remove(rowid: number): void;
  /** Gives up the rows of removed codes, in memory: the scan passes over live rows only. */
  compact(): void;
  /**
   * The rowids of the `wanted` chunks within the channels whose signs differ least from the vector's (Hamming
   * distance), in the order their rows were first held: all of them when the channels hold fewer.
   */
  nearest(vector: Float32Array, channelIds: Iterable<string>, wanted: number): number[];
  /**
   * The codes as arrays, for a snapshot: views into the codes' own memory, to be copied before anything changes them.
   */
  image(): Image;
};

/**
 * Codes as arrays: the channels by number (channel n is `channels[n - 1]`; 0 marks a removed code), each row's chunk,
 * and the rows as the scan reads them (the channel's number, 4 bytes of padding, the signs in 64-bit words).
 */
export type Image = { channels: string[]; rowids: Float64Array; rows: Uint8Array };

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
 * distances, the channels it may read, the chunks it keeps. Growing the memory keeps the codes in place.
 */
const pageBytes = 65536;
const queryAt = 0;
const tiersAt = 1024;
const rowsAt = pageBytes;
/** The largest dimension the fixed area holds: its distance counts end below the codes. */
export const maxDimensions = 8192;
const align8 = (n: number) => Math.ceil(n / 8) * 8;

/** The bytes of one row of codes for vectors of a dimension. */
export const rowBytes = (dimensions: number) => 8 + Math.ceil(dimensions / 64) * 8;

/**
 * A set of codes for vectors of a dimension: empty, or holding an image another set gave (throws when the image is not
 * one: rows of another length, a channel it does not name, a chunk twice).
 */
export function create(dimensions: number, from?: Image): SignCodes {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > maxDimensions) throw new Error(`bad vector dimension ${dimensions}`);
  const words = Math.ceil(dimensions / 64);
  const stride = rowBytes(dimensions);
  const scan = new wasm.Instance(scanModule()).exports as Scan;
  // Channel number 0 is no channel's: a removed code's row keeps it, and no scope allows it.
  const channelNumbers = new Map<string, number>();
  let rowids = new Float64Array(0);
  let rows = 0;
  let dead = 0;
  // Rows held in ascending rowid order (as codes are first read) are found by bisection; others by the map.
  let ascending = 0;
  const outOfOrder = new Map<number, number>();
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
  const rowOf = (rowid: number): number | undefined => {
    let low = 0;
    let high = ascending - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const found = rowids[middle]!;
      if (found === rowid) return middle;
      if (found < rowid) low = middle + 1;
      else high = middle - 1;
    }
    return outOfOrder.get(rowid);
  };
  // WebAssembly reads memory little-endian, whatever the machine.
  const channelAt = (row: number) => view.getInt32(rowsAt + row * stride, true);
  const setChannel = (row: number, channel: number) => view.setInt32(rowsAt + row * stride, channel, true);
  /** Files a row's chunk for lookup: rows held in ascending order are bisected, the rest mapped. */
  const file = (row: number, rowid: number) => {
    if (ascending === row && (row === 0 || rowid > rowids[row - 1]!)) ascending += 1;
    else outOfOrder.set(rowid, row);
  };
  if (from) {
    const count = from.rowids.length;
    if (from.rows.length !== count * stride) throw new Error(`${from.rows.length} bytes of codes for ${count} rows of ${stride}`);
    // Room for an eighth more before the first growth (which doubles): writes after a start do not double at once.
    rowids = new Float64Array(Math.max(1024, count + (count >> 3)));
    reserve(rowsAt + rowids.length * stride);
    bytes.set(from.rows, rowsAt);
    from.channels.forEach((id, i) => channelNumbers.set(id, i + 1));
    if (channelNumbers.size !== from.channels.length) throw new Error('a channel is named twice');
    for (let row = 0; row < count; row++) {
      const rowid = from.rowids[row]!;
      if (!Number.isSafeInteger(rowid) || rowOf(rowid) !== undefined) throw new Error(`chunk ${rowid} is not a chunk, or has two rows`);
      const channel = channelAt(row);
      if (channel < 0 || channel > from.channels.length) throw new Error(`row ${row} is of channel ${channel}, which is not named`);
      if (channel === 0) dead += 1;
      // Bits past the last dimension would count in every distance.
      for (let b = dimensions >>> 3, at = rowsAt + row * stride + 8; b < words * 8; b++) {
        const spare = b === dimensions >>> 3 ? (0xff << (dimensions & 7)) & 0xff : 0xff;
        if ((bytes[at + b]! & spare) !== 0) throw new Error(`row ${row} has signs past dimension ${dimensions}`);
      }
      rowids[row] = rowid;
      file(row, rowid);
      rows += 1;
    }
  }
  return {
    dimensions,
    get size() {
      return rows - dead;
    },
    get dead() {
      return dead;
    },
    put(rowid, channelId, vector) {
      if (vector.length !== dimensions) throw new Error(`vector of ${vector.length} dimensions for codes of ${dimensions}`);
      let channel = channelNumbers.get(channelId);
      if (channel === undefined) channelNumbers.set(channelId, (channel = channelNumbers.size + 1));
      let row = rowOf(rowid);
      if (row === undefined) {
        if (rows === rowids.length) {
          const grown = new Float64Array(Math.max(1024, rowids.length * 2));
          grown.set(rowids);
          rowids = grown;
          reserve(rowsAt + rowids.length * stride);
        }
        row = rows++;
        rowids[row] = rowid;
        file(row, rowid);
      } else if (channelAt(row) === 0) dead -= 1;
      setChannel(row, channel);
      pack(vector, rowsAt + row * stride + 8);
    },
    remove(rowid) {
      const row = rowOf(rowid);
      if (row === undefined || channelAt(row) === 0) return;
      setChannel(row, 0);
      dead += 1;
    },
    compact() {
      if (dead === 0) return;
      let kept = 0;
      ascending = 0;
      outOfOrder.clear();
      for (let row = 0; row < rows; row++) {
        if (channelAt(row) === 0) continue;
        if (kept !== row) {
          bytes.copyWithin(rowsAt + kept * stride, rowsAt + row * stride, rowsAt + (row + 1) * stride);
          rowids[kept] = rowids[row]!;
        }
        file(kept, rowids[kept]!);
        kept += 1;
      }
      rows = kept;
      dead = 0;
    },
    nearest(vector, channelIds, wanted) {
      if (rows === dead || wanted < 1) return [];
      const allowedSize = channelNumbers.size + 1;
      const distancesAt = rowsAt + rowids.length * stride;
      const allowedAt = distancesAt + align8(rows * 2);
      const outAt = allowedAt + align8(allowedSize);
      reserve(outAt + Math.min(wanted, rows) * 4);
      bytes.fill(0, allowedAt, allowedAt + allowedSize);
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
      scan.distances(rowsAt, rows, words, queryAt, allowedAt, distancesAt, tiersAt);
      // The nearest distance that reaches `wanted` chunks, and how many chunks at it still fit.
      const tier = (d: number) => view.getUint32(tiersAt + d * 4, true);
      let edge = 0;
      for (let seen = 0; edge <= dimensions; edge++) {
        seen += tier(edge);
        if (seen >= wanted) break;
      }
      let room = wanted;
      for (let d = 0; d < edge; d++) room -= tier(d);
      const kept = scan.collect(distancesAt, rows, edge, room, outAt);
      return Array.from({ length: kept }, (_, j) => rowids[view.getInt32(outAt + j * 4, true)]!);
    },
    image() {
      return { channels: [...channelNumbers.keys()], rowids: rowids.subarray(0, rows), rows: bytes.subarray(rowsAt, rowsAt + rows * stride) };
    },
  };
}
