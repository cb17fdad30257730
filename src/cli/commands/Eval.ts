import * as Beir from '../../eval/Beir.js';
import * as Evaluate from '../../eval/Evaluate.js';
import { type Command, required, text } from '../Command.js';

export const evaluate: Command = {
  name: 'eval',
  summary: 'Load a BEIR-format dataset into a temporary store and report nDCG@10, Recall@10/100, MRR@10 and latency.',
  usage: 'eval --dataset DIR [--qrels FILE] [--json]',
  options: { dataset: { type: 'string' }, qrels: { type: 'string' }, json: { type: 'boolean', short: 'j' } },
  async run({ out }, { values }) {
    const dataset = await Beir.load(required(values, 'dataset'), text(values, 'qrels'));
    const ingest = out.progress(dataset.corpus.length, 'ingest');
    const store = await Evaluate.buildStore(dataset, { onProgress: (done) => ingest.update(done, ''), onStage: (stage) => out.status(`term model: ${stage}`) });
    ingest.stop();
    try {
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
