import path from 'node:path';
import * as Answers from '../../eval/Answers.js';
import * as Beir from '../../eval/Beir.js';
import * as Evaluate from '../../eval/Evaluate.js';
import * as FitFusion from '../../eval/FitFusion.js';
import * as Embedders from '../../retrieval/Embedders.js';
import * as Fusion from '../../retrieval/Fusion.js';
import * as VectorIndex from '../../store/VectorIndex.js';
import { type Command, type CommandContext, UsageError, number, required, text } from '../Command.js';
import type { Output } from '../Output.js';

/** Loads a dataset into a temporary store, with a progress bar for each stage; embedded too when an embedder is given. */
async function load(out: Output, directory: string, qrels: string | undefined, embedder: ReturnType<typeof Embedders.fromConfig>) {
  const dataset = await Beir.load(directory, qrels);
  const ingest = out.progress(dataset.corpus.length, 'ingest');
  let embedding: ReturnType<Output['progress']> | undefined;
  const store = await Evaluate.buildStore(dataset, {
    embedder,
    onProgress: (done) => ingest.update(done, ''),
    onStage: (stage) => out.status(`term model: ${stage}`),
    onEmbedProgress: (done, total) => {
      embedding ??= out.progress(total, `embed ${embedder!.id}`);
      embedding.update(done, '');
    },
  });
  ingest.stop();
  embedding?.stop();
  return { dataset, store };
}

/** The fusion stored for the configured embedder in the operator's database, copied to the evaluation store. */
function carryFusion(context: CommandContext, store: Evaluate.EvalStore): boolean {
  if (!store.vectors) return false;
  const fitted = VectorIndex.fusion(context.services().db, store.vectors.search.embedderId);
  if (fitted !== undefined) VectorIndex.setFusion(store.services.db, store.vectors.search.embedderId, fitted);
  return store.vectors.search.fusion().fitted;
}

const throughput = (embedded: { chunks: number; seconds: number }) => embedded.chunks / Math.max(embedded.seconds, 1e-3);

export const evaluate: Command = {
  name: 'eval',
  summary:
    'Load a BEIR-format dataset into a temporary store and report retrieval quality (nDCG@10, Recall@10/100, MRR@10, latency; lexical and hybrid side by side when an embedder is configured), or with --answers the quality of paid answers.',
  usage: 'eval --dataset DIR [--qrels FILE] [--answers --evidence FILE [--sentences FILE] [--limit N] [--removed N]] [--json]',
  options: {
    dataset: { type: 'string' },
    qrels: { type: 'string' },
    answers: { type: 'boolean' },
    evidence: { type: 'string' },
    sentences: { type: 'string' },
    limit: { type: 'string' },
    removed: { type: 'string' },
    json: { type: 'boolean', short: 'j' },
  },
  async run(context, { values }) {
    const { out } = context;
    const directory = required(values, 'dataset');
    if (values.answers && !text(values, 'evidence')) throw new UsageError('--answers needs --evidence FILE (rationale sentences per claim and document)');
    const embedder = values.answers ? undefined : Embedders.fromConfig(context.config);
    const { dataset, store } = await load(out, directory, text(values, 'qrels'), embedder);
    try {
      if (values.answers) {
        const evidence = await Answers.loadEvidence(text(values, 'evidence')!);
        const sentences = await Answers.loadSentences(text(values, 'sentences') ?? path.join(directory, 'corpus.sentences.jsonl'));
        let progress: ReturnType<typeof out.progress> | undefined;
        const result = await Answers.evaluate(store, dataset, {
          evidence,
          sentences,
          limit: number(values, 'limit', { min: 1, integer: true }),
          removed: number(values, 'removed', { min: 0, integer: true }),
          onProgress: (done, total) => {
            progress ??= out.progress(total, 'answer');
            progress.update(done, '');
          },
        });
        progress?.stop();
        if (values.json) out.json(result);
        else {
          const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
          out.line(`claims with evidence ${result.claims}`);
          out.line(`answer recall (cites a relevant document) ${pct(result.answerRecall)}  citation precision (by document) ${pct(result.citationPrecision)}  rationale overlap (answer sentences) ${pct(result.rationaleOverlap)}`);
          out.line(`abstention: relevant documents removed ${pct(result.abstention.removedEvidence.rate)} of ${result.abstention.removedEvidence.asked}, off-topic ${pct(result.abstention.offTopic.rate)} of ${result.abstention.offTopic.asked}`);
          for (const level of ['high', 'medium', 'low'] as const) {
            const c = result.confidence[level];
            out.line(`confidence ${level}: ${c.answers} answers, ${pct(c.answers ? c.citesRelevant / c.answers : 0)} cite a relevant document`);
          }
        }
        return;
      }
      const run = async (label: string, vectors?: typeof store.vectors) => {
        const query = out.progress(dataset.qrels.size, label);
        const result = await Evaluate.evaluate(store, dataset, { vectors: vectors?.search, onProgress: (done) => query.update(done, '') });
        query.stop();
        return result;
      };
      const lexical = await run('query');
      if (!store.vectors) {
        if (values.json) out.json(lexical);
        else {
          out.line(`queries ${lexical.queries}, documents ${lexical.documents}, chunks ${lexical.chunks}`);
          out.line(metricsLine(lexical));
        }
        return;
      }
      const fitted = carryFusion(context, store);
      const hybrid = await run('query (hybrid)', store.vectors);
      const embedding = { embedder: store.vectors.search.embedderId, chunks: store.vectors.embedded.chunks, seconds: Number(store.vectors.embedded.seconds.toFixed(1)), chunksPerSecond: Number(throughput(store.vectors.embedded).toFixed(1)) };
      const fusion = { fitted, weight: fittedWeight(store) };
      if (values.json) out.json({ lexical, hybrid, embedding, fusion });
      else {
        out.line(`queries ${lexical.queries}, documents ${lexical.documents}, chunks ${lexical.chunks}`);
        out.line(`lexical  ${metricsLine(lexical)}`);
        out.line(`hybrid   ${metricsLine(hybrid)}`);
        out.line(`embedding: ${embedding.chunks} chunks in ${embedding.seconds} s (${embedding.chunksPerSecond} chunks/s) with ${embedding.embedder}`);
        out.line(fitted ? `fusion: fitted, similarity weight ${fusion.weight}` : 'fusion: not fitted for this embedder, similarity weighs nothing (run `profile-edge fit` to measure it)');
      }
    } finally {
      store.close();
    }
  },
};

const metricsLine = (r: Evaluate.EvalResult) =>
  `nDCG@10 ${r.ndcg10.toFixed(4)}  Recall@10 ${r.recall10.toFixed(4)}  Recall@100 ${r.recall100.toFixed(4)}  MRR@10 ${r.mrr10.toFixed(4)}  latency p50 ${r.latencyMs.p50.toFixed(1)} ms, p95 ${r.latencyMs.p95.toFixed(1)} ms`;

const fittedWeight = (store: Evaluate.EvalStore) => Fusion.weightOf(store.vectors!.search.fusion().model);

export const fit: Command = {
  name: 'fit',
  summary: 'Measure how much vector similarity should weigh for the configured embedder, on a BEIR-format dataset, and store the weight with the vector index (0 unless it ranks held-out queries better).',
  usage: 'fit --dataset DIR [--qrels FILE] [--json]',
  options: { dataset: { type: 'string' }, qrels: { type: 'string' }, json: { type: 'boolean', short: 'j' } },
  async run(context, { values }) {
    const { out } = context;
    const directory = required(values, 'dataset');
    const embedder = Embedders.fromConfig(context.config);
    if (!embedder) throw new UsageError('no embedder is configured (EMBEDDER=none): the lexical reranker ships fitted; set EMBEDDER to fit vector fusion for it');
    const { dataset, store } = await load(out, directory, text(values, 'qrels'), embedder);
    try {
      let progress: ReturnType<Output['progress']> | undefined;
      const { model, report } = await FitFusion.fit(store, dataset, {
        onProgress: (done, total) => {
          progress ??= out.progress(total, 'fit');
          progress.update(done, '');
        },
      });
      progress?.stop();
      VectorIndex.setFusion(context.services().db, embedder.id, model);
      const embedding = { chunks: store.vectors!.embedded.chunks, seconds: Number(store.vectors!.embedded.seconds.toFixed(1)), chunksPerSecond: Number(throughput(store.vectors!.embedded).toFixed(1)) };
      if (values.json) out.json({ ...report, embedding, stored: context.config.databasePath });
      else {
        out.line(`${report.queries} judged queries, ${report.candidates} lexical candidates each and the vector neighbours`);
        out.line(`nDCG@10 lexical ${report.lexical.ndcg10.toFixed(4)}, hybrid ${report.hybrid.ndcg10.toFixed(4)} (held out ${report.hybrid.crossValidatedNdcg10.toFixed(4)})`);
        out.line(report.verdict);
        out.line(`embedding: ${embedding.chunks} chunks in ${embedding.seconds} s (${embedding.chunksPerSecond} chunks/s)`);
        out.line(`stored for ${embedder.id} in ${context.config.databasePath}`);
      }
    } finally {
      store.close();
    }
  },
};
