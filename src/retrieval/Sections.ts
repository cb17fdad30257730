import { crc32 } from 'node:zlib';

/**
 * Typed arrays laid out one after another in one body of bytes (each on an 8-byte boundary), with a CRC-32 over it:
 * what the search index's and the vector codes' snapshots are made of, so reading one back is one allocation and views
 * into it, with no parsing and no copy.
 */

/** Each array's offset and length in bytes. */
export type Layout = Record<string, [number, number]>;

/** An array as laying out reads it. */
export type Written = Int32Array | Uint16Array | Uint8Array | Float64Array;
/** An array as reading back makes it: a view into the body's own buffer. */
export type Typed = Int32Array<ArrayBuffer> | Uint16Array<ArrayBuffer> | Uint8Array<ArrayBuffer> | Float64Array<ArrayBuffer>;
type TypedClass<T extends Typed> = { new (buffer: ArrayBuffer, offset: number, length: number): T; BYTES_PER_ELEMENT: number };

/** Why a snapshot was not used, and which one (once known). */
export class Refused extends Error {
  snapshotId: string | undefined;
}

/** The arrays in one body, where each lies, and the body's CRC-32. */
export function lay(arrays: Record<string, Written>): { sections: Layout; body: Uint8Array; crc32: number } {
  const sections: Layout = {};
  let size = 0;
  for (const [name, array] of Object.entries(arrays)) {
    size = Math.ceil(size / 8) * 8;
    sections[name] = [size, array.byteLength];
    size += array.byteLength;
  }
  const body = new Uint8Array(size);
  for (const [name, array] of Object.entries(arrays)) body.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength), sections[name]![0]);
  return { sections, body, crc32: crc32(body) };
}

/**
 * Reads arrays back from a body whose size and CRC-32 were stated beside it (`Refused` when they do not check), as
 * views; a section that is missing or lies outside the body is refused too. The body must start on an 8-byte
 * boundary, as a fresh allocation does.
 */
export function reader(body: Uint8Array, stated: { bytes: number; crc32: number; sections: Layout }): <T extends Typed>(name: string, Type: TypedClass<T>) => T {
  if (body.length !== stated.bytes) throw new Refused(`${body.length} bytes where its header says ${stated.bytes}`);
  if (body.byteOffset % 8 !== 0) throw new Error('a snapshot is read into memory that starts on an 8-byte boundary');
  const crc = crc32(body);
  if (crc !== stated.crc32) throw new Refused(`its bytes do not check (CRC-32 ${crc}, header says ${stated.crc32})`);
  return <T extends Typed>(name: string, Type: TypedClass<T>): T => {
    const place = stated.sections[name];
    if (!Array.isArray(place)) throw new Refused(`no ${name} in it`);
    const [offset, length] = place;
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset % 8 !== 0 || length % Type.BYTES_PER_ELEMENT !== 0 || offset + length > body.length) {
      throw new Refused(`${name} lies outside it`);
    }
    return new Type(body.buffer as ArrayBuffer, body.byteOffset + offset, length / Type.BYTES_PER_ELEMENT);
  };
}

/** A JSON section's value. */
export function json<T>(bytes: Uint8Array): T {
  return JSON.parse(new TextDecoder().decode(bytes)) as T;
}

/** A value as a JSON section. */
export function jsonBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}
