/**
 * Fits the answer models on a BEIR dataset with rationale sentences (SciFact train by default) and writes
 * src/answer/rationale.json:
 * - the sentence model: which sentences of the retrieved chunks are a claim's rationale (by the eval's own test, 60%
 *   of the sentence's words in a rationale sentence of a relevant document), among all sentences of the best chunks;
 * - the answerability model: a retrieval with a relevant document among its two best items, against the same claim's retrieval with its
 *   relevant documents removed (the evidence shares the topic, not the claim);
 * - the threshold: the highest that keeps 99.5% of the answerable retrievals in 2-fold cross-validation.
 *
 *   npm run fit:answers -- [--dataset DIR] [--qrels FILE] [--evidence FILE]
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as Rationale from '../src/answer/Rationale.js';
import { projectRoot } from '../src/config/Config.js';
import * as Answers from '../src/eval/Answers.js';
import * as Beir from '../src/eval/Beir.js';
import * as Evaluate from '../src/eval/Evaluate.js';
import * as Fit from '../src/eval/Fit.js';
import type { Evidence } from '../src/retrieval/Evidence.js';
import * as Retriever from '../src/retrieval/Retriever.js';
import { scoreFloor } from '../src/retrieval/Retriever.js';

const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
const { values } = parseArgs({ options: { dataset: { type: 'string' }, qrels: { type: 'string' }, evidence: { type: 'string' } } });
const directory = values.dataset ?? path.join(shared, 'datasets', 'scifact');
const dataset = await Beir.load(directory, values.qrels ?? path.join(directory, 'qrels', 'train.tsv'));
const evidence = await Answers.loadEvidence(values.evidence ?? path.join(directory, 'evidence', 'train.jsonl'));
const sentences = await Answers.loadSentences(path.join(directory, 'corpus.sentences.jsonl'));
const store = await Evaluate.buildStore(dataset);
const claims = [...evidence.keys()].filter((q) => dataset.queries.has(q) && dataset.qrels.has(q));

const docOf = store.docOf;
type Run = { qid: string; ranked: Evidence[]; question: Retriever.Retrieval['question']; relevant: Set<string> };
const runs: Run[] = [];
for (const qid of claims) {
  const run = await Retriever.retrieve(store.services.store, await store.services.lexicalIndex(), { question: dataset.queries.get(qid)!, channels: store.channels, mode: undefined, termModel: await store.services.termModel() });
  runs.push({ qid, ranked: run.ranked.slice(0, 30), question: run.question, relevant: new Set(dataset.qrels.get(qid)!.keys()) });
}
await store.close();
const relevantChunk = (run: Run, e: Evidence) => run.relevant.has(docOf.get(e.itemId)!);

// The sentence model: every sentence of the best chunks, labelled by the eval's overlap test.
const rationaleOf = (qid: string, doc: string) => (evidence.get(qid)!.get(doc) ?? []).map((i) => sentences.get(doc)?.[i]).filter((s): s is string => s !== undefined);
const sentenceRows: { x: number[]; y: number }[] = [];
for (const run of runs) {
  const s = Rationale.scorer(run.question, run.ranked);
  for (const e of run.ranked.slice(0, 4)) {
    const gold = relevantChunk(run, e) ? rationaleOf(run.qid, docOf.get(e.itemId)!) : [];
    for (const x of s.sentences(e)) sentenceRows.push({ x: x.features, y: gold.some((r) => Answers.overlap(x.sentence, r) >= 0.6) ? 1 : 0 });
  }
}
const logisticOf = (features: string[], rows: { x: number[]; y: number }[]): Rationale.Logistic => ({ features, ...Fit.logistic(rows) });
const sentence = logisticOf(Rationale.sentenceFeatures, sentenceRows);

// The answerability model: each claim's retrieval (answerable when its best item is relevant) and the same
// retrieval with the relevant documents removed. Only retrievals over the score floor ever reach it.
const withSentences: Rationale.Model = { sentence, answerability: Rationale.defaultModel.answerability, threshold: 0, fit: {} };
type Case = { fold: number; x: number[]; y: number; answerable: boolean };
const cases: Case[] = [];
runs.forEach((run, i) => {
  const removed = run.ranked.filter((e) => !relevantChunk(run, e));
  for (const [ranked, answerable] of [[run.ranked, true], [removed, false]] as const) {
    if ((ranked[0]?.score ?? 0) < scoreFloor) continue;
    const x = Rationale.answerabilityInput({ ranked, question: run.question }, Rationale.scorer(run.question, ranked, withSentences));
    const leading = [...new Set(ranked.map((e) => e.itemId))].slice(0, 2);
    cases.push({ fold: i % 2, x, y: answerable && ranked.some((e) => leading.includes(e.itemId) && relevantChunk(run, e)) ? 1 : 0, answerable });
  }
});
const held = cases.map((c) => {
  const model = logisticOf(Rationale.answerabilityFeatures, cases.filter((o) => o.fold !== c.fold));
  return { ...c, p: Rationale.probability(model, c.x) };
});
const hits = held.filter((c) => c.y === 1);
const removedCases = held.filter((c) => !c.answerable);
const curve = [0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3].map((t) => ({
  threshold: t,
  keptAnswerable: Number((hits.filter((c) => c.p >= t).length / (hits.length || 1)).toFixed(3)),
  abstainedRemoved: Number((removedCases.filter((c) => c.p < t).length / (removedCases.length || 1)).toFixed(3)),
}));
const threshold = Math.max(0, ...curve.filter((c) => c.keptAnswerable >= 0.995).map((c) => c.threshold));
const model: Rationale.Model = {
  sentence,
  answerability: logisticOf(Rationale.answerabilityFeatures, cases),
  threshold,
  fit: {
    dataset: path.basename(directory),
    claims: runs.length,
    sentences: sentenceRows.length,
    rationaleSentences: sentenceRows.filter((r) => r.y === 1).length,
    answerabilityCases: cases.length,
    crossValidated: curve,
  },
};
fs.writeFileSync(path.join(projectRoot, 'src', 'answer', 'rationale.json'), `${JSON.stringify(model, null, 2)}\n`);
const show = (m: Rationale.Logistic) => m.features.map((n, i) => `${n}=${m.weights[i]!.toFixed(2)}`).join(' ');
console.log(`sentence model: ${show(model.sentence)}\nanswerability model: ${show(model.answerability)}\nthreshold ${threshold}`);
for (const c of curve) console.log(`threshold ${c.threshold}: keeps ${c.keptAnswerable} of answerable, abstains on ${c.abstainedRemoved} with evidence removed (2-fold CV)`);
