import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import * as Store from '../src/store/Database.js';
import { credentialFor, tempoFetch } from './support/Chains.js';
import { cli } from './support/Transports.js';

/**
 * A kill -9 between settling and answering: the real server process dies at that point (a crash hook only test
 * servers honour), and when it starts again the wallet has a credit for the payment, never a lost payment.
 */

let sandbox: Sandbox.Sandbox;
let directory: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  sandbox = await Sandbox.start();
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-crash-'));
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await sandbox?.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

/** Starts `profile-edge serve` on the sandbox and resolves with its URL, its log so far, and its exit. */
async function serve(extra: Record<string, string> = {}) {
  const env = {
    PATH: process.env.PATH ?? '',
    ENVIRONMENT: 'test',
    DATABASE_PATH: path.join(directory, 'crash.db'),
    PORT: '0',
    SYNC_SCHEDULE: 'false',
    LOG_LEVEL: 'info',
    ...sandbox.environment,
    ...extra,
  };
  const child = spawn(cli.command, [...cli.args, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening on (http:\/\/\S+)/.exec(d.toString());
      if (m) resolve(m[1]!);
    });
    void exited.then((how) => reject(new Error(`serve exited (${how}): ${log}`)));
  });
  return { url, exited, log: () => log };
}

const question = 'How warm should a sourdough starter be?';

test('behavior: killed after the transfer settled and before the answer went out, the server credits the wallet when it starts again', async () => {
  const payer = await sandbox.newPayer();
  const crashing = await serve({ PROFILE_EDGE_CRASH_AT: 'after_settle' });
  const body = JSON.stringify({ question, rail: 'tempo' });
  const request = { method: 'POST', headers: { 'content-type': 'application/json' }, body };
  await expect(tempoFetch(sandbox, payer.key)(`${crashing.url}/api/ask/query`, request)).rejects.toThrow();
  expect(await crashing.exited).toBe('SIGKILL');
  // The money moved; the answer never went out.
  expect(await sandbox.balance('tempo', payer.address)).toBe(10_000_000n - 50_000n);

  // The state the crash left, aged past the window a running query could still be in.
  const { db } = Store.open(path.join(directory, 'crash.db'));
  const [row] = db.prepare('SELECT id, state FROM payments').all() as { id: string; state: string }[];
  expect(row!.state).toBe('settled');
  db.prepare('UPDATE payments SET updated_at = updated_at - 11 * 60000').run();
  db.close();

  const restarted = await serve();
  expect(restarted.log()).toContain('credited wallets whose on-chain payment got no answer');
  const after = Store.open(path.join(directory, 'crash.db')).db;
  const credit = after.prepare('SELECT id, wallet, consumed_by AS consumedBy FROM wallet_credits').get() as { id: string; wallet: string; consumedBy: string | null };
  after.close();
  expect(credit).toMatchObject({ wallet: payer.address.toLowerCase(), consumedBy: null });

  // The next query naming the wallet is answered from the credit, with no second transfer.
  const next = JSON.stringify({ question, rail: 'tempo', walletAddress: payer.address });
  const unpaid = await fetch(`${restarted.url}/api/ask/query`, { ...request, body: next });
  const answered = await fetch(`${restarted.url}/api/ask/query`, { ...request, body: next, headers: { ...request.headers, ...(await credentialFor(sandbox, 'tempo', unpaid, payer.key)) } });
  expect(answered.status).toBe(200);
  expect(await answered.json()).toMatchObject({ charge: 'onchain', txHash: credit.id });
  expect(await sandbox.balance('tempo', payer.address)).toBe(10_000_000n - 50_000n);
}, 120_000);
