import type { Logger } from '../log/Logger.js';
import type { Database } from '../store/Database.js';
import * as VectorIndex from '../store/VectorIndex.js';
import type { Embedder } from './Embedder.js';
import type { SearchHit, SearchIndex } from './SearchIndex.js';

/**
 * Vector search over the sqlite-vec index: the question's embedding, its nearest chunks within the caller's channels,
 * scored by exact cosine similarity. An index built before quantization is upgraded from its stored floats when the
 * search is created. If the embedding endpoint fails, retrieval goes on lexical-only rather than failing the query.
 */
export function create(options: { db: Database; embedder: Embedder; logger: Logger; oversample?: number }): SearchIndex {
  try {
    const carried = VectorIndex.upgrade(options.db);
    if (carried > 0) options.logger.info('vector index upgraded to quantized search from its stored vectors', { vectors: carried });
  } catch (error) {
    // Searching tries again; until one succeeds, answers are lexical.
    options.logger.warn('could not upgrade the vector index; answering lexically until it can, or until `profile-edge reindex`', { error });
  }
  return {
    name: 'sqlite-vec',
    async search({ text: question, channelIds, limit }): Promise<SearchHit[]> {
      try {
        const [vector] = (await options.embedder.embed([question], 'query')) as [Float32Array];
        const dimensions = VectorIndex.info(options.db)?.dimensions;
        if (vector.length !== dimensions) throw new Error(`the embedder returned ${vector.length} dimensions; the index has ${dimensions}: run reindex`);
        const nearest = VectorIndex.nearest(options.db, { vector, limit, channelIds, oversample: options.oversample });
        return nearest.map(({ rowid, similarity }) => ({ rowid, score: similarity }));
      } catch (error) {
        options.logger.warn('vector search unavailable; answering from the lexical index', { error });
        return [];
      }
    },
  };
}
