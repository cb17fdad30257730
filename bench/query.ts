/**
 * Query latency and index cost benchmark on synthetic stores of SciFact sentences (cached between runs), each size in
 * its own process (bench/query-run.ts): the first stage alone (pruned against exhaustive, with SQLite FTS5 as the
 * reference), raw-mode global queries through the tool handler and over HTTP, writes, memory and disk.
 *
 *   npm run bench:query -- [--sizes 100000,1000000,4000000] [--engine sqlite,postgres] [--rounds N] [--queries 200]
 *                          [--reference N] [--dir DIR] [--vector-sizes 100000]
 *
 * `--engine` lists the engines measured at each size, side by side (default sqlite): on PostgreSQL the store is a
 * database per size beside PROFILE_EDGE_BENCH_POSTGRES, or DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres,
 * kept between runs as the SQLite file is. `--rounds N` measures each size N times, the engines in turn in alternating
 * order (a machine that drifts favours neither), and prints PostgreSQL's handler p50 against SQLite's for each round
 * and their median: on a shared machine one pair of runs can differ by a third from the next.
 * `--vector-sizes` lists the sizes also measured with vectors on (a near-free 384-dimension embedder on 127.0.0.1).
 * `--reference N` times FTS5 on the first N queries only (it takes seconds per query at 4M chunks).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { projectRoot } from '../src/config/Config.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string' },
    engine: { type: 'string' },
    rounds: { type: 'string' },
    queries: { type: 'string' },
    dir: { type: 'string' },
    reference: { type: 'string' },
    'vector-sizes': { type: 'string' },
  },
});
const sizes = (values.sizes ?? '100000,1000000,4000000').split(',').map(Number);
const engines = (values.engine ?? 'sqlite').split(',');
const unknown = engines.filter((e) => e !== 'sqlite' && e !== 'postgres');
if (unknown.length > 0) throw new Error(`--engine lists sqlite and postgres, not ${unknown.join(', ')}`);
/** Sizes also measured with vectors on (the index is built once per cached store: minutes at 100k). */
const vectorSizes = new Set((values['vector-sizes'] ?? '100000').split(',').map(Number));
const dir = values.dir ?? path.join(os.tmpdir(), 'profile-edge-bench');
fs.mkdirSync(dir, { recursive: true });

const rounds = Number(values.rounds ?? 1);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds is a whole number of at least 1, not ${values.rounds}`);

const report: { engine: string; size: number; round: number; row: Record<string, unknown> }[] = [];
for (const size of sizes) {
  for (let round = 1; round <= rounds; round++) for (const engine of round % 2 === 1 ? engines : [...engines].reverse()) {
    process.stderr.write(engine === 'sqlite' ? `store of ${size} chunks in ${dir}\n` : `store of ${size} chunks in PostgreSQL\n`);
    const args = [path.join(projectRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(projectRoot, 'bench', 'query-run.ts'), '--size', String(size), '--engine', engine, '--dir', dir];
    if (values.queries) args.push('--queries', values.queries);
    if (values.reference) args.push('--reference', values.reference);
    if (vectorSizes.has(size)) args.push('--vectors');
    const child = promisify(execFile)(process.execPath, args, { maxBuffer: 1 << 24 });
    child.child.stderr?.pipe(process.stderr);
    const { stdout } = await child;
    const row = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
    console.log(JSON.stringify(row));
    report.push({ engine, size, round, row });
  }
}
// Side by side, one column per size (per engine and size when there are several engines; per round when several).
const columns = Object.fromEntries(
  report.map(({ engine, round, row }) => [`${engines.length > 1 ? `${engine} ` : ''}${row.chunks}${rounds > 1 ? ` #${round}` : ''}`, row]),
);
const keys = [...new Set(report.flatMap(({ row }) => Object.keys(row)))];
console.table(Object.fromEntries(keys.map((k) => [k, Object.fromEntries(Object.entries(columns).map(([column, r]) => [column, r[k]]))])));
// PostgreSQL's handler p50 against SQLite's, where both ran at a size: each round's, and their median.
const p50 = (engine: string, size: number, round: number) => report.find((r) => r.engine === engine && r.size === size && r.round === round)?.row.handlerP50ms as number | undefined;
for (const size of sizes) {
  const pairs = Array.from({ length: rounds }, (_, i) => ({ sqlite: p50('sqlite', size, i + 1), postgres: p50('postgres', size, i + 1) })).filter(
    (p): p is { sqlite: number; postgres: number } => p.sqlite !== undefined && p.postgres !== undefined,
  );
  if (pairs.length === 0) continue;
  const ratios = pairs.map((p) => p.postgres / p.sqlite);
  const sorted = [...ratios].sort((a, b) => a - b);
  const median = (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
  const each = pairs.map((p, i) => `${ratios[i]!.toFixed(2)} (${p.postgres} ms against ${p.sqlite} ms)`).join(', ');
  console.log(`PostgreSQL handler p50 as a ratio of SQLite's at ${size}: ${pairs.length > 1 ? `median ${median.toFixed(2)}; rounds ` : ''}${each}`);
}
