/**
 * Start-up: how long each way of starting profile-edge takes from spawn, the minimum and median of `--runs` runs of
 * each (7 unless said), beside two references measured in the same run: `node -e 0`, and a minimal stdio MCP server
 * written with the SDK (bench/reference-stdio.mjs).
 *
 *   npm run bench:start -- [--runs 7] [--sync-runs N] [--project DIR] [--ci]
 *
 * Rows: `--help`; a CLI write (`profiles create`, `keys create`) on an existing store; stdio MCP from spawn to its
 * `initialize` answer on the demo store; `serve` from spawn to a healthy `/health` on the demo store (SQLite, and
 * PostgreSQL when one answers at PROFILE_EDGE_BENCH_POSTGRES or 127.0.0.1:5432); `serve` on a new store, demo loaded;
 * 40 real-world feeds and files (../shared/fixtures, or SHARED_DIR; generated ones without it) synced or uploaded with
 * one CLI command each, 2 at a time, on a copy of the demo store. `--ci` adds `.ci/run` on a fresh clone, once.
 * `--project DIR` measures another checkout of profile-edge (an older commit, for a before-and-after).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { projectRoot } from '../src/config/Config.js';
import * as Stores from '../src/store/Store.js';

const { values } = parseArgs({ options: { runs: { type: 'string' }, 'sync-runs': { type: 'string' }, project: { type: 'string' }, ci: { type: 'boolean' } } });
const runs = Number(values.runs ?? 7);
const syncRuns = Number(values['sync-runs'] ?? runs);
const project = path.resolve(values.project ?? projectRoot);
const bin = path.join(project, 'bin', 'profile-edge.mjs');
const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pe-bench-start-'));
const log = (line: string) => process.stderr.write(`${line}\n`);
const baseEnv = { PATH: process.env.PATH ?? '', HOME: os.homedir(), LOG_LEVEL: 'warn', ENVIRONMENT: 'development', SYNC_SCHEDULE: 'false' };
const children = new Set<ChildProcess>();
/** The feeds' host, for the syncs. */
let host: http.Server | undefined;
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

type Row = { row: string; target: string; seconds: number[] };
const rows: Row[] = [];
const seconds = (started: number) => (performance.now() - started) / 1000;

/** Spawns `argv` under node and resolves with the seconds until it exits (a failure is thrown with what it said). */
async function exits(argv: string[], env: Record<string, string> = {}): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, argv, { env: { ...baseEnv, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${argv.slice(1).join(' ')} exited ${code}: ${err.slice(0, 500)}`);
  return seconds(started);
}

/** Spawns a stdio MCP server and resolves with the seconds until it answers `initialize`. */
async function initialized(argv: string[], env: Record<string, string> = {}): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, argv, { env: { ...baseEnv, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } })}\n`);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (/"id":1\b/.test(out)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${argv.join(' ')} exited ${code} before initialize: ${err.slice(0, 500)}`)));
  });
  const took = seconds(started);
  child.stdin!.end();
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  children.delete(child);
  return took;
}

/** Spawns `serve` and resolves with the seconds until `/health` answers 200; then stops it. */
async function healthy(env: Record<string, string>): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, 'serve'], { env: { ...baseEnv, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err.slice(0, 500)}`)));
  });
  for (;;) {
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const took = seconds(started);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  children.delete(child);
  return took;
}

async function measure(row: string, target: string, times: number, once: (run: number) => Promise<number>): Promise<void> {
  const taken: number[] = [];
  for (let run = 0; run < times; run++) taken.push(await once(run));
  rows.push({ row, target, seconds: taken });
  log(`${row}: ${taken.map((s) => s.toFixed(2)).join(' ')} s`);
}

// The demo store, made by a first `serve` (that first start is the row "on a new store").
const demo = path.join(work, 'demo.db');
const sqlite = (file: string) => ({ DATABASE_PATH: file });

await measure('node -e 0', 'reference', runs, () => exits(['-e', '0']));
await measure('minimal stdio MCP server (the SDK), to initialize', 'reference', runs, () => initialized([path.join(projectRoot, 'bench', 'reference-stdio.mjs')]));
await measure('profile-edge --help', '≤ 0.3 s', runs, () => exits([bin, '--help']));
await measure('serve on a new store, demo loaded, to /health', '≤ 6 s', runs, async (run) => {
  const file = run === 0 ? demo : path.join(work, `new-${run}.db`);
  const took = await healthy(sqlite(file));
  if (run > 0) for (const f of fs.readdirSync(work).filter((f) => f.startsWith(`new-${run}.db`))) fs.rmSync(path.join(work, f));
  return took;
});
await measure('profiles create (existing store)', '≤ 0.6 s', runs, (run) => exits([bin, 'profiles', 'create', `bench-${run}`, '--name', `Bench ${run}`], sqlite(demo)));
await measure('keys create (existing store)', '≤ 0.6 s', runs, (run) => exits([bin, 'keys', 'create', '--account', `bench-${run}`, '--create', '--credits', '10'], sqlite(demo)));
await measure('stdio MCP to initialize (demo store)', '≤ 0.8 s, ≤ 3× the SDK', runs, () => initialized([bin, 'mcp'], sqlite(demo)));
await measure('serve to /health (demo store, SQLite)', '≤ 1.5 s', runs, () => healthy(sqlite(demo)));

// PostgreSQL, when one answers: a database of its own, loaded by a first start, dropped after.
const postgres = process.env.PROFILE_EDGE_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const pg = await import('pg').then((m) => m.default);
const admin = new pg.Client({ connectionString: postgres, connectionTimeoutMillis: 2000 });
if (await admin.connect().then(() => true, () => false)) {
  const name = `profile_edge_bench_start_${process.pid}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = Object.assign(new URL(postgres), { pathname: `/${name}` }).href;
  try {
    await healthy({ DATABASE_URL: url });
    await measure('serve to /health (demo store, PostgreSQL)', '≤ 2.5 s', runs, () => healthy({ DATABASE_URL: url }));
  } finally {
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  }
} else log('PostgreSQL did not answer: its row is left out');

// 40 feeds and files, each synced or uploaded by a command of its own, 2 at a time, on a copy of the demo store.
const sources = await feedsAndFiles();
const template = path.join(work, 'syncs.db');
fs.copyFileSync(demo, template);
const store = (await Stores.open({ path: template })).store;
const profile = await store.profiles.create({ slug: 'feeds', name: 'Feeds', description: '', visibility: 'public', directory: false, ownerAccountId: null });
const commands: string[][] = [];
for (const [i, source] of sources.entries()) {
  const id = `ch_bench${String(i).padStart(3, '0')}`;
  await store.channels.create({ id, profileId: profile.id, kind: source.kind, label: source.name, accessLevel: 'public', ratePerMillionTokens: 0, sourceUrl: source.url });
  commands.push(source.kind === 'user_upload' ? ['upload', '--channel', id, source.file!] : ['sync', '--channel', id]);
}
await store.close();
await measure(`${commands.length} feeds and files synced or uploaded, 2 at a time`, '≤ 2 min', syncRuns, async (run) => {
  const file = path.join(work, `syncs-${run}.db`);
  fs.copyFileSync(template, file);
  const env = { ...sqlite(file), FETCH_ALLOW_PRIVATE: 'true' };
  const started = performance.now();
  let next = 0;
  await Promise.all(
    [0, 1].map(async () => {
      while (next < commands.length) {
        const argv = commands[next++]!;
        // A source that fails is the command's outcome (exit 1), timed all the same.
        await exits([bin, ...argv], env).catch(() => undefined);
      }
    }),
  );
  return seconds(started);
});

if (values.ci) {
  const clone = path.join(work, 'clone');
  await promisify(execFile)('git', ['clone', '-q', project, clone]);
  await measure('.ci/run on a fresh clone', '≤ 10 min', 1, () => exits(['-e', `require('node:child_process').execFileSync('${path.join(clone, '.ci', 'run')}', { stdio: 'inherit' })`], { ...process.env } as Record<string, string>));
}

host?.close();
fs.rmSync(work, { recursive: true, force: true });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const width = Math.max(...rows.map((r) => r.row.length));
console.log(`\nstart-up of ${project === projectRoot ? 'this checkout' : project} on ${os.cpus().length} cores, ${runs} runs (seconds)`);
console.log(`${'row'.padEnd(width)}  ${'min'.padStart(7)}  ${'median'.padStart(7)}  target`);
for (const r of rows) console.log(`${r.row.padEnd(width)}  ${Math.min(...r.seconds).toFixed(2).padStart(7)}  ${median(r.seconds).toFixed(2).padStart(7)}  ${r.target}`);
const sdk = rows.find((r) => r.row.startsWith('minimal stdio'));
const ours = rows.find((r) => r.row.startsWith('stdio MCP'));
if (sdk && ours) console.log(`stdio MCP against the SDK reference: ${(median(ours.seconds) / median(sdk.seconds)).toFixed(1)}× (median)`);

// ---

type Source = { name: string; kind: 'rss' | 'podcast_rss' | 'user_upload'; url?: string; file?: string };

/**
 * 20 feeds served from 127.0.0.1 and 20 files, from the shared real-world fixtures when they are there: every absolute
 * URL in a feed points back at the local host (which answers 404 for what it does not serve), so a sync reaches
 * nothing beyond loopback. Without the fixtures, generated feeds and Markdown files stand in.
 */
async function feedsAndFiles(): Promise<Source[]> {
  const fixtures = path.join(shared, 'fixtures');
  const pick = (folder: string, pattern: RegExp) =>
    fs.existsSync(path.join(fixtures, folder)) ? fs.readdirSync(path.join(fixtures, folder)).filter((f) => pattern.test(f)).sort().map((f) => path.join(fixtures, folder, f)) : [];
  const feeds = [...pick('rss', /\.(xml|rss)$/), ...pick('atom', /\.(xml|atom)$/), ...pick('podcast', /\.xml$/)].slice(0, 20);
  const files = [...pick('html', /\.html$/), ...pick('pdf', /\.pdf$/), ...pick(path.join('transcripts', 'vtt'), /\.vtt$/), ...pick(path.join('transcripts', 'srt'), /\.srt$/)].slice(0, 20);
  const served = new Map<string, string>();
  const server = http.createServer((req, res) => {
    const body = served.get(req.url ?? '');
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': body === undefined ? 'text/plain' : 'application/xml' }).end(body ?? 'not here');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  host = server;
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const sources: Source[] = [];
  if (feeds.length === 0) {
    log(`no fixtures at ${fixtures} (SHARED_DIR): generated feeds and files stand in`);
    for (let f = 0; f < 20; f++) {
      const items = Array.from({ length: 10 }, (_, i) => `<item><title>Post ${f}.${i}</title><guid>p${f}-${i}</guid><description>${'Notes on sleep, light and the body clock, at length. '.repeat(20)}</description></item>`).join('');
      served.set(`/feed-${f}.xml`, `<?xml version="1.0"?><rss version="2.0"><channel><title>Feed ${f}</title>${items}</channel></rss>`);
      sources.push({ name: `feed-${f}`, kind: 'rss', url: `${origin}/feed-${f}.xml` });
      const file = path.join(work, `note-${f}.md`);
      fs.writeFileSync(file, `# Note ${f}\n\n${'Morning light shifts the body clock earlier, and evening light later. '.repeat(40)}\n`);
      sources.push({ name: `note-${f}`, kind: 'user_upload', file });
    }
    return sources;
  }
  for (const feed of feeds) {
    const name = path.basename(feed);
    served.set(`/${name}`, fs.readFileSync(feed, 'latin1').replace(/https?:\/\/[^/"'<>\s]+/g, `${origin}/elsewhere`));
    sources.push({ name, kind: feed.includes(`${path.sep}podcast${path.sep}`) ? 'podcast_rss' : 'rss', url: `${origin}/${name}` });
  }
  for (const file of files) sources.push({ name: path.basename(file), kind: 'user_upload', file });
  return sources;
}
