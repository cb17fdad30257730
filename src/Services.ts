import crypto from 'node:crypto';
import type { Config } from './config/Config.js';
import type { Logger } from './log/Logger.js';
import * as Log from './log/Logger.js';
import * as RateLimiter from './payments/RateLimiter.js';
import * as Rails from './payments/Rails.js';
import * as Meaning from './answer/Meaning.js';
import * as Synthesizers from './answer/Synthesizers.js';
import type { Synthesizer } from './answer/Synthesizer.js';
import type * as SnapshotStore from './retrieval/index/SnapshotStore.js';
import * as LexicalIndex from './retrieval/index/LexicalIndex.js';
import * as TermModel from './retrieval/terms/TermModel.js';
import type { Embedder } from './retrieval/embedders/Embedder.js';
import * as EmbeddingCache from './retrieval/embedders/EmbeddingCache.js';
import * as Embedders from './retrieval/embedders/Embedders.js';
import * as VectorSearch from './retrieval/vectors/VectorSearch.js';
import * as Connectors from './sources/Connectors.js';
import type * as Sync from './sources/Sync.js';
import * as SignedLinks from './pages/SignedLinks.js';
import type { Fetcher } from './sources/Fetcher.js';
import * as Stores from './store/Store.js';
import * as DatabaseWatch from './health/DatabaseWatch.js';
import * as Instance from './health/Instance.js';
import * as Pending from './health/Pending.js';
import * as Reconciliation from './payments/Reconciliation.js';
import * as Breaker from './health/Breaker.js';
import * as Metrics from './health/Metrics.js';
import * as Tally from './health/Tally.js';

/** Everything a tool handler stands on, built once per process and handed down. */
export type Services = {
  config: Config;
  /** Everything the service keeps. */
  store: Stores.OpenStore;
  /** Whether the database answers: logged when lost and back; what had to wait for it runs when it is back. */
  database: DatabaseWatch.DatabaseWatch;
  /**
   * This process as one of the instances on the database: `serve` and `mcp` start it, so what they charge is told from
   * what a process that is gone left (which each renewal claims and settles). Commands that take no payment never do.
   */
  instance: Instance.Instance;
  /** Work requests started that outlives their responses (payments captured once the answer left): shutdown waits for it. */
  pending: Pending.Pending;
  /** The on-chain payments whose settlement this process is waiting on: its own reconciliation leaves them to the call. */
  settling: Set<string>;
  /** True once the process is shutting down: `/ready` says so, and the load balancer sends requests elsewhere. */
  draining: boolean;
  /** Whether the lexical index is loaded (the first question would not wait for it). */
  indexLoaded(): boolean;
  /** How far the lexical index's load has got, while it loads. */
  indexLoading(): SnapshotStore.Progress | undefined;
  /** The lexical index once loaded, without waiting (undefined while it loads). */
  loadedIndex(): LexicalIndex.LexicalIndex | undefined;
  logger: Logger;
  /** What this process counted, for `/metrics`. */
  metrics: Metrics.Metrics;
  /** Queries per day, profile and outcome, added to the store every few seconds (`profile-edge stats`). */
  tally: Tally.Tally;
  /** The outside parties' breakers: a failing embedder, model, facilitator or RPC is skipped for a while. */
  breakers: Breaker.Breakers;
  quoteLimiter: RateLimiter.RateLimiter;
  /** The on-chain rails payment is taken on (those with a receiving address). */
  rails: Rails.Rails;
  /**
   * The lexical search index and the statistics it counts, opened on first use (at a million chunks that takes
   * seconds: commands that never search do not pay it) and kept current with the store from then on.
   */
  lexicalIndex(): Promise<LexicalIndex.LexicalIndex>;
  synthesizer: Synthesizer;
  /** How close in meaning texts are to a question, for the offline reader: the local sentence encoder's cosine. */
  similarity: Meaning.Similarity | undefined;
  /** Signs the links of paid answers to private content, and verifies them when a citation page is opened. */
  citationLinks: SignedLinks.SignedLinks;
  /** The corpus term model (soft term matching), reloaded when a rebuild lands; undefined until one is built. */
  termModel(): Promise<TermModel.TermModel | undefined>;
  /** The configured embedder, if any (used by ingestion and reindexing). */
  embedder: Embedder | undefined;
  /** Vector search, when an embedder is configured and the index was built with it. */
  vectors: VectorSearch.VectorSearch | undefined;
  /** How connectors fetch from the web, with the configured limits. */
  fetcher: Fetcher;
  /** The connector of each channel kind that syncs from a source. */
  connectors: Connectors.ConnectorSet;
  /** True when this process created the database file. */
  createdStore: boolean;
  close(): Promise<void>;
};

/**
 * The key citation links are signed with when CITATION_LINK_SECRET is not set: made on first use and kept in the
 * database, so every process on it (`serve` and a stdio `mcp` alike) opens the links the others made, across restarts.
 */
async function keptLinkSecret(store: Stores.Store): Promise<string> {
  // Claimed: two processes starting together take one key, not one each.
  return (await store.meta.get('citation_link_secret')) ?? store.meta.claim('citation_link_secret', crypto.randomBytes(32).toString('hex'));
}

/** Opens the store and builds the shared services from configuration. */
export async function create(config: Config, options: { logger?: Logger } = {}): Promise<Services> {
  const target: Stores.Target = config.database.engine === 'postgres' ? { url: config.database.url } : { path: config.database.path };
  const { store, created } = await Stores.open(target, { connections: config.database.engine === 'postgres' ? config.database.connections : undefined });
  const logger = options.logger ?? Log.create({ level: config.logLevel, format: config.log.format });
  const breakers = Breaker.forAll({
    ...config.breaker,
    onChange: (name, state) =>
      state === 'open'
        ? logger.warn(`${name} failing: skipped for ${config.breaker.coolMs / 1000} s, then probed`, { dependency: name })
        : logger.info(`${name} ${state === 'closed' ? 'answering again' : 'probed'}`, { dependency: name }),
  });
  const served = config.metrics.token !== undefined || config.metrics.port !== undefined;
  const metrics = Metrics.create({ process: served, sources: { breakers, channels: () => store.channels.syncable() } });
  const embedder = Embedders.create(config.embedding);
  // Questions and the reader's statements go through a cache of recent texts (a paid flow asks its question twice);
  // indexing uses the embedder itself, since its texts are new.
  const questions = embedder && EmbeddingCache.cached(embedder);
  // The reader's encoder: the retrieval embedder itself when it is USE-lite, so one model is loaded, not two.
  const readerEncoder = config.reader.encoder === 'none' ? undefined : embedder?.id === 'use-lite' ? questions : EmbeddingCache.cached(Embedders.create({ provider: 'use-lite' })!);
  // What fails after the store opened closes it: nothing half-started is left holding connections.
  const index = await store.vectors.info().catch(async (error: unknown) => {
    await store.close().catch(() => undefined);
    throw error;
  });
  let vectors: VectorSearch.VectorSearch | undefined;
  if (questions && index?.embedderId === questions.id && config.embedding.provider !== 'none') {
    vectors = VectorSearch.create({ store, embedder: questions, logger, questionTimeoutMs: config.embedding.questionTimeoutMs, breaker: breakers.embedder, metrics });
  } else if (embedder) logger.warn('vector index missing or built with another embedder: answering lexically until `profile-edge reindex`', { configured: embedder.id, indexed: index?.embedderId });
  let lexicalIndex: Promise<LexicalIndex.LexicalIndex> | undefined;
  let loadedIndex: LexicalIndex.LexicalIndex | undefined;
  let indexLoading: SnapshotStore.Progress | undefined;
  let termModel: { stamp: string | undefined; model: Promise<TermModel.TermModel | undefined> | undefined } = { stamp: undefined, model: undefined };
  const database = DatabaseWatch.create({ store, logger });
  const rails = Rails.fromConfig(config, store);
  const tally = Tally.create({ store, logger });
  const leaseMs = config.instanceLeaseSeconds * 1000;
  const settling = new Set<string>();
  const instance: Instance.Instance = Instance.create({
    store,
    logger,
    leaseMs,
    target,
    claimGone: () => Reconciliation.settleGone({ store, rails, logger, metrics, config }, { leaseMs, own: instance.id() }),
  });
  return {
    config,
    store,
    database,
    instance,
    pending: Pending.create(),
    settling,
    draining: false,
    indexLoaded: () => loadedIndex !== undefined,
    indexLoading: () => indexLoading,
    loadedIndex: () => loadedIndex,
    logger,
    metrics,
    breakers,
    tally,
    async termModel() {
      // One small read a question: a rebuild or update by any process shows in the description it stored.
      const stamp = await store.termModel.info();
      if (stamp !== termModel.stamp) {
        const model = stamp === undefined ? Promise.resolve(undefined) : TermModel.load(store);
        termModel = { stamp, model };
        // A load that failed (the database was lost) is tried again by the next question.
        model.catch(() => termModel.model === model && (termModel = { stamp: undefined, model: undefined }));
      }
      return termModel.model;
    },
    quoteLimiter: RateLimiter.create({ store, perMinute: config.quoteRateLimitPerMinute }),
    rails,
    lexicalIndex() {
      if (!lexicalIndex) {
        const started = performance.now();
        lexicalIndex = LexicalIndex.open(store, {
          onProgress: (stage) => logger.info(`search index: ${stage}`),
          onLoading: (progress) => (indexLoading = progress),
          onSnapshotRefused: (reason) => logger.warn(`search index: snapshot refused, loading from rows: ${reason}`),
          threads: config.searchThreads.threads,
          threadMinChunks: config.searchThreads.minChunks,
          onThreadFailure: (error) => logger.error('a search thread failed: questions are searched without it from here on', { error }),
        }).then(
          (index) => {
            const ms = performance.now() - started;
            logger.info('search index loaded', { ...index.size(), from: index.origin().source, ms: Math.round(ms) });
            metrics.indexLoaded({ chunks: index.size().chunks, seconds: ms / 1000 });
            loadedIndex = index;
            indexLoading = undefined;
            return index;
          },
          (error: unknown) => {
            // A failed load (the database was down) is tried again by the next question.
            lexicalIndex = undefined;
            indexLoading = undefined;
            throw error;
          },
        );
      }
      return lexicalIndex;
    },
    synthesizer: Synthesizers.fromConfig(config, { logger, breaker: breakers.synthesizer, metrics }),
    similarity: readerEncoder ? Meaning.create({ encoder: readerEncoder, logger }) : undefined,
    citationLinks: SignedLinks.create({ secret: async () => config.citationLinks.secret ?? keptLinkSecret(store), ttlSeconds: config.citationLinks.ttlSeconds }),
    embedder,
    vectors,
    fetcher: Connectors.fetcherFromConfig(config),
    connectors: Connectors.fromConfig(config),
    createdStore: created,
    close: async () => {
      database.close();
      await loadedIndex?.close();
      await tally.stop().catch(() => undefined);
      await instance.stop();
      return store.close();
    },
  };
}

/** What a sync needs, from the process's services. */
export const syncDependencies = (services: Services): Sync.SyncDependencies => ({
  store: services.store,
  fetcher: services.fetcher,
  connectors: services.connectors,
  chunkTargetTokens: services.config.chunkTargetTokens,
  embedder: services.vectors ? services.embedder : undefined,
  logger: services.logger,
  metrics: services.metrics,
});
