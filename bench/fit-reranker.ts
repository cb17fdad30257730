/**
 * Fits the reranker on a BEIR dataset's judged queries (SciFact train by default) and writes
 * src/retrieval/ranking/reranker.json. Reports 2-fold cross-validated nDCG@10 so overfitting shows. With an embedder
 * configured (EMBEDDER), fits that embedder's vector fusion instead, as `profile-edge fit` does, and stores it with the
 * vector index in DATABASE_PATH.
 *
 *   npm run fit -- [--dataset DIR] [--qrels FILE]
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { main } from '../src/cli/Cli.js';
import * as Config from '../src/config/Config.js';
import { projectRoot } from '../src/config/Config.js';
import * as Beir from '../src/eval/Beir.js';
import * as Evaluate from '../src/eval/Evaluate.js';
import * as Fit from '../src/eval/Fit.js';
import * as Features from '../src/retrieval/ranking/Features.js';
import * as Reranker from '../src/retrieval/ranking/Reranker.js';
import * as Retriever from '../src/retrieval/Retriever.js';

const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
const { values } = parseArgs({ options: { dataset: { type: 'string' }, qrels: { type: 'string' }, candidates: { type: 'string' } } });
const directory = values.dataset ?? path.join(shared, 'datasets', 'scifact');
if (Config.load().embedding.provider !== 'none') {
  process.exit(await main(['fit', '--dataset', directory, '--qrels', values.qrels ?? path.join(directory, 'qrels', 'train.tsv')]));
}
const dataset = await Beir.load(directory, values.qrels ?? path.join(directory, 'qrels', 'train.tsv'));
const store = await Evaluate.buildStore(dataset);
const index = await store.services.lexicalIndex();
const candidates = Number(values.candidates ?? 100);
const ids = [...dataset.qrels.keys()];
const groups = new Map<string, Fit.Group>();
for (const qid of ids) {
  const rows = await Retriever.candidateFeatures(store.services.store, index, { question: dataset.queries.get(qid)!, channels: store.channels, candidates, termModel: await store.services.termModel() });
  const qrels = dataset.qrels.get(qid)!;
  groups.set(qid, { features: rows.map((r) => r.features), labels: rows.map((r) => qrels.get(store.docOf.get(r.itemId)!) ?? 0) });
}
const modelFrom = (fit: Pick<Reranker.Model, 'mean' | 'scale' | 'weights'>, train: string[]): Reranker.Model => {
  const base = { features: [...Features.names], ...fit, calibration: { slope: 1, intercept: 0 }, fit: {} };
  const points = train.flatMap((qid) => {
    const g = groups.get(qid)!;
    return g.features.map((x, i) => ({ score: Reranker.linear(base, x), label: g.labels[i]! }));
  });
  return { ...base, calibration: Fit.calibrate(points) };
};
const half = [ids.filter((_, i) => i % 2 === 0), ids.filter((_, i) => i % 2 === 1)];
const fitOn = (qids: string[]) => {
  const g = qids.map((q) => groups.get(q)!);
  return Fit.coordinateAscent(g, Fit.lambdaRank(g, { epochs: 100 }));
};
const folds = [0, 1].map((f) => modelFrom(fitOn(half[f]!), half[f]!));
const cv = [
  await Evaluate.evaluate(store, dataset, { model: folds[0], queryIds: half[1] }),
  await Evaluate.evaluate(store, dataset, { model: folds[1], queryIds: half[0] }),
];
const cvNdcg = (cv[0]!.ndcg10 * half[1]!.length + cv[1]!.ndcg10 * half[0]!.length) / ids.length;
const model = modelFrom(fitOn(ids), ids);
const train = await Evaluate.evaluate(store, dataset, { model });
const firstStage = await Evaluate.evaluate(store, dataset, { model: { ...model, weights: model.weights.map((_, i) => (i === 0 ? 1 : 0)) } });
model.fit = {
  dataset: path.basename(directory),
  queries: ids.length,
  candidates,
  trainNdcg10: Number(train.ndcg10.toFixed(4)),
  crossValidatedNdcg10: Number(cvNdcg.toFixed(4)),
  firstStageNdcg10: Number(firstStage.ndcg10.toFixed(4)),
};
fs.writeFileSync(path.join(projectRoot, 'src', 'retrieval', 'ranking', 'reranker.json'), `${JSON.stringify(model, null, 2)}\n`);
await store.close();
console.log(JSON.stringify(model.fit), '\nweights', Features.names.map((n, i) => `${n}=${model.weights[i]!.toFixed(3)}`).join(' '), '\ncalibration', model.calibration);
