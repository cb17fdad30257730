/**
 * Vector search benchmark: recall@limit against exact float KNN, and time per query, of the quantized scan with
 * full-precision re-scoring (`VectorCodes.nearest`) on synthetic stores of unit vectors; beside it, for the choice of
 * quantization, sqlite-vec's exact float scan and an int8 scan re-scored the same way.
 *
 *   npx tsx bench/vectors.ts [--sizes 100000,1000000] [--dimensions 384] [--queries 20] [--limit 50]
 *                            [--oversample 4,8,16,32] [--data random,clustered] [--no-compare]
 *
 * `random`: independent uniform unit vectors, the worst case for sign quantization (no structure to keep).
 * `clustered`: vectors around 1,000 centres, and queries drawn the same way, closer to what text embeddings look like.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as VectorCodes from '../src/retrieval/vectors/VectorCodes.js';
import * as SqliteFile from '../test/support/SqliteFile.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string' },
    dimensions: { type: 'string' },
    queries: { type: 'string' },
    limit: { type: 'string' },
    oversample: { type: 'string' },
    data: { type: 'string' },
    'no-compare': { type: 'boolean' },
  },
});
const sizes = (values.sizes ?? '100000').split(',').map(Number);
const dimensions = Number(values.dimensions ?? 384);
const queryCount = Number(values.queries ?? 20);
const limit = Number(values.limit ?? 50);
const oversamples = (values.oversample ?? '4,8,16,32').split(',').map(Number);
const kinds = (values.data ?? 'random,clustered').split(',') as ('random' | 'clustered')[];
/** Channels in the store; the scoped runs search one of them. */
const channelCount = 10;

let seed = 42;
const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
const gaussian = () => Math.sqrt(-2 * Math.log(random())) * Math.cos(2 * Math.PI * random());
const unit = (v: Float32Array) => {
  const norm = Math.hypot(...v);
  for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
};
const randomUnit = () => unit(Float32Array.from({ length: dimensions }, gaussian));

/** A source of vectors for documents and queries alike. */
function source(kind: 'random' | 'clustered'): () => Float32Array {
  if (kind === 'random') return randomUnit;
  const centres = Array.from({ length: 1000 }, randomUnit);
  return () => {
    const centre = centres[Math.floor(random() * centres.length)]!;
    const noise = randomUnit();
    return unit(Float32Array.from(centre, (x, i) => x + noise[i]!));
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * What an instance starting on the store waits for its codes: read from the stored vectors (no snapshot yet), the
 * snapshot written from the codes `store` holds, then read from it; each read on a connection of its own, as a new
 * process's.
 */
async function startUp(file: string, store: ReturnType<typeof SqliteFile.open>['store']): Promise<void> {
  const read = async () => {
    const other = SqliteFile.open(file);
    try {
      const started = performance.now();
      const warmed = (await VectorCodes.warm(other.store))!;
      return { ms: performance.now() - started, ...warmed };
    } finally {
      await other.store.close();
    }
  };
  const rows = await read();
  await VectorCodes.warm(store);
  let started = performance.now();
  const written = await VectorCodes.subject(store).write();
  const writeMs = performance.now() - started;
  started = performance.now();
  const snapshot = await read();
  if (snapshot.origin.source !== 'snapshot' || snapshot.held !== rows.held) throw new Error(`the snapshot was not read whole: ${JSON.stringify(snapshot)}`);
  const ms = (n: number) => `${Math.round(n)} ms`;
  console.log(`  codes read from the stored vectors: ${ms(rows.ms)}; snapshot written in ${ms(writeMs)} (${(written.bytes / rows.held).toFixed(0)} bytes a chunk); codes read from it: ${ms(snapshot.ms)}`);
}
const perQuery = (ms: number) => `${(ms / queryCount).toFixed(1)} ms/query`;

/** The exact top `limit` by cosine (dot product of unit vectors) among the documents whose index `admit` accepts. */
function exact(docs: Float32Array, query: Float32Array, admit: (i: number) => boolean): Set<number> {
  const n = docs.length / dimensions;
  const scores: [number, number][] = [];
  for (let i = 0; i < n; i++) {
    if (!admit(i)) continue;
    let s = 0;
    for (let d = 0, o = i * dimensions; d < dimensions; d++) s += docs[o + d]! * query[d]!;
    scores.push([s, i]);
  }
  return new Set(scores.sort((a, b) => b[0] - a[0]).slice(0, limit).map(([, i]) => i));
}

for (const size of sizes) {
  for (const kind of kinds) {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-vectors-bench-'));
    // SQLite's own connection beside the Store over it: the comparisons are sqlite-vec tables of their own.
    const { db, store } = SqliteFile.open(path.join(directory, 'bench.db'));
    try {
      const next = source(kind);
      const profile = await store.profiles.create({ slug: 'bench', name: 'Bench', visibility: 'public' });
      const channelIds = Array.from({ length: channelCount }, (_, c) => `ch_bench_${c}`);
      for (const id of channelIds) await store.channels.create({ id, profileId: profile.id, kind: 'user_upload', label: id, accessLevel: 'public', ratePerMillionTokens: 1 });
      await store.vectors.create({ embedderId: 'bench', dimensions });
      const docs = new Float32Array(size * dimensions);
      let started = performance.now();
      // Items of 1,000 chunks through the real write path: vectors go in with their chunks, one transaction an item.
      for (let first = 0; first < size; first += 1000) {
        const count = Math.min(1000, size - first);
        const vectors = Array.from({ length: count }, (_, j) => {
          const v = next();
          docs.set(v, (first + j) * dimensions);
          return v;
        });
        await store.items.put(SearchTerms.indexed({
          channelId: channelIds[(first / 1000) % channelCount]!,
          externalId: `item-${first}`,
          title: 'bench',
          contentHash: `h${first}`,
          chunks: vectors.map((_, j) => ({ text: `chunk ${first + j}`, tokenCount: 2 })),
          vectors,
        }));
      }
      console.log(`\n${kind} unit vectors, ${size} × ${dimensions}: index built in ${seconds(performance.now() - started)}`);
      await startUp(path.join(directory, 'bench.db'), store);
      const rowids = db.prepare('SELECT rowid FROM chunks ORDER BY rowid').pluck().all() as number[];
      const indexOf = new Map(rowids.map((r, i) => [r, i]));
      const channelOf = (i: number) => Math.floor(i / 1000) % channelCount;
      const queries = Array.from({ length: queryCount }, next);
      started = performance.now();
      const truth = queries.map((q) => exact(docs, q, () => true));
      const truthScoped = queries.map((q) => exact(docs, q, (i) => channelOf(i) === 0));
      console.log(`  exact KNN in JavaScript (ground truth): ${perQuery(performance.now() - started)}`);

      const recall = (found: number[][], expected: Set<number>[]) =>
        (found.reduce((sum, hits, q) => sum + hits.filter((r) => expected[q]!.has(indexOf.get(r)!)).length, 0) / (queryCount * limit)).toFixed(3);
      const run = async (label: string, expected: Set<number>[], search: (q: Float32Array) => number[] | Promise<number[]>) => {
        await search(queries[0]!);
        const t = performance.now();
        const found: number[][] = [];
        for (const q of queries) found.push(await search(q));
        console.log(`  ${label.padEnd(44)} recall@${limit} ${recall(found, expected)}  ${perQuery(performance.now() - t)}`);
      };

      for (const oversample of oversamples) {
        await run(`signs + re-scoring, oversample ${oversample}`, truth, async (vector) =>
          (await VectorCodes.nearest(store, { vector, limit, channelIds, oversample })).map((h) => h.rowid));
      }
      for (const oversample of oversamples.slice(0, 2)) {
        await run(`  scoped to 1 of ${channelCount} channels, oversample ${oversample}`, truthScoped, async (vector) =>
          (await VectorCodes.nearest(store, { vector, limit, channelIds: [channelIds[0]!], oversample })).map((h) => h.rowid));
      }
      if (values['no-compare']) continue;

      // The alternatives, as tables of their own beside the index: sqlite-vec's exact float scan, and int8.
      started = performance.now();
      db.exec(`CREATE VIRTUAL TABLE bench_floats USING vec0(embedding float[${dimensions}] distance_metric=cosine)`);
      db.exec(`CREATE VIRTUAL TABLE bench_int8 USING vec0(q int8[${dimensions}] distance_metric=cosine, chunk_size=64)`);
      const int8 = (v: Float32Array) => {
        // Per-vector scale to the full int8 range: cosine ignores scale, so this keeps the most of each vector.
        const max = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
        return Buffer.from(Int8Array.from(v, (x) => Math.round((x / max) * 127)).buffer);
      };
      const blob = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
      db.transaction(() => {
        const floats = db.prepare('INSERT INTO bench_floats (rowid, embedding) VALUES (?, ?)');
        const bytes = db.prepare('INSERT INTO bench_int8 (rowid, q) VALUES (?, vec_int8(?))');
        rowids.forEach((rowid, i) => {
          const v = docs.subarray(i * dimensions, (i + 1) * dimensions);
          floats.run(BigInt(rowid), blob(v));
          bytes.run(BigInt(rowid), int8(v));
        });
      })();
      console.log(`  (comparison tables built in ${seconds(performance.now() - started)})`);
      const floatScan = db.prepare('SELECT rowid FROM bench_floats WHERE embedding MATCH ? AND k = ?').pluck();
      await run('sqlite-vec exact float scan', truth, (q) => floatScan.all(blob(q), limit) as number[]);
      const int8Scan = db.prepare('SELECT rowid FROM bench_int8 WHERE q MATCH vec_int8(?) AND k = ?').pluck();
      const rescore = db.prepare(
        `SELECT e.rowid FROM json_each(?) j JOIN chunk_embeddings e ON e.rowid = j.value
         ORDER BY vec_distance_cosine(e.embedding, ?) LIMIT ?`,
      ).pluck();
      for (const oversample of [1, 2, 4]) {
        await run(`int8 + re-scoring, oversample ${oversample}`, truth, (q) => rescore.all(JSON.stringify(int8Scan.all(int8(q), limit * oversample)), blob(q), limit) as number[]);
      }
    } finally {
      db.close();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  }
}
