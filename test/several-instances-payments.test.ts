import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import { credentialFor } from './support/Chains.js';
import * as Engines from './support/Engines.js';
import * as Served from './support/Served.js';

/**
 * One on-chain credential sent to three `serve` processes on one database at the same moment, as a client that
 * retries on every instance behind a load balancer would: one answer, one settlement, and the x402 facilitator asked
 * to verify it once.
 */

let sandbox: Sandbox.Sandbox;
let database: Awaited<ReturnType<typeof Engines.fresh>>;
let instances: Served.Served[];
const children: ChildProcess[] = [];

beforeAll(async () => {
  sandbox = await Sandbox.start();
  database = await Engines.fresh(Engines.current, 'spread-pay');
  const serve = () => Served.serve({ ENVIRONMENT: 'test', ...database.env, SYNC_SCHEDULE: 'false', LOG_LEVEL: 'warn', ...sandbox.environment }, children);
  instances = [await serve()];
  instances.push(...(await Promise.all([serve(), serve()])));
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await database?.drop();
  await sandbox?.close();
});

const question = 'How warm should a sourdough starter be?';

describe.each(['tempo', 'x402_base'] as const)('one %s credential sent to three instances at once', (rail) => {
  test('behavior: one answer and one settlement; the copies are refused with a fresh challenge', async () => {
    const payer = await sandbox.newPayer();
    const before = await sandbox.balance(rail, payer.address);
    const verifications = sandbox.facilitator.verifications();
    const body = JSON.stringify({ question, rail });
    const post = (url: string, headers: Record<string, string> = {}) => fetch(`${url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const unpaid = await post(instances[0]!.url);
    expect(unpaid.status).toBe(402);
    const credential = await credentialFor(sandbox, rail, unpaid, payer.key);
    const answers = await Promise.all(instances.map(({ url }) => post(url, credential)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 402, 402]);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    expect(before - (await sandbox.balance(rail, payer.address))).toBe(50_000n);
    if (rail === 'x402_base') expect(sandbox.facilitator.verifications() - verifications).toBe(1);
  }, 60_000);
});
