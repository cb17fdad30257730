/**
 * Paid-query throughput of 1, 2 and 3 `profile-edge serve` processes on one PostgreSQL store (the query benchmark's
 * synthetic store of SciFact sentences, built by bench/query-run.ts and kept), behind a round-robin client: answered
 * queries per second, p50 and p95, each instance's resident memory, and the longest any instance's lease went
 * unrenewed under the load (against INSTANCE_LEASE_SECONDS), side by side.
 *
 *   npm run bench:instances -- [--size 100000] [--instances 1,2,3] [--seconds 20] [--concurrency 16] [--rounds 1]
 *
 * Each query is a raw-mode global question paid from an API key's credits (a charge, an answer, a capture: the
 * ledger's full round), over HTTP. The client runs on the same machine and takes its share of the cores, as the
 * PostgreSQL server does: on a 2-core machine a second instance can only use what the first left idle.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import * as Keys from '../src/auth/Keys.js';
import * as Config from '../src/config/Config.js';
import { projectRoot } from '../src/config/Config.js';
import * as Beir from '../src/eval/Beir.js';
import * as Services from '../src/Services.js';
import * as Stores from '../src/store/Store.js';

const { values } = parseArgs({
  options: {
    size: { type: 'string' },
    instances: { type: 'string' },
    seconds: { type: 'string' },
    concurrency: { type: 'string' },
    rounds: { type: 'string' },
  },
});
const size = Number(values.size ?? 100_000);
const counts = (values.instances ?? '1,2,3').split(',').map(Number);
const seconds = Number(values.seconds ?? 20);
const concurrency = Number(values.concurrency ?? 16);
const rounds = Number(values.rounds ?? 1);
for (const [name, value] of Object.entries({ size, seconds, concurrency, rounds, ...Object.fromEntries(counts.map((c, i) => [`instances[${i}]`, c])) })) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} is a whole number of at least 1, not ${value}`);
}

const server = process.env.PROFILE_EDGE_BENCH_POSTGRES ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const databaseUrl = Object.assign(new URL(server), { pathname: `/profile_edge_bench_${size}` }).href;
const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
const scifact = path.join(shared, 'datasets', 'scifact');
const log = (line: string) => process.stderr.write(`${line}\n`);

// The store: built once by the query benchmark's runner (minutes), then reused.
log(`store of ${size} chunks in PostgreSQL (built by bench/query-run.ts unless it is there)`);
const tsx = path.join(projectRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const building = promisify(execFile)(process.execPath, [tsx, path.join(projectRoot, 'bench', 'query-run.ts'), '--size', String(size), '--engine', 'postgres', '--dir', os.tmpdir(), '--build-only'], {
  maxBuffer: 1 << 24,
});
building.child.stderr?.pipe(process.stderr);
await building;

// A buyer whose credits outlast the runs, and the questions it asks.
const env = { ENVIRONMENT: 'test', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', SYNC_SCHEDULE: 'false', DEMO_DATA: 'false', QUOTE_RATE_LIMIT_PER_MINUTE: '1000000' };
const setup = await Services.create(Config.load(env));
const buyer = await setup.store.accounts.create({ name: `bench-instances-${Date.now().toString(36)}` });
await setup.store.ledger.move({ accountId: buyer.id, kind: 'grant', creditsDelta: 1_000_000_000, memo: 'bench:instances' });
const apiKey = (await Keys.issue(setup.store, { kind: 'api_key', accountId: buyer.id })).token;
await setup.close();
const dataset = await Beir.load(scifact, path.join(scifact, 'qrels', 'train.tsv'));
const questions = [...dataset.qrels.keys()].map((id) => dataset.queries.get(id)!);

type Instance = { url: string; child: ChildProcess };

/** Starts `serve` on the store; resolves once it is ready (its index loaded). */
async function start(): Promise<Instance> {
  const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'profile-edge.mjs'), 'serve'], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening on (http:\/\/\S+)/.exec(d.toString());
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`serve exited (${code})`)));
  });
  for (;;) {
    if ((await fetch(`${url}/ready`).catch(() => undefined))?.status === 200) return { url, child };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A process's resident memory in MiB, from /proc (Linux). */
function residentMiB(pid: number): number | undefined {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return status ? Math.round(Number(status[1]) / 1024) : undefined;
}

/** CPU seconds a process has used (user and system), from /proc (Linux). */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds used so far by every PostgreSQL server process on this machine. */
function postgresCpuSeconds(): number {
  let total = 0;
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuSeconds(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

/** The longest any instance's lease went unrenewed (ms) while `work` ran, sampled every 250 ms. */
async function leaseSilence(work: Promise<unknown>): Promise<number> {
  const { store } = await Stores.open({ url: databaseUrl });
  let worst = 0;
  let running = true;
  void work.finally(() => (running = false));
  try {
    while (running) {
      const now = Date.now();
      for (const instance of await store.instances.list()) worst = Math.max(worst, now - instance.seenAt);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await store.close();
  }
  return worst;
}

/** `concurrency` callers asking in turn across the instances for `ms`; the latency of each answered query. */
async function load(instances: Instance[], ms: number): Promise<{ latencies: number[]; failed: number }> {
  const latencies: number[] = [];
  let failed = 0;
  let turn = 0;
  const until = Date.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < until) {
        const i = turn++;
        const started = performance.now();
        const response = await fetch(`${instances[i % instances.length]!.url}/api/ask/query`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'service-api-key': apiKey },
          body: JSON.stringify({ question: questions[i % questions.length], mode: 'raw', paymentMode: 'credits' }),
        });
        await response.arrayBuffer();
        if (response.status === 200) latencies.push(performance.now() - started);
        else failed += 1;
      }
    }),
  );
  return { latencies, failed };
}

const rows: Record<string, Record<string, number | string>> = {};
const throughput = new Map<number, number[]>();
for (let round = 1; round <= rounds; round++) {
  for (const count of round % 2 === 1 ? counts : [...counts].reverse()) {
    log(`${count} instance${count > 1 ? 's' : ''}${rounds > 1 ? `, round ${round}` : ''}: starting`);
    const instances: Instance[] = [];
    for (let i = 0; i < count; i++) instances.push(await start());
    try {
      // Warm: each instance's first questions read the term model and fill its caches.
      await load(instances, 3_000);
      const before = { instances: instances.map((i) => cpuSeconds(i.child.pid!)), postgres: postgresCpuSeconds(), client: process.cpuUsage() };
      const loading = load(instances, seconds * 1000);
      const silence = await leaseSilence(loading);
      const { latencies, failed } = await loading;
      // Where the cores went while it ran: cores busy on average, per party.
      const busy = (used: number) => Number((used / seconds).toFixed(2));
      const cores = {
        instances: busy(instances.reduce((sum, i, k) => sum + cpuSeconds(i.child.pid!) - before.instances[k]!, 0)),
        postgres: busy(postgresCpuSeconds() - before.postgres),
        client: busy(((u) => (u.user + u.system) / 1e6)(process.cpuUsage(before.client))),
      };
      const perSecond = latencies.length / seconds;
      throughput.set(count, [...(throughput.get(count) ?? []), perSecond]);
      const memory = instances.map((i) => residentMiB(i.child.pid!) ?? 0);
      rows[`${count} instance${count > 1 ? 's' : ''}${rounds > 1 ? ` #${round}` : ''}`] = {
        'answered/s': Number(perSecond.toFixed(1)),
        'p50 ms': Number(Beir.percentile(latencies, 50).toFixed(1)),
        'p95 ms': Number(Beir.percentile(latencies, 95).toFixed(1)),
        failed,
        'RSS MiB each': memory.join(', '),
        'lease silence max ms': silence,
        'cores: instances': cores.instances,
        'cores: PostgreSQL': cores.postgres,
        'cores: client': cores.client,
      };
      console.log(JSON.stringify({ instances: count, round, answeredPerSecond: perSecond, latencies: latencies.length, failed, memory, cores, leaseSilenceMs: silence }));
    } finally {
      for (const { child } of instances) child.kill('SIGTERM');
      await Promise.all(instances.map(({ child }) => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)))));
    }
  }
}
console.table(rows);
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
};
const one = throughput.get(1);
if (one) {
  for (const count of counts.filter((c) => c > 1)) {
    const ratio = median(throughput.get(count)!) / median(one);
    const each = throughput.get(count)!.map((t, i) => (t / one[i]!).toFixed(2)).join(', ');
    console.log(`${count} instances answer ${ratio.toFixed(2)}x what one does${rounds > 1 ? ` (median; rounds ${each})` : ''} (${os.cpus().length} cores, client and PostgreSQL on the same machine)`);
  }
}
