/** A term's vector as stored (float32 bytes in a blob) and as summed (scaled to unit length in place). */

/** A stored vector, copied out of SQLite's buffer (which need not be aligned for a Float32Array). */
export function floats(blob: Buffer): Float32Array {
  return new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));
}

/** A vector as stored. */
export function bytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** Scales a vector to unit length in place; the zero vector stays zero. */
export function unit(v: Float64Array): Float64Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let c = 0; c < v.length; c++) v[c]! /= norm;
  return v;
}
