/**
 * Query latency and index cost benchmark on synthetic stores of SciFact sentences (cached between runs), each size in
 * its own process (bench/query-run.ts): the first stage alone (pruned against exhaustive, with SQLite FTS5 as the
 * reference), raw-mode global queries through the tool handler and over HTTP, writes, memory and disk.
 *
 *   npm run bench:query -- [--sizes 100000,1000000,4000000] [--queries 200] [--reference N] [--dir DIR]
 *                          [--vector-sizes 100000]
 *
 * `--vector-sizes` lists the sizes also measured with vectors on (a near-free 384-dimension embedder on 127.0.0.1).
 * `--reference N` times FTS5 on the first N queries only (it takes seconds per query at 4M chunks).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { projectRoot } from '../src/config/Config.js';

const { values } = parseArgs({ options: { sizes: { type: 'string' }, queries: { type: 'string' }, dir: { type: 'string' }, reference: { type: 'string' }, 'vector-sizes': { type: 'string' } } });
const sizes = (values.sizes ?? '100000,1000000,4000000').split(',').map(Number);
/** Sizes also measured with vectors on (the index is built once per cached store: minutes at 100k). */
const vectorSizes = new Set((values['vector-sizes'] ?? '100000').split(',').map(Number));
const dir = values.dir ?? path.join(os.tmpdir(), 'profile-edge-bench');
fs.mkdirSync(dir, { recursive: true });

const report: Record<string, unknown>[] = [];
for (const size of sizes) {
  process.stderr.write(`store of ${size} chunks in ${dir}\n`);
  const args = [path.join(projectRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(projectRoot, 'bench', 'query-run.ts'), '--size', String(size), '--dir', dir];
  if (values.queries) args.push('--queries', values.queries);
  if (values.reference) args.push('--reference', values.reference);
  if (vectorSizes.has(size)) args.push('--vectors');
  const child = promisify(execFile)(process.execPath, args, { maxBuffer: 1 << 24 });
  child.child.stderr?.pipe(process.stderr);
  const { stdout } = await child;
  const row = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
  console.log(JSON.stringify(row));
  report.push(row);
}
// Side by side, one column per size.
const columns = Object.fromEntries(report.map((r) => [String(r.chunks), r]));
const keys = Object.keys(report[0] ?? {});
console.table(Object.fromEntries(keys.map((k) => [k, Object.fromEntries(Object.entries(columns).map(([size, r]) => [size, r[k]]))])));
