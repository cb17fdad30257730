/** Turns texts into unit-length vectors. Providers are plain objects, so a test or an operator can swap one in. */
export type Embedder = {
  /** Identifies the model, stored with the index so a change of embedder is noticed. */
  id: string;
  /** A provider that can stop its work when `signal` aborts (a request in flight) does, and rejects. */
  embed(texts: string[], purpose: 'query' | 'document', options?: { signal?: AbortSignal | undefined }): Promise<Float32Array[]>;
};

/**
 * Scales a vector to unit length, so cosine similarity is a dot product. A vector with no direction (all zeros, or a
 * provider's NaN for text it has no tokens for) becomes the zero vector: similar to nothing, rather than NaN scores.
 */
export function normalize(values: ArrayLike<number>): Float32Array {
  let norm = 0;
  for (let i = 0; i < values.length; i++) norm += values[i]! * values[i]!;
  const scale = norm > 0 && Number.isFinite(norm) ? 1 / Math.sqrt(norm) : 0;
  const out = new Float32Array(values.length);
  if (scale > 0) for (let i = 0; i < values.length; i++) out[i] = values[i]! * scale;
  return out;
}
