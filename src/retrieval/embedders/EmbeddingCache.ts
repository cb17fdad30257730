import type { Embedder } from './Embedder.js';

/** How many texts' vectors a cache keeps by default: at 512 dimensions, about 8 MB. */
export const defaultEntries = 4_096;

/**
 * Remembers the vectors of the texts an embedder was last asked for, most recently used kept, so that the same
 * question or passage is not run through the model again: a paid flow asks the same question twice (for its challenge
 * and with the payment), agents repeat questions, and the reader weighs the same best statements of a popular passage
 * on every answer. Only the texts not remembered reach the model, in one call, in their order. An embedding is a pure
 * function of the model, the purpose and the text, so what is returned is what the model would return; callers get
 * copies, never the kept arrays. For questions and the reader's statements, not for indexing, whose texts are new.
 */
export function cached(embedder: Embedder, options: { entries?: number } = {}): Embedder {
  const entries = options.entries ?? defaultEntries;
  const kept = new Map<string, Float32Array>();
  const remember = (key: string, vector: Float32Array) => {
    kept.delete(key);
    kept.set(key, vector);
    if (kept.size > entries) kept.delete(kept.keys().next().value!);
  };
  return {
    id: embedder.id,
    async embed(texts, purpose, embedOptions) {
      const keys = texts.map((text) => `${purpose}\u0000${text}`);
      const found = keys.map((key) => kept.get(key));
      const missing = [...new Set(keys.filter((_, i) => !found[i]))];
      const fresh = new Map<string, Float32Array>();
      if (missing.length > 0) {
        const vectors = await embedder.embed(
          missing.map((key) => key.slice(purpose.length + 1)),
          purpose,
          embedOptions,
        );
        // A provider that answers for other texts than it was given is a failure, never a vector kept for the wrong one.
        if (vectors.length !== missing.length) throw new Error(`the embedder returned ${vectors.length} vectors for ${missing.length} texts`);
        missing.forEach((key, i) => fresh.set(key, vectors[i]!));
      }
      return keys.map((key, i) => {
        const vector = found[i] ?? fresh.get(key)!;
        remember(key, vector);
        return Float32Array.from(vector);
      });
    },
  };
}
