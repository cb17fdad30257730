import type { Logger } from '../log/Logger.js';
import type { Database } from '../store/Database.js';
import * as VectorIndex from '../store/VectorIndex.js';
import type { Embedder } from './Embedder.js';

/** Nearest neighbours of a question among the chunks of some channels: chunk rowid to cosine similarity. */
export type VectorSearch = {
  search(question: string, options: { channelIds: Map<string, unknown>; limit: number }): Promise<Map<number, number>>;
};

/**
 * Vector search over the sqlite-vec index: the question's embedding, its nearest chunks, kept only when their channel
 * is in scope. If the embedding endpoint fails, retrieval goes on lexical-only rather than failing the query.
 */
export function create(options: { db: Database; embedder: Embedder; logger: Logger }): VectorSearch {
  const channelOf = options.db.prepare('SELECT i.channel_id FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid = ?').pluck();
  return {
    async search(question, { channelIds, limit }) {
      const found = new Map<number, number>();
      try {
        const [vector] = (await options.embedder.embed([question], 'query')) as [Float32Array];
        const dimensions = VectorIndex.info(options.db)?.dimensions;
        if (vector.length !== dimensions) throw new Error(`the embedder returned ${vector.length} dimensions; the index has ${dimensions}: run reindex`);
        // Like the lexical stage, look deeper when a wide index holds few neighbours in scope.
        for (const depth of [4, 40]) {
          found.clear();
          const neighbours = VectorIndex.nearest(options.db, vector, limit * depth);
          for (const { rowid, similarity } of neighbours) {
            if (found.size >= limit) break;
            if (channelIds.has(channelOf.get(rowid) as string)) found.set(rowid, similarity);
          }
          if (found.size >= limit || neighbours.length < limit * depth) break;
        }
      } catch (error) {
        options.logger.warn('vector search unavailable; answering from the lexical index', { error });
        found.clear();
      }
      return found;
    },
  };
}
