import path from 'node:path';
import * as Answers from '../../eval/Answers.js';
import * as Beir from '../../eval/Beir.js';
import * as Evaluate from '../../eval/Evaluate.js';
import { type Command, UsageError, number, required, text } from '../Command.js';

export const evaluate: Command = {
  name: 'eval',
  summary: 'Load a BEIR-format dataset into a temporary store and report retrieval quality (nDCG@10, Recall@10/100, MRR@10, latency), or with --answers the quality of paid answers.',
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
  async run({ out }, { values }) {
    const directory = required(values, 'dataset');
    if (values.answers && !text(values, 'evidence')) throw new UsageError('--answers needs --evidence FILE (rationale sentences per claim and document)');
    const dataset = await Beir.load(directory, text(values, 'qrels'));
    const ingest = out.progress(dataset.corpus.length, 'ingest');
    const store = await Evaluate.buildStore(dataset, { onProgress: (done) => ingest.update(done, ''), onStage: (stage) => out.status(`term model: ${stage}`) });
    ingest.stop();
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
      const query = out.progress(dataset.qrels.size, 'query');
      const result = await Evaluate.evaluate(store, dataset, { onProgress: (done) => query.update(done, '') });
      query.stop();
      if (values.json) out.json(result);
      else {
        out.line(`queries ${result.queries}, documents ${result.documents}, chunks ${result.chunks}`);
        out.line(`nDCG@10 ${result.ndcg10.toFixed(4)}  Recall@10 ${result.recall10.toFixed(4)}  Recall@100 ${result.recall100.toFixed(4)}  MRR@10 ${result.mrr10.toFixed(4)}`);
        out.line(`latency per query: p50 ${result.latencyMs.p50.toFixed(1)} ms, p95 ${result.latencyMs.p95.toFixed(1)} ms`);
      }
    } finally {
      store.close();
    }
  },
};
