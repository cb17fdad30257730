/**
 * What watching the service costs: the same requests over HTTP with the request log line (pino, JSON) and metrics
 * served, against a server that logs nothing; and how long a scrape of `/metrics` takes afterwards.
 *
 *   npm run bench:operations -- [--requests 2000]
 *
 * Alternates the two servers request by request, so drift falls on both alike. Prints p50/p95 in milliseconds of a
 * free request (a profile's channels) and of a paid API-key query, on each, and the scrape's size and time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as Keys from '../src/auth/Keys.js';
import * as Config from '../src/config/Config.js';
import * as Demo from '../src/demo/Demo.js';
import * as Log from '../src/log/Logger.js';
import * as Services from '../src/Services.js';
import * as HttpServer from '../src/transport/http/Server.js';

const { values } = parseArgs({ options: { requests: { type: 'string' } } });
const requests = Number(values.requests ?? 2_000);
const token = 'bench-metrics-token-0123456789';

const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-bench-operations-'));
const file = path.join(directory, 'bench.db');
const base = { ENVIRONMENT: 'test', DATABASE_PATH: file, DEMO_DATA: 'false' };
const loader = await Services.create(Config.load({ ...base, LOG_LEVEL: 'silent' }));
await Demo.load(loader, { chunkTargetTokens: 320 });
const account = await loader.store.accounts.create({ name: 'bench' });
await loader.store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 10_000_000 });
const key = (await Keys.issue(loader.store, { kind: 'api_key', accountId: account.id })).token;
await loader.close();

let logged = 0;
const quiet = await Services.create(Config.load({ ...base, LOG_LEVEL: 'silent' }));
const watched = await Services.create(Config.load({ ...base, LOG_LEVEL: 'info', METRICS_TOKEN: token }), {
  // Serialized by pino as in production, then dropped: the cost measured is the service's, not the terminal's.
  logger: Log.create({ level: 'info', write: () => void (logged += 1) }),
});
const servers = { quiet: await HttpServer.listen(quiet, { host: '127.0.0.1', port: 0 }), watched: await HttpServer.listen(watched, { host: '127.0.0.1', port: 0 }) };

const kinds = {
  free: (url: string) => fetch(`${url}/api/profiles/owen-halvorsen/channels`),
  query: (url: string) =>
    fetch(`${url}/api/ask/query`, { method: 'POST', headers: { 'service-api-key': key }, body: JSON.stringify({ question: 'How warm should a sourdough starter be?', paymentMode: 'credits', mode: 'raw' }) }),
};
const times: Record<string, number[]> = {};
for (const [kind, send] of Object.entries(kinds)) {
  // Warm both (index loads, statements prepared) before measuring.
  for (let i = 0; i < 50; i++) for (const s of Object.values(servers)) await (await send(s.url)).arrayBuffer();
  for (let i = 0; i < requests; i++) {
    for (const [name, s] of Object.entries(servers)) {
      const started = performance.now();
      const res = await send(s.url);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${kind} on ${name}: ${res.status}`);
      (times[`${kind} ${name}`] ??= []).push(performance.now() - started);
    }
  }
}

const quantile = (list: number[], q: number) => [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(q * list.length))]!;
console.log(`${requests} requests of each kind on each server (log lines written by the watched one: ${logged})`);
for (const [name, list] of Object.entries(times)) console.log(`  ${name.padEnd(14)} p50 ${quantile(list, 0.5).toFixed(3)} ms  p95 ${quantile(list, 0.95).toFixed(3)} ms`);
for (const kind of Object.keys(kinds)) {
  const added = quantile(times[`${kind} watched`]!, 0.5) - quantile(times[`${kind} quiet`]!, 0.5);
  console.log(`  ${kind}: logging and metrics add ${(added * 1000).toFixed(0)} µs at p50`);
}
const scrapes: number[] = [];
let size = 0;
for (let i = 0; i < 50; i++) {
  const started = performance.now();
  const body = await (await fetch(`${servers.watched.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  scrapes.push(performance.now() - started);
  size = body.length;
}
console.log(`  /metrics scrape: ${(size / 1024).toFixed(1)} KiB, p50 ${quantile(scrapes, 0.5).toFixed(2)} ms`);

for (const s of Object.values(servers)) await HttpServer.close(s.server);
await quiet.close();
await watched.close();
fs.rmSync(directory, { recursive: true, force: true });
