import type { Logger } from '../../log/Logger.js';
import type { Breaker } from '../../health/Breaker.js';
import type { Metrics } from '../../health/Metrics.js';
import type { Store } from '../../store/Store.js';
import type { Embedder } from '../embedders/Embedder.js';
import type { SearchHit } from '../index/SearchIndex.js';
import * as Fusion from '../ranking/Fusion.js';
import type * as Reranker from '../ranking/Reranker.js';
import type * as SnapshotKeeper from '../SnapshotKeeper.js';
import * as VectorCodes from './VectorCodes.js';

/** One question's vector: the chunks nearest it, and its similarity to any chunk. */
export type QuestionVectors = {
  /** The `limit` chunks in scope nearest the question, best first, scored by cosine similarity. */
  nearest(channelIds: ReadonlySet<string>, limit: number): Promise<SearchHit[]>;
  /** The cosine similarity of each chunk that has a vector; others are left out. */
  similarities(rowids: number[]): Promise<Map<number, number>>;
};

/**
 * Candidates scanned by their signs per neighbour returned. Neighbours are candidates, ranked afterwards by their exact
 * similarity among the rest: 4 keeps the scan's re-scoring to 40 chunks (16 cost 2 ms more at 100k chunks).
 */
const neighbourOversample = 4;

/** A question waits this long for its embedding unless configured otherwise (EMBEDDING_QUESTION_TIMEOUT_MS). */
export const defaultQuestionTimeoutMs = 3000;

/** The work's result, or the signal's reason once it aborts, whichever comes first. */
function within<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const stop = () => reject(signal.reason as Error);
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

/** Vector retrieval: what reranking needs from the vector index for a question, and how similarity is weighed. */
export type VectorSearch = {
  readonly name: string;
  /** The embedder questions and chunks are embedded with. */
  readonly embedderId: string;
  /** The reranker with similarity as a feature: the fit stored for this embedder, or the unfitted default. */
  fusion(): Promise<{ model: Reranker.Model; fitted: boolean }>;
  /** Embeds a question; undefined when the embedder fails, and retrieval then goes on lexically. */
  question(text: string): Promise<QuestionVectors | undefined>;
  /**
   * Reads the index into memory before the first question rather than during it: from the store's snapshot of the
   * codes when one fits, else from the stored floats (a second per 100k chunks).
   */
  warm(): Promise<void>;
  /** The codes held, for the snapshot keeper to write for the instances that start next. */
  readonly snapshot: SnapshotKeeper.Subject;
};

/**
 * Vector search over the stored vectors of the configured embedder (sign codes in memory, floats re-scored). An index built before quantization is upgraded
 * from its stored floats when the search is created. If the embedding endpoint fails, the query is answered from the
 * lexical index rather than failing.
 */
export function create(options: {
  store: Store;
  embedder: Embedder;
  logger: Logger;
  oversample?: number;
  /** How long a question waits for its embedding before it is answered lexically. */
  questionTimeoutMs?: number | undefined;
  /** Skips the embedder for a while after repeated failures: questions are answered lexically at once, not after the timeout. */
  breaker?: Breaker | undefined;
  metrics?: Metrics | undefined;
}): VectorSearch {
  const { store, embedder, logger, breaker, metrics } = options;
  // A store from before the current layout is carried over once, before the first question reads it.
  const upgraded = store.vectors.upgrade().then(
    (carried) => {
      if (carried > 0) logger.info('vector index upgraded to quantized search from its stored vectors', { vectors: carried });
    },
    (error: unknown) => {
      // Searching tries again; until one succeeds, answers are lexical.
      logger.warn('could not upgrade the vector index; answering lexically until it can, or until `profile-edge reindex`', { error });
    },
  );
  let warnedStale = false;
  let parsed: { stored: unknown; model: Reranker.Model | undefined } | undefined;
  const fusion = async () => {
    const stored = await store.vectors.fusion(embedder.id);
    // Parsed once per stored fit: fusion() is read at every question.
    if (!parsed || parsed.stored !== stored) parsed = { stored, model: stored === undefined ? undefined : Fusion.parse(stored) };
    const { model } = parsed;
    if (stored !== undefined && !model && !warnedStale) {
      warnedStale = true;
      logger.warn('the stored vector fusion was fitted for other reranker features: similarity weighs nothing until `profile-edge fit` runs again', { embedder: embedder.id });
    }
    return model ? { model, fitted: true } : { model: Fusion.unfitted(), fitted: false };
  };
  const questionTimeoutMs = options.questionTimeoutMs ?? defaultQuestionTimeoutMs;
  // Said once when vectors stop working, and once when they work again: not at every question in between.
  let unavailable: string | undefined;
  const health = {
    down(message: string, details: Record<string, unknown>) {
      if (unavailable === message) return logger.debug(message, details);
      unavailable = message;
      logger.warn(message, details);
    },
    up() {
      if (unavailable === undefined) return;
      unavailable = undefined;
      logger.info('vector search available again', { embedder: embedder.id });
    },
  };
  // Each read of the codes anew (at start, after a rebuild, after a pruned log) says where they came from.
  VectorCodes.onLoad(store, ({ held, origin, ms }) => {
    if (origin.refused) logger.warn('vector snapshot refused: codes read from the stored vectors, and a new snapshot is written', { snapshot: origin.refused.id, reason: origin.refused.reason });
    logger.info('vector index loaded', { vectors: held, source: origin.source, ms: Math.round(ms) });
  });
  void fusion().then(
    (f) => f.fitted || logger.info('vector fusion not fitted for this embedder: vectors add candidates, similarity weighs nothing until `profile-edge fit`', { embedder: embedder.id }),
    () => undefined,
  );
  return {
    name: 'sign-codes',
    embedderId: embedder.id,
    snapshot: VectorCodes.subject(store),
    fusion,
    async warm() {
      try {
        await upgraded;
        await VectorCodes.warm(store);
      } catch (error) {
        logger.warn('vector index unreadable; answering from the lexical index', { error });
      }
    },
    async question(text) {
      await upgraded;
      // A server outlives the index it started with: one rebuilt since for another embedder, or half built, is unusable.
      const index = await store.vectors.info();
      if (index?.embedderId !== embedder.id) {
        health.down('the vector index is not this embedder\'s (rebuilt or being rebuilt since start): answering lexically until it is', { configured: embedder.id, indexed: index?.embedderId });
        return undefined;
      }
      if (breaker && !breaker.allow()) {
        metrics?.dependencyFailure('embedder', 'skipped');
        metrics?.fallback('embedder');
        return undefined;
      }
      let vector: Float32Array;
      const deadline = AbortSignal.timeout(questionTimeoutMs);
      try {
        [vector] = (await within(embedder.embed([text], 'query', { signal: deadline }), deadline)) as [Float32Array];
        if (vector.length !== index.dimensions) throw new Error(`the embedder returned ${vector.length} dimensions; the index has ${index.dimensions}: run reindex`);
      } catch (error) {
        const cause = deadline.aborted ? `no answer within ${questionTimeoutMs} ms (EMBEDDING_QUESTION_TIMEOUT_MS)` : (error as Error).message;
        breaker?.failed();
        metrics?.dependencyFailure('embedder', deadline.aborted ? 'timeout' : 'error');
        metrics?.fallback('embedder');
        health.down('vector search unavailable: answering from the lexical index until the embedder answers again', { error: cause });
        return undefined;
      }
      breaker?.succeeded();
      health.up();
      // A failing read of the vector tables costs the question its vectors, never its answer.
      const guarded = async <T>(read: () => Promise<T>, fallback: T): Promise<T> => {
        try {
          return await read();
        } catch (error) {
          logger.warn('vector index unreadable; answering from the lexical index', { error });
          return fallback;
        }
      };
      // Neighbours' similarities are known from the scan's re-scoring: reranking does not read them again.
      const known = new Map<number, number>();
      return {
        nearest: (channelIds, limit) =>
          guarded(async () => {
            const hits = await VectorCodes.nearest(store, { vector, limit, channelIds, oversample: options.oversample ?? neighbourOversample });
            for (const { rowid, similarity } of hits) known.set(rowid, similarity);
            return hits.map(({ rowid, similarity }) => ({ rowid, score: similarity }));
          }, []),
        similarities: (rowids) =>
          guarded(async () => {
            const found = await VectorCodes.similarities(store, vector, rowids.filter((r) => !known.has(r)));
            for (const rowid of rowids) if (known.has(rowid)) found.set(rowid, known.get(rowid)!);
            return found;
          }, new Map<number, number>()),
      };
    },
  };
}
