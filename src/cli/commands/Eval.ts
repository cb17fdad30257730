import { lazy } from '../../errors/Lazy.js';
import fs from 'node:fs';
import path from 'node:path';
import type * as Answers from '../../eval/Answers.js';
import type { Config } from '../../config/Config.js';
import type * as Evaluate from '../../eval/Evaluate.js';
import type * as Yardstick from '../../eval/Yardstick.js';
import type * as Embedders from '../../retrieval/embedders/Embedders.js';
import { type Command, type CommandContext, UsageError, type Values, number, required, text } from '../Command.js';
import type { Output } from '../Output.js';

/** What evaluation runs on, loaded by the commands that evaluate (never by the others, nor by `--help`). */
const loadModules = lazy('The evaluation', async () => {
  const [Answers, Beir, Evaluate, FitFusion, Yardstick, Embedders, Fusion] = await Promise.all([
    import('../../eval/Answers.js'),
    import('../../eval/Beir.js'),
    import('../../eval/Evaluate.js'),
    import('../../eval/FitFusion.js'),
    import('../../eval/Yardstick.js'),
    import('../../retrieval/embedders/Embedders.js'),
    import('../../retrieval/ranking/Fusion.js'),
  ]);
  return { Answers, Beir, Evaluate, FitFusion, Yardstick, Embedders, Fusion };
});

/** Loads a dataset into a temporary store, with a progress bar for each stage; embedded too when an embedder is given. */
/** A dataset and a temporary store of it, beside the operator's database (a file, or a temporary PostgreSQL database). */
async function load(out: Output, directory: string, qrels: string | undefined, embedder: ReturnType<typeof Embedders.create>, database: Config['database']) {
  const { Beir, Evaluate } = await loadModules();
  const dataset = await Beir.load(directory, qrels);
  const ingest = out.progress(dataset.corpus.length, 'ingest');
  let embedding: ReturnType<Output['progress']> | undefined;
  const store = await Evaluate.buildStore(dataset, {
    embedder,
    database,
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
async function carryFusion(context: CommandContext, store: Evaluate.EvalStore): Promise<boolean> {
  if (!store.vectors) return false;
  const fitted = await (await context.services()).store.vectors.fusion(store.vectors.search.embedderId);
  if (fitted !== undefined) await store.services.store.vectors.setFusion(store.vectors.search.embedderId, fitted);
  return (await store.vectors.search.fusion()).fitted;
}

const throughput = (embedded: { chunks: number; seconds: number }) => embedded.chunks / Math.max(embedded.seconds, 1e-3);

export const evaluate: Command = {
  name: 'eval',
  summary:
    'Load a BEIR-format dataset into a temporary store and report retrieval quality (nDCG@10, Recall@10/100, MRR@10, latency; lexical and hybrid side by side when an embedder is configured), or with --answers the quality of paid answers: the judged yardstick of expert questions (data/yardstick), beside a BEIR dataset with rationale evidence (SciFact) when one is given.',
  usage: 'eval --dataset DIR [--qrels FILE] [--json] | eval --answers [--yardstick DIR] [--dataset DIR --evidence FILE [--qrels FILE] [--sentences FILE] [--limit N] [--removed N]] [--json]',
  options: {
    dataset: { type: 'string' },
    yardstick: { type: 'string' },
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
    if (values.answers) return answers(context, values);
    const directory = required(values, 'dataset');
    const { Embedders, Evaluate } = await loadModules();
    const embedder = Embedders.create(context.config.embedding);
    const { dataset, store } = await load(out, directory, text(values, 'qrels'), embedder, context.config.database);
    try {
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
      const fitted = await carryFusion(context, store);
      const hybrid = await run('query (hybrid)', store.vectors);
      const embedding = { embedder: store.vectors.search.embedderId, chunks: store.vectors.embedded.chunks, seconds: Number(store.vectors.embedded.seconds.toFixed(1)), chunksPerSecond: Number(throughput(store.vectors.embedded).toFixed(1)) };
      const fusion = { fitted, weight: await fittedWeight(store) };
      if (values.json) out.json({ lexical, hybrid, embedding, fusion });
      else {
        out.line(`queries ${lexical.queries}, documents ${lexical.documents}, chunks ${lexical.chunks}`);
        out.line(`lexical  ${metricsLine(lexical)}`);
        out.line(`hybrid   ${metricsLine(hybrid)}`);
        out.line(`embedding: ${embedding.chunks} chunks in ${embedding.seconds} s (${embedding.chunksPerSecond} chunks/s) with ${embedding.embedder}`);
        out.line(fitted ? `fusion: fitted, similarity weight ${fusion.weight}` : 'fusion: not fitted for this embedder, similarity weighs nothing (run `profile-edge fit` to measure it)');
      }
    } finally {
      await store.close();
    }
  },
};

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const ratio = (a: number, b: number) => (b === 0 ? 0 : a / b);

/** SciFact's answer metrics, when a dataset with rationale evidence is given. */
async function scifactAnswers(context: CommandContext, values: Values): Promise<Answers.AnswerResult | undefined> {
  const { Answers } = await loadModules();
  const directory = text(values, 'dataset');
  if (directory === undefined) return undefined;
  const { out } = context;
  const { dataset, store } = await load(out, directory, text(values, 'qrels'), undefined, context.config.database);
  try {
    const evidence = await Answers.loadEvidence(text(values, 'evidence')!);
    const sentences = await Answers.loadSentences(text(values, 'sentences') ?? path.join(directory, 'corpus.sentences.jsonl'));
    let progress: ReturnType<typeof out.progress> | undefined;
    const result = await Answers.evaluate(store, dataset, {
      evidence,
      sentences,
      limit: number(values, 'limit', { min: 1, integer: true }),
      removed: number(values, 'removed', { min: 0, integer: true }),
      onProgress: (done, total) => {
        progress ??= out.progress(total, 'SciFact answers');
        progress.update(done, '');
      },
    });
    progress?.stop();
    return result;
  } finally {
    await store.close();
  }
}

/** The yardstick's answer metrics: the judged expert questions. */
async function yardstickAnswers(context: CommandContext, values: Values): Promise<Yardstick.YardstickResult> {
  const { Yardstick } = await loadModules();
  const { out } = context;
  const directory = text(values, 'yardstick') ?? Yardstick.defaultDirectory;
  if (!fs.existsSync(path.join(directory, 'manifest.json')) || !fs.existsSync(path.join(directory, 'questions'))) {
    throw new UsageError(`--yardstick ${directory} is not a yardstick: it needs manifest.json and a questions/ folder (see data/yardstick/README.md)`);
  }
  const questions = Yardstick.loadQuestions(directory);
  out.status(`yardstick: loading the demo experts and ${directory}`);
  const store = await Yardstick.buildStore({ directory, database: context.config.database });
  try {
    let progress: ReturnType<typeof out.progress> | undefined;
    const result = await Yardstick.evaluate(store, questions, {
      onProgress: (done, total) => {
        progress ??= out.progress(total, 'yardstick answers');
        progress.update(done, '');
      },
    });
    progress?.stop();
    return result;
  } finally {
    await store.close();
  }
}

/** Answer quality on both sets, side by side: the yardstick of expert questions and, when given, SciFact. */
async function answers(context: CommandContext, values: Values): Promise<void> {
  const { out } = context;
  const { Yardstick } = await loadModules();
  if (text(values, 'dataset') !== undefined && !text(values, 'evidence')) throw new UsageError('--answers needs --evidence FILE (rationale sentences per claim and document) to score a --dataset');
  const yardstick = await yardstickAnswers(context, values);
  const scifact = await scifactAnswers(context, values);
  if (values.json) {
    out.json({ yardstick: { ...yardstick, outcomes: yardstick.outcomes.filter((o) => !o.right).map(({ id, kind, correct, cited, refused, confidence }) => ({ id, kind, correct, cited, refused, confidence })) }, ...(scifact && { scifact }) });
    return;
  }
  // The held-out experts apart from the rest: a change fit on the rest is judged by them.
  const parts = [
    { label: 'yardstick', y: yardstick },
    { label: 'held out', y: Yardstick.summarize(yardstick.outcomes.filter((o) => o.heldOut)) },
    { label: 'the rest', y: Yardstick.summarize(yardstick.outcomes.filter((o) => !o.heldOut)) },
  ];
  const row = (label: string, ours: (y: Yardstick.YardstickResult) => string, theirs: string) =>
    out.line(`${label.padEnd(46)}${parts.map((p) => ours(p.y).padEnd(18)).join('')}${scifact ? theirs : ''}`.trimEnd());
  out.line(`${''.padEnd(46)}${parts.map((p) => p.label.padEnd(18)).join('')}${scifact ? 'SciFact (train)' : ''}`.trimEnd());
  row('questions', (y) => `${y.questions}`, scifact ? `${scifact.claims} claims` : '');
  row('answered correctly, right passage cited', (y) => `${pct(ratio(y.answerable.right, y.answerable.asked))} of ${y.answerable.asked}`, '');
  row('  key fact stated, none denied', (y) => pct(ratio(y.answerable.correct, y.answerable.asked)), '');
  row('  cites the right passage / relevant document', (y) => pct(ratio(y.answerable.cited, y.answerable.asked)), scifact ? `${pct(scifact.answerRecall)} (answer recall)` : '');
  row('citation precision (by document)', () => '', scifact ? pct(scifact.citationPrecision) : '');
  row('answer sentences overlapping a rationale', () => '', scifact ? pct(scifact.rationaleOverlap) : '');
  row('unanswerable refused before payment', (y) => `${pct(ratio(y.unanswerable.refusedBeforePayment, y.unanswerable.asked))} of ${y.unanswerable.asked}`, scifact ? `${pct(scifact.abstention.offTopic.rate)} off-topic, ${pct(scifact.abstention.removedEvidence.rate)} evidence removed` : '');
  row('  refused only after the charge (given back)', (y) => pct(ratio(y.unanswerable.refused - y.unanswerable.refusedBeforePayment, y.unanswerable.asked)), '');
  for (const level of ['high', 'medium', 'low'] as const) {
    const theirs = scifact?.confidence[level];
    const share = (answers: number, right: number, what: string) => (answers === 0 ? 'none given' : `${answers}, ${pct(ratio(right, answers))}${what}`);
    row(`confidence ${level}: answers, share right`, (y) => share(y.confidence[level].answers, y.confidence[level].right, ''), theirs ? share(theirs.answers, theirs.citesRelevant, ' cite relevant') : '');
  }
  for (const p of parts.slice(1)) out.line(`${p.label} by kind: ${Object.entries(p.y.kinds).map(([kind, k]) => `${kind} ${k.right}/${k.asked}`).join(', ')}`);
  const wrong = yardstick.outcomes.filter((o) => !o.right);
  if (wrong.length > 0) out.line(`yardstick misses: ${wrong.map((o) => `${o.id}${o.heldOut ? '*' : ''}`).join(', ')} (* held out)`);
}

const metricsLine = (r: Evaluate.EvalResult) =>
  `nDCG@10 ${r.ndcg10.toFixed(4)}  Recall@10 ${r.recall10.toFixed(4)}  Recall@100 ${r.recall100.toFixed(4)}  MRR@10 ${r.mrr10.toFixed(4)}  latency p50 ${r.latencyMs.p50.toFixed(1)} ms, p95 ${r.latencyMs.p95.toFixed(1)} ms`;

const fittedWeight = async (store: Evaluate.EvalStore) => (await loadModules()).Fusion.weightOf((await store.vectors!.search.fusion()).model);

export const fit: Command = {
  name: 'fit',
  summary: 'Measure how much vector similarity should weigh for the configured embedder, on a BEIR-format dataset, and store the weight with the vector index (0 unless it ranks held-out queries better).',
  usage: 'fit --dataset DIR [--qrels FILE] [--json]',
  options: { dataset: { type: 'string' }, qrels: { type: 'string' }, json: { type: 'boolean', short: 'j' } },
  async run(context, { values }) {
    const { out } = context;
    const directory = required(values, 'dataset');
    const { Embedders, FitFusion } = await loadModules();
    const embedder = Embedders.create(context.config.embedding);
    if (!embedder) throw new UsageError('no embedder is configured (EMBEDDER=none): the lexical reranker ships fitted; set EMBEDDER to fit vector fusion for it');
    const { dataset, store } = await load(out, directory, text(values, 'qrels'), embedder, context.config.database);
    try {
      let progress: ReturnType<Output['progress']> | undefined;
      const { model, report } = await FitFusion.fit(store, dataset, {
        onProgress: (done, total) => {
          progress ??= out.progress(total, 'fit');
          progress.update(done, '');
        },
      });
      progress?.stop();
      const operators = (await context.services()).store;
      await operators.vectors.setFusion(embedder.id, model);
      const embedding = { chunks: store.vectors!.embedded.chunks, seconds: Number(store.vectors!.embedded.seconds.toFixed(1)), chunksPerSecond: Number(throughput(store.vectors!.embedded).toFixed(1)) };
      if (values.json) out.json({ ...report, embedding, stored: operators.describe() });
      else {
        out.line(`${report.queries} judged queries, ${report.candidates} lexical candidates each and the vector neighbours`);
        out.line(`nDCG@10 lexical ${report.lexical.ndcg10.toFixed(4)}, hybrid ${report.hybrid.ndcg10.toFixed(4)} (held out ${report.hybrid.crossValidatedNdcg10.toFixed(4)})`);
        out.line(report.verdict);
        out.line(`embedding: ${embedding.chunks} chunks in ${embedding.seconds} s (${embedding.chunksPerSecond} chunks/s)`);
        out.line(`stored for ${embedder.id} in ${operators.describe()}`);
      }
    } finally {
      await store.close();
    }
  },
};
