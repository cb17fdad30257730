import * as Sections from '../Sections.js';
import { Refused } from '../Sections.js';
import type { Audience } from './Audiences.js';
import { type Counts, type IndexState, InvertedIndex } from './InvertedIndex.js';
import { type ListParts, PostingList } from './Postings.js';

/**
 * The lexical index as bytes, for an instance to start from: the arrays it holds, laid out one after another (each
 * on an 8-byte boundary) so that reading them back is one allocation and views into it, with no parsing and no copy.
 * A header says where each array lies (`Sections`), what the bytes cover (the write-log position, the store, the
 * analysis) and their CRC-32. Anything that does not fit is refused with the reason, never searched.
 */

export { Refused };

/** Bumped whenever the layout changes: a snapshot of another format is refused (and made again). */
export const format = 1;

/** What a snapshot covers and where its arrays lie; stored beside its bytes. */
export type Header = {
  format: number;
  /** The store it was made from (`meta.store_id`). */
  store: string;
  /** The analysis its terms were made with (`search_index_version`). */
  analysis: string;
  /** The last write-log entry it holds. */
  position: number;
  /** Positions below it that were empty when it was written (writes in flight): a reader looks at them again. */
  holes: number[];
  /** When each hole was noted (ms since the epoch), in the same order: a reader waits for it as long as the writer would have. */
  holesSince?: number[];
  /** The log's first position the holes were noted against: one below it was below the log's start then. */
  holesFloor?: number;
  bytes: number;
  crc32: number;
  /** Each array's offset and length in bytes. */
  sections: Sections.Layout;
};

/** What the header's JSON section holds: the parts of the index that are not arrays. */
type Described = {
  postingCount: number;
  channels: [string, Audience][];
  counts: { audience: Audience; chunks: number; tokens: number; df: 'dense' | [number, number][] }[];
};

type Written = Sections.Written;

/** The bytes of an index, and the header that reads them, covering the log up to `position`. */
export function encode(index: InvertedIndex, stamp: { store: string; analysis: string; position: number; holes: number[]; holesSince: number[]; holesFloor: number }): { header: Header; body: Uint8Array } {
  const state = index.state();
  const lists = state.postings.map((list) => list?.parts());
  const terms = lists.length;
  const column = <T extends Written>(Type: new (n: number) => T, value: (parts: ListParts) => number) => {
    const out = new Type(terms);
    lists.forEach((parts, term) => parts && (out[term] = value(parts)));
    return out;
  };
  const arena = <T extends Written>(Type: new (n: number) => T, pick: (parts: ListParts) => T) => {
    const out = new Type(lists.reduce((n, parts) => n + (parts ? pick(parts).length : 0), 0));
    let at = 0;
    for (const parts of lists) {
      if (!parts) continue;
      out.set(pick(parts), at);
      at += pick(parts).length;
    }
    return out;
  };
  const publicCounts = state.counts.find((c) => c.audience === 'public');
  const described: Described = {
    postingCount: state.postingCount,
    channels: state.channels,
    counts: state.counts.map((c) => ({ audience: c.audience, chunks: c.chunks, tokens: c.tokens, df: c === publicCounts ? 'dense' : [...(c.df as Map<number, number>)] })),
  };
  const arrays: Record<string, Written> = {
    rowids: state.rowids,
    lengths: state.lengths,
    channelOfDoc: state.channelOfDoc,
    deleted: state.deleted,
    listLength: column(Int32Array, (p) => p.length),
    listSealedBytes: column(Int32Array, (p) => p.bytes.length),
    listBound: column(Float64Array, (p) => p.bound),
    listBoundAverage: column(Float64Array, (p) => p.boundAverage),
    listCovered: column(Int32Array, (p) => p.covered),
    firsts: arena(Int32Array, (p) => p.firsts),
    offsets: arena(Int32Array, (p) => p.offsets),
    blockBytes: arena(Uint8Array, (p) => p.bytes),
    tailDocs: arena(Int32Array, (p) => p.tailDocs),
    tailCounts: arena(Uint16Array, (p) => p.tailCounts),
    publicDf: publicCounts ? (publicCounts.df as Int32Array) : new Int32Array(0),
    described: Sections.jsonBytes(described),
  };
  const { sections, body, crc32 } = Sections.lay(arrays);
  return { header: { format, ...stamp, bytes: body.length, crc32, sections }, body };
}

/** Refuses the header of a snapshot of another store, analysis or format. */
export function check(header: Header, expected: { store: string; analysis: string }): void {
  if (header.format !== format) throw new Refused(`format ${header.format}, not ${format}`);
  if (header.store !== expected.store) throw new Refused(`made from another store (${header.store}, this one is ${expected.store})`);
  if (header.analysis !== expected.analysis) throw new Refused(`terms analysed with version ${header.analysis}, the rows with ${expected.analysis}`);
}

/**
 * The index a snapshot holds, its arrays views into `body` (which must start on an 8-byte boundary, as a fresh
 * allocation does). `expected` is what this store is now; a snapshot of another store, analysis or format, or whose
 * bytes do not check, is refused.
 */
export function decode(header: Header, body: Uint8Array, expected: { store: string; analysis: string }): InvertedIndex {
  check(header, expected);
  const view = Sections.reader(body, header);
  try {
    const described = Sections.json<Described>(view('described', Uint8Array));
    const listLength = view<Int32Array<ArrayBuffer>>('listLength', Int32Array);
    const listSealedBytes = view<Int32Array<ArrayBuffer>>('listSealedBytes', Int32Array);
    const listBound = view<Float64Array<ArrayBuffer>>('listBound', Float64Array);
    const listBoundAverage = view<Float64Array<ArrayBuffer>>('listBoundAverage', Float64Array);
    const listCovered = view<Int32Array<ArrayBuffer>>('listCovered', Int32Array);
    const firsts = view<Int32Array<ArrayBuffer>>('firsts', Int32Array);
    const offsets = view<Int32Array<ArrayBuffer>>('offsets', Int32Array);
    const blockBytes = view<Uint8Array<ArrayBuffer>>('blockBytes', Uint8Array);
    const tailDocs = view<Int32Array<ArrayBuffer>>('tailDocs', Int32Array);
    const tailCounts = view<Uint16Array<ArrayBuffer>>('tailCounts', Uint16Array);
    const terms = listLength.length;
    if ([listSealedBytes, listBound, listBoundAverage, listCovered].some((c) => c.length !== terms)) throw new Refused('its list columns differ in length');
    const postings: (PostingList | undefined)[] = new Array(terms);
    let block = 0;
    let byte = 0;
    let tail = 0;
    for (let term = 0; term < terms; term++) {
      const length = listLength[term]!;
      if (length === 0) continue;
      const sealed = Math.floor((length - 1) / 128);
      const open = length - sealed * 128;
      const sealedBytes = listSealedBytes[term]!;
      if (block + sealed > firsts.length || byte + sealedBytes > blockBytes.length || tail + open > tailDocs.length) throw new Refused(`list ${term} runs past its arrays`);
      postings[term] = PostingList.restore({
        length,
        firsts: firsts.subarray(block, block + sealed),
        offsets: offsets.subarray(block, block + sealed),
        bytes: blockBytes.subarray(byte, byte + sealedBytes),
        tailDocs: tailDocs.subarray(tail, tail + open),
        tailCounts: tailCounts.subarray(tail, tail + open),
        bound: listBound[term]!,
        boundAverage: listBoundAverage[term]!,
        covered: listCovered[term]!,
      });
      block += sealed;
      byte += sealedBytes;
      tail += open;
    }
    if (block !== firsts.length || byte !== blockBytes.length || tail !== tailDocs.length) throw new Refused('its lists do not fill its arrays');
    const publicDf = view<Int32Array<ArrayBuffer>>('publicDf', Int32Array);
    const state: IndexState = {
      rowids: view('rowids', Int32Array),
      lengths: view('lengths', Int32Array),
      channelOfDoc: view('channelOfDoc', Int32Array),
      deleted: view('deleted', Uint8Array),
      postings,
      postingCount: described.postingCount,
      channels: described.channels,
      counts: described.counts.map((c): Counts & { audience: Audience } => ({
        audience: c.audience,
        chunks: c.chunks,
        tokens: c.tokens,
        df: c.df === 'dense' ? publicDf : new Map(c.df),
      })),
    };
    return InvertedIndex.restore(state);
  } catch (error) {
    if (error instanceof Refused) throw error;
    throw new Refused(`it does not read as an index: ${error instanceof Error ? error.message : String(error)}`);
  }
}
