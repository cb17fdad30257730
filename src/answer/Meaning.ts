import type { Logger } from '../log/Logger.js';
import type { Embedder } from '../retrieval/embedders/Embedder.js';

/** How close in meaning each text is to a question: cosines, or none (an empty list) when they cannot be read. */
export type Similarity = (question: string, texts: string[]) => Promise<number[]>;

/**
 * A sentence encoder's reading of closeness in meaning, for the offline reader: the question and the texts embedded
 * alike (USE-lite was trained on pairs of the two, and its vectors are unit length, so a dot product is the cosine).
 * An encoder that fails to load or run is logged once and left out from then on: the reader answers by words alone.
 */
export function create(input: { encoder: Embedder; logger: Logger }): Similarity {
  let failed = false;
  return async (question, texts) => {
    if (failed || texts.length === 0) return [];
    try {
      const [q, ...vectors] = await input.encoder.embed([question, ...texts], 'document');
      return vectors.map((v) => v.reduce((sum, x, i) => sum + x * q![i]!, 0));
    } catch (error) {
      failed = true;
      input.logger.warn('the sentence encoder failed: answers are read by their words alone until restart', { encoder: input.encoder.id, error });
      return [];
    }
  };
}
