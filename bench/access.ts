/**
 * Does a refusal's timing tell a private profile from an unknown one? Both must be 404 after the same work. Measures,
 * alternating the two so drift falls on both alike, the profile check itself (in process) and a per-profile request
 * over HTTP, for a caller with no credentials, with an API key and with a bearer token of an unrelated account.
 *
 *   npm run bench:access -- [--rounds 20000]
 *
 * Prints the median of each, and the private minus unknown difference in microseconds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as Access from '../src/auth/Access.js';
import * as Caller from '../src/auth/Caller.js';
import * as Keys from '../src/auth/Keys.js';
import * as Config from '../src/config/Config.js';
import * as Demo from '../src/demo/Demo.js';
import * as Services from '../src/Services.js';
import * as HttpServer from '../src/transport/http/Server.js';

const { values } = parseArgs({ options: { rounds: { type: 'string' } } });
const rounds = Number(values.rounds ?? 20_000);

const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-bench-access-'));
const config = Config.load({ ENVIRONMENT: 'test', DATABASE_PATH: path.join(directory, 'bench.db'), LOG_LEVEL: 'silent', DEMO_DATA: 'false' });
const services = await Services.create(config);
await Demo.load(services, { chunkTargetTokens: config.chunkTargetTokens });
const outsider = await services.store.accounts.create({ name: 'outsider' });
const apiKey = (await Keys.issue(services.store, { kind: 'api_key', accountId: outsider.id })).token;
const bearerToken = (await Keys.issue(services.store, { kind: 'bearer_token', accountId: outsider.id })).token;
const { server, url } = await HttpServer.listen(services, { host: '127.0.0.1', port: 0 });

const privateSlug = 'sunniva-bratt';
const unknownSlug = 'sunniva-brett';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const callers: [string, Caller.Presented][] = [
  ['no credentials', { origin: 'bench' }],
  ['API key', { apiKey, origin: 'bench' }],
  ['bearer token', { bearerToken, origin: 'bench' }],
];

console.log(`private ("${privateSlug}") against unknown ("${unknownSlug}") profile, medians (${os.cpus().length} cores)`);
for (const [name, presented] of callers) {
  const caller = await Caller.resolve(services.store, presented);
  const times = { private: [] as number[], unknown: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    for (const [kind, slug] of [['private', privateSlug], ['unknown', unknownSlug]] as const) {
      const started = process.hrtime.bigint();
      try {
        await Access.readableProfile(services.store, slug, caller);
      } catch {
        // 404, as expected for both.
      }
      times[kind].push(Number(process.hrtime.bigint() - started) / 1000);
    }
  }
  const [p, u] = [median(times.private), median(times.unknown)];
  console.log(`  check, ${name.padEnd(15)} private ${p.toFixed(2).padStart(6)} µs   unknown ${u.toFixed(2).padStart(6)} µs   difference ${(p - u).toFixed(2).padStart(6)} µs`);
}

for (const [name, presented] of callers) {
  const headers: Record<string, string> = {
    ...(presented.apiKey && { 'service-api-key': presented.apiKey }),
    ...(presented.bearerToken && { authorization: `Bearer ${presented.bearerToken}` }),
  };
  const times = { private: [] as number[], unknown: [] as number[] };
  for (let i = 0; i < Math.ceil(rounds / 10); i++) {
    for (const [kind, slug] of [['private', privateSlug], ['unknown', unknownSlug]] as const) {
      const started = process.hrtime.bigint();
      const res = await fetch(`${url}/api/profiles/${slug}/channels`, { headers });
      await res.arrayBuffer();
      if (res.status !== 404) throw new Error(`${slug}: ${res.status}`);
      times[kind].push(Number(process.hrtime.bigint() - started) / 1000);
    }
  }
  const [p, u] = [median(times.private), median(times.unknown)];
  console.log(`  HTTP,  ${name.padEnd(15)} private ${p.toFixed(0).padStart(6)} µs   unknown ${u.toFixed(0).padStart(6)} µs   difference ${(p - u).toFixed(1).padStart(6)} µs`);
}

await HttpServer.close(server);
await services.close();
fs.rmSync(directory, { recursive: true, force: true });
