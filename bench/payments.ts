/**
 * Payment overhead benchmark: what on-chain payment adds to a query, per rail, against the same query paid with an
 * API key. Everything runs on the sandbox's local stand-ins (a Tempo node, ganache with a USDC stand-in, an x402
 * facilitator), so the figures are this server's and the libraries' own costs, without network latency.
 *
 *   npm run bench:payments -- [--queries 100]
 *
 * Prints p50/p95 in milliseconds of: the API-key query (the unpaid path), the 402 challenge round trip, the wallet
 * making a credential (client side), the paid retry end to end, and inside it the rail's verify and settle.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { tempoModerato } from 'viem/chains';
import { Mppx, tempo } from 'mppx/client';
import { x402Client, x402HTTPClient } from '@x402/fetch';
import * as Keys from '../src/auth/Keys.js';
import * as BoundExactScheme from '../src/client/BoundExactScheme.js';
import * as Config from '../src/config/Config.js';
import * as Demo from '../src/demo/Demo.js';
import type { PaymentRail } from '../src/payments/Rail.js';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import * as Services from '../src/Services.js';
import * as HttpServer from '../src/transport/http/Server.js';

const { values } = parseArgs({ options: { queries: { type: 'string' } } });
const count = Number(values.queries ?? 100);
const question = 'How warm should a sourdough starter be?';

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const row = (name: string, xs: number[]) => console.log(`  ${name.padEnd(34)} p50 ${percentile(xs, 50).toFixed(1).padStart(7)} ms   p95 ${percentile(xs, 95).toFixed(1).padStart(7)} ms`);

const sandbox = await Sandbox.start({ payerUsd: 1_000 });
const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-bench-payments-'));
const config = Config.load({ ...sandbox.environment, ENVIRONMENT: 'test', DATABASE_PATH: path.join(directory, 'bench.db'), LOG_LEVEL: 'silent', DEMO_DATA: 'false' });
const services = await Services.create(config);
await Demo.load(services, { chunkTargetTokens: config.chunkTargetTokens });
const account = await services.store.accounts.create({ name: 'bench' });
await services.store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 1_000_000 });
const key = (await Keys.issue(services.store, { kind: 'api_key', accountId: account.id })).token;
const { server, url } = await HttpServer.listen(services, { host: '127.0.0.1', port: 0 });

// Time the rail's own verify and settle inside the server.
const inside = { verify: [] as number[], settle: [] as number[] };
for (const name of ['tempo', 'x402_base'] as const) {
  const rail = (await services.rails.get(name)) as PaymentRail;
  for (const phase of ['verify', 'settle'] as const) {
    const original = rail[phase].bind(rail) as (...a: unknown[]) => Promise<unknown>;
    (rail as unknown as Record<string, unknown>)[phase] = async (...args: unknown[]) => {
      const started = performance.now();
      try {
        return await original(...args);
      } finally {
        inside[phase].push(performance.now() - started);
      }
    };
  }
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
  const started = performance.now();
  const result = await run();
  return [result, performance.now() - started];
};

const account_ = privateKeyToAccount(sandbox.payer.key);
const tempoClient = Mppx.create({
  methods: [tempo.charge({ account: account_, getClient: ({ chainId }) => createClient({ chain: { ...tempoModerato, id: chainId ?? sandbox.tempo.chainId }, transport: http(sandbox.tempo.url) }) })],
  polyfill: false,
});
const x402 = new x402Client().register(`eip155:${sandbox.base.chainId}`, BoundExactScheme.create(account_));
x402.setSpendControls({ allowedAssets: [{ network: `eip155:${sandbox.base.chainId}`, asset: sandbox.base.usdc.address, maxAmountPerPayment: '1000000' }] });
const x402Http = new x402HTTPClient(x402);

console.log(`payment overhead, ${count} queries per rail, on loopback stand-ins (${os.cpus().length} cores)`);
const baseline: number[] = [];
for (let i = 0; i < count; i++) {
  const [res, ms] = await timed(() => post({ question, paymentMode: 'credits' }, { 'service-api-key': key }));
  if (res.status !== 200) throw new Error(`api key query: ${res.status}`);
  baseline.push(ms);
}
row('API key query (unpaid path)', baseline);

for (const rail of ['tempo', 'x402_base'] as const) {
  inside.verify.length = 0;
  inside.settle.length = 0;
  const challenge: number[] = [];
  const signing: number[] = [];
  const paid: number[] = [];
  for (let i = 0; i < count; i++) {
    const [unpaid, challengeMs] = await timed(() => post({ question, rail }));
    if (unpaid.status !== 402) throw new Error(`${rail} challenge: ${unpaid.status}`);
    const [headers, signMs] = await timed(async () =>
      rail === 'tempo'
        ? { authorization: await tempoClient.createCredential(unpaid) }
        : x402Http.encodePaymentSignatureHeader(await x402Http.createPaymentPayload(x402Http.getPaymentRequiredResponse((n) => unpaid.headers.get(n)))),
    );
    const [res, paidMs] = await timed(() => post({ question, rail }, headers));
    if (res.status !== 200) throw new Error(`${rail} paid: ${res.status} ${await res.text()}`);
    challenge.push(challengeMs);
    signing.push(signMs);
    paid.push(paidMs);
  }
  console.log(`${rail}:`);
  row('402 challenge round trip', challenge);
  row('wallet makes the credential', signing);
  row('paid retry, end to end', paid);
  row('  of which verify', inside.verify);
  row('  of which settle', inside.settle);
  row('overhead over the unpaid path', paid.map((p, i) => p + challenge[i]! - baseline[i % baseline.length]!));
}

await HttpServer.close(server);
await services.close();
await sandbox.close();
fs.rmSync(directory, { recursive: true, force: true });
