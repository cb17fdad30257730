import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as Config from '../config/Config.js';
import * as Upload from '../ingest/Upload.js';
import type { Embedder } from '../retrieval/embedders/Embedder.js';
import * as Retriever from '../retrieval/Retriever.js';
import type { Model } from '../retrieval/ranking/Reranker.js';
import * as Scope from '../retrieval/Scope.js';
import * as TermModel from '../retrieval/terms/TermModel.js';
import * as VectorBuild from '../retrieval/vectors/VectorBuild.js';
import * as VectorSearch from '../retrieval/vectors/VectorSearch.js';
import * as Services from '../Services.js';
import * as Stores from '../store/Store.js';
import * as Caller from '../auth/Caller.js';
import type { Dataset } from './Beir.js';
import * as Beir from './Beir.js';

export const evalSlug = 'eval-corpus';

/** A temporary store holding a dataset's corpus, ingested through the upload path an operator uses. */
export type EvalStore = {
  services: Services.Services;
  channels: Map<string, Scope.ScopedChannel>;
  docOf: Map<string, string>;
  chunks: number;
  /** Vector search over the corpus, when it was built with an embedder; and how fast the corpus was embedded. */
  vectors?: { search: VectorSearch.VectorSearch; embedded: VectorBuild.BuildReport } | undefined;
  close(): Promise<void>;
};

export async function buildStore(
  dataset: Dataset,
  options: {
    chunkTargetTokens?: number;
    onProgress?: (done: number, total: number) => void;
    onStage?: (stage: string) => void;
    /** Embeds the corpus into a vector index with this embedder, as `profile-edge reindex` does. */
    embedder?: Embedder | undefined;
    onEmbedProgress?: (done: number, total: number) => void;
    /** The operator's database: on PostgreSQL the evaluation store is a temporary database beside it. */
    database?: Config.Config['database'];
  } = {},
): Promise<EvalStore> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-eval-'));
  const temporary = options.database?.engine === 'postgres' ? await Stores.temporaryDatabase(options.database.url) : undefined;
  const config = Config.load({
    ...(temporary ? { DATABASE_URL: temporary.url } : { DATABASE_PATH: path.join(directory, 'eval.db') }),
    LOG_LEVEL: 'silent',
    ENVIRONMENT: 'test',
    ...(options.chunkTargetTokens && { CHUNK_TARGET_TOKENS: String(options.chunkTargetTokens) }),
  });
  const discard = async (services?: Services.Services) => {
    await services?.close().catch(() => undefined);
    await temporary?.drop();
    fs.rmSync(directory, { recursive: true, force: true });
  };
  let services: Services.Services | undefined;
  try {
    services = await Services.create(config);
    const built = await fill(services);
    return { ...built, close: () => discard(services) };
  } catch (error) {
    // A store half built is not left behind, on disk or on the server.
    await discard(services);
    throw error;
  }

  async function fill(services: Services.Services): Promise<Omit<EvalStore, 'close'>> {
    const profile = await services.store.profiles.create({ slug: evalSlug, name: 'Evaluation corpus', visibility: 'public' });
    const channel = await services.store.channels.create({ profileId: profile.id, kind: 'user_upload', label: 'Corpus', accessLevel: 'public', ratePerMillionTokens: 0 });
    let done = 0;
    for (const doc of dataset.corpus) {
      if (doc.text.trim() === '' && doc.title.trim() === '') continue;
      await Upload.ingest(services, {
        channelId: channel.id,
        file: `${doc.id}.txt`,
        content: doc.text.trim() === '' ? doc.title : doc.text,
        metadata: { externalId: doc.id, title: doc.title || doc.id },
        chunkTargetTokens: config.chunkTargetTokens,
      });
      options.onProgress?.(++done, dataset.corpus.length);
    }
    await TermModel.build(services.store, { onProgress: options.onStage });
    let vectors: EvalStore['vectors'];
    if (options.embedder) {
      const embedded = await VectorBuild.build(services.store, options.embedder, { onProgress: options.onEmbedProgress });
      vectors = { search: VectorSearch.create({ store: services.store, embedder: options.embedder, logger: services.logger }), embedded };
    }
    const docOf = await services.store.items.externalIds();
    const chunks = await services.store.chunks.count();
    const scope = await Scope.resolve(services.store, { question: '', scope: { kind: 'profile', slug: evalSlug }, boundSlug: undefined, channelIds: undefined, caller: Caller.anonymous('eval') });
    return { services, channels: scope.channels, docOf, chunks, vectors };
  }
}

export type EvalResult = {
  queries: number;
  documents: number;
  chunks: number;
  ndcg10: number;
  recall10: number;
  recall100: number;
  mrr10: number;
  latencyMs: { p50: number; p95: number };
};

/** Ranks documents for every judged query with the query path's retriever and scores the rankings. */
export async function evaluate(
  store: EvalStore,
  dataset: Dataset,
  options: {
    model?: Model;
    queryIds?: string[];
    /** Ranks with vectors (the store's own search): lexical alone otherwise. */
    vectors?: VectorSearch.VectorSearch | undefined;
    onProgress?: (done: number, total: number) => void;
  } = {},
): Promise<EvalResult> {
  const ids = options.queryIds ?? [...dataset.qrels.keys()];
  const totals = { ndcg10: 0, recall10: 0, recall100: 0, mrr10: 0 };
  const latencies: number[] = [];
  const index = await store.services.lexicalIndex();
  let done = 0;
  for (const qid of ids) {
    const question = dataset.queries.get(qid)!;
    const started = performance.now();
    // 100 candidates, deeper than a query's 50, so Recall@100 is measured over 100 chunks.
    const run = await Retriever.retrieve(store.services.store, index, {
      question,
      channels: store.channels,
      mode: 'lookup',
      model: options.model,
      termModel: await store.services.termModel(),
      vectors: options.vectors,
      candidates: 100,
    });
    latencies.push(performance.now() - started);
    const ranked: string[] = [];
    for (const e of run.ranked) {
      const doc = store.docOf.get(e.itemId)!;
      if (!ranked.includes(doc)) ranked.push(doc);
    }
    const m = Beir.metrics(ranked, dataset.qrels.get(qid)!);
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += m[key];
    options.onProgress?.(++done, ids.length);
  }
  const n = ids.length || 1;
  return {
    queries: ids.length,
    documents: store.docOf.size,
    chunks: store.chunks,
    ndcg10: totals.ndcg10 / n,
    recall10: totals.recall10 / n,
    recall100: totals.recall100 / n,
    mrr10: totals.mrr10 / n,
    latencyMs: { p50: Beir.percentile(latencies, 50), p95: Beir.percentile(latencies, 95) },
  };
}
