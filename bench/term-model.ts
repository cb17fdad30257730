/**
 * Term model build time on an existing store, stage by stage (wall and CPU seconds from each progress stage to the
 * next: CPU time stays meaningful when other work shares the machine). Writes the model into the store given, so
 * point it at a copy.
 *
 *   npx tsx bench/term-model.ts --db /tmp/copy-of-bench-1000000.db [--max-chunks 50000] [--dimensions 200] [--vocabulary 16000]
 */
import { parseArgs } from 'node:util';
import * as TermModel from '../src/retrieval/terms/TermModel.js';
import * as Stores from '../src/store/Store.js';

const { values } = parseArgs({
  options: { db: { type: 'string' }, 'max-chunks': { type: 'string' }, dimensions: { type: 'string' }, vocabulary: { type: 'string' }, seed: { type: 'string' } },
});
if (!values.db) throw new Error('give --db FILE (a copy: the term model is written into it)');
const { store } = await Stores.open({ path: values.db });
const number = (v: string | undefined) => (v === undefined ? undefined : Number(v));
const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
const round = (x: number) => Number(x.toFixed(1));

const started = { wall: performance.now() / 1000, cpu: cpuSeconds() };
let last = { stage: '', ...started };
const stages: Record<string, { wall: number; cpu: number }> = {};
const mark = (stage: string) => {
  const now = { wall: performance.now() / 1000, cpu: cpuSeconds() };
  if (last.stage) stages[last.stage] = { wall: round(now.wall - last.wall), cpu: round(now.cpu - last.cpu) };
  last = { stage, ...now };
};
const info = await TermModel.build(store, {
  maxChunks: number(values['max-chunks']),
  dimensions: number(values.dimensions),
  vocabulary: number(values.vocabulary),
  seed: number(values.seed),
  onProgress: (stage) => {
    mark(stage);
    process.stderr.write(`  ${stage}\n`);
  },
});
mark('');
const chunks = await store.chunks.count();
await store.close();
const total = { wall: round(performance.now() / 1000 - started.wall), cpu: round(cpuSeconds() - started.cpu) };
console.log(JSON.stringify({ chunks, seconds: total.wall, cpuSeconds: total.cpu, stages, info }));
