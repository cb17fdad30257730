import * as SignCodes from '../../store/SignCodes.js';
import type { Store } from '../../store/Store.js';
import * as LogHoles from '../LogHoles.js';
import * as Sections from '../Sections.js';
import { Refused } from '../Sections.js';
import * as StoredSnapshots from '../StoredSnapshots.js';

/**
 * The vector index's sign codes as one instance held them, for the others to start from: about 64 bytes a chunk at
 * 384 dimensions (the codes as the scan reads them, and each row's chunk), read in one sequential pass where reading
 * the floats back from `chunk_embeddings` takes about a second per 100k chunks. Stamped with the vector-log position it
 * covers and the index it was made from (its generation, embedder and dimension): a starting instance follows the log
 * from there, and refuses, with the reason, a snapshot of another store, index or format, or whose bytes do not check.
 */

/** Bumped whenever the layout changes: a snapshot of another format is refused (and made again). */
export const format = 1;

export type Header = StoredSnapshots.Stamped & {
  format: number;
  /** The store it was made from (`meta.store_id`). */
  store: string;
  /** The vector index it holds codes of: its generation, embedder and dimension. */
  index: string;
  dimensions: number;
  /** Positions below it that were empty when it was written (writes in flight): a reader looks at them again. */
  holes: number[];
  /** When each hole was noted (ms since the epoch), in the same order: a reader waits for it as long as the writer would have. */
  holesSince?: number[];
  /** The log's first position the holes were noted against: one below it was below the log's start then. */
  holesFloor?: number;
};

/** What a snapshot must match to be used: this store, and the vector index it now holds. */
export type Expected = { store: string; index: string; dimensions: number };

/** The snapshot's bytes for a set of codes covering the vector log to `position`. */
export function encode(codes: SignCodes.SignCodes, stamp: Expected & { position: number; holes: number[]; holesSince: number[]; holesFloor: number }): { header: Header; body: Uint8Array } {
  const image = codes.image();
  const { sections, body, crc32 } = Sections.lay({ rowids: image.rowids, rows: image.rows, channels: Sections.jsonBytes(image.channels) });
  return { header: { format, ...stamp, bytes: body.length, crc32, sections }, body };
}

/** Refuses the header of a snapshot of another store, vector index or format. */
export function check(header: Header, expected: Expected): void {
  if (header.format !== format) throw new Refused(`format ${header.format}, not ${format}`);
  if (header.store !== expected.store) throw new Refused(`made from another store (${header.store}, this one is ${expected.store})`);
  if (header.index !== expected.index || header.dimensions !== expected.dimensions) {
    throw new Refused(`made from another vector index (${header.index}, ${header.dimensions} dimensions; this one is ${expected.index}, ${expected.dimensions})`);
  }
}

/** The codes a snapshot holds (copied into the scan's own memory), or `Refused` with the reason. */
export function decode(header: Header, body: Uint8Array, expected: Expected): SignCodes.SignCodes {
  check(header, expected);
  const view = Sections.reader(body, header);
  try {
    const channels = Sections.json<unknown>(view('channels', Uint8Array));
    if (!Array.isArray(channels) || !channels.every((c) => typeof c === 'string')) throw new Refused('its channels are not a list of ids');
    return SignCodes.create(header.dimensions, { channels, rowids: view('rowids', Float64Array), rows: view('rows', Uint8Array) });
  } catch (error) {
    if (error instanceof Refused) throw error;
    throw new Refused(`it does not read as vector codes: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Codes with the log position they cover, the positions below it still empty then, and the log's first position they were noted against. */
export type Taken = { codes: SignCodes.SignCodes; position: number; holes: LogHoles.Carried[]; holesFloor: number };

/** The codes of the store's current snapshot and the log position they cover; undefined when there is none. */
export async function read(store: Store, index: Omit<Expected, 'store'>): Promise<Taken | undefined> {
  const expected = { ...index, store: await StoredSnapshots.storeId(store) };
  return StoredSnapshots.read<Header, Taken>(store, 'vectors', {
    logBounds: () => store.vectors.logBounds(),
    check: (header) => check(header, expected),
    decode: (header, body, row) => ({
      codes: decode(header, body, expected),
      position: row.position,
      holes: LogHoles.carried(header.holes, header.holesSince, row.position),
      holesFloor: LogHoles.carriedFloor(header.holesFloor, row.position),
    }),
  });
}

/**
 * Makes a set of codes the store's snapshot; returns its size and the log position it covers. `take` gives the codes
 * with that position, and they are encoded in the same turn, before anything can change them.
 */
export async function write(store: Store, index: Omit<Expected, 'store'>, take: () => Taken): Promise<{ bytes: number; position: number }> {
  const storeId = await StoredSnapshots.storeId(store, true);
  const { codes, position, holes, holesFloor } = take();
  const { header, body } = encode(codes, { ...index, store: storeId, position, ...LogHoles.header(holes), holesFloor });
  await StoredSnapshots.write(store, 'vectors', header, body);
  return { bytes: body.length, position };
}
