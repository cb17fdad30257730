import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as OnchainPayment from '../src/payments/OnchainPayment.js';
import * as Rails from '../src/payments/Rails.js';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import * as Stores from '../src/store/Store.js';
import { credentialFor, tempoFetch } from './support/Chains.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';
import * as Proxy from './support/Proxy.js';
import * as Seeded from './support/Seeded.js';
import * as Served from './support/Served.js';

/**
 * A kill -9 between settling and answering: the real server process dies at that point (a crash hook only test
 * servers honour), and when it starts again the wallet has a credit for the payment, never a lost payment.
 */

let sandbox: Sandbox.Sandbox;
const children: ChildProcess[] = [];
const stores: Awaited<ReturnType<typeof Engines.fresh>>[] = [];
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  sandbox = await Sandbox.start();
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const handle of opened) await handle.close();
  for (const store of stores) await store.drop();
  await sandbox?.close();
});

/** A new, empty store on this run's engine, for the server processes of one test; dropped after the file. */
async function place(prefix: string) {
  const made = await Engines.fresh(Engines.current, prefix);
  stores.push(made);
  return made;
}

/** A peek at the store the crashed processes left, the way an auditor (or an operator) would look. */
async function peekAt(env: Record<string, string>) {
  const peek = await Peek.open(env);
  opened.push(peek);
  return peek;
}

/** The store as the restarted service's reconciliation sees it, with its configured rails. */
async function reconcilerOn(database: Awaited<ReturnType<typeof Engines.fresh>>) {
  const { store } = await Stores.open(database.target);
  opened.push(store);
  const config = Config.load({ ...sandbox.environment, ENVIRONMENT: 'test', ...database.env, LOG_LEVEL: 'silent' });
  return { store, rails: Rails.fromConfig(config, store) };
}

/** Starts `profile-edge serve` on the sandbox and the store `database` names. */
function serve(database: Record<string, string>, extra: Record<string, string> = {}) {
  return Served.serve({ ENVIRONMENT: 'test', ...database, SYNC_SCHEDULE: 'false', LOG_LEVEL: 'info', ...sandbox.environment, ...extra }, children);
}

const question = 'How warm should a sourdough starter be?';

test('behavior: killed after the transfer settled and before the answer went out, the server credits the wallet when it starts again', async () => {
  const { env: database } = await place('crash');
  const payer = await sandbox.newPayer();
  const crashing = await serve(database, { PROFILE_EDGE_CRASH_AT: 'after_settle' });
  const body = JSON.stringify({ question, rail: 'tempo' });
  const request = { method: 'POST', headers: { 'content-type': 'application/json' }, body };
  await expect(tempoFetch(sandbox, payer.key)(`${crashing.url}/api/ask/query`, request)).rejects.toThrow();
  expect(await crashing.exited).toBe('SIGKILL');
  // The money moved; the answer never went out.
  expect(await sandbox.balance('tempo', payer.address)).toBe(10_000_000n - 50_000n);

  // The state the crash left, aged past the window a running query could still be in.
  const peek = await peekAt(database);
  const [row] = await peek.all<{ id: string; state: string }>('SELECT id, state FROM payments');
  expect(row!.state).toBe('settled');
  await peek.run('UPDATE payments SET updated_at = updated_at - 11 * 60000');
  // The killed server's lease has run out too: its payments are anyone's to settle.
  await peek.run('UPDATE instances SET seen_at = seen_at - 60000');

  const restarted = await serve(database);
  expect(restarted.log()).toContain('credited wallets whose on-chain payment got no answer');
  const credit = (await peek.get<{ id: string; wallet: string; consumedBy: string | null }>('SELECT id, wallet, consumed_by AS consumedBy FROM wallet_credits'))!;
  expect(credit).toMatchObject({ wallet: payer.address.toLowerCase(), consumedBy: null });

  // The next query naming the wallet is answered from the credit, with no second transfer.
  const next = JSON.stringify({ question, rail: 'tempo', walletAddress: payer.address });
  const unpaid = await fetch(`${restarted.url}/api/ask/query`, { ...request, body: next });
  const answered = await fetch(`${restarted.url}/api/ask/query`, { ...request, body: next, headers: { ...request.headers, ...(await credentialFor(sandbox, 'tempo', unpaid, payer.key)) } });
  expect(answered.status).toBe(200);
  expect(await answered.json()).toMatchObject({ charge: 'onchain', txHash: credit.id });
  expect(await sandbox.balance('tempo', payer.address)).toBe(10_000_000n - 50_000n);
}, 120_000);

test('behavior: killed after a transfer\'s hash was kept and before it was sent, the payment waits, then is released once it can no longer land', async () => {
  const database = await place('before-broadcast');
  const payer = await sandbox.newPayer();
  const crashing = await serve(database.env, { PROFILE_EDGE_CRASH_AT: 'before_broadcast' });
  const request = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question, rail: 'tempo' }) };
  await expect(tempoFetch(sandbox, payer.key)(`${crashing.url}/api/ask/query`, request)).rejects.toThrow();
  expect(await crashing.exited).toBe('SIGKILL');

  const peek = await peekAt(database.env);
  const [row] = await peek.all<{ id: string; state: string; txHash: string; settleBy: number }>('SELECT id, state, tx_hash AS txHash, settle_by AS settleBy FROM payments');
  expect(row).toMatchObject({ state: 'settling', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  await peek.run('UPDATE payments SET updated_at = updated_at - 11 * 60000');
  await peek.run('UPDATE instances SET seen_at = seen_at - 60000');
  // At start the transfer could still land (its validBefore is ahead): nothing is decided, nothing credited.
  const restarted = await serve(database.env);
  expect(restarted.log()).toContain('may still land');
  process.kill(restarted.pid, 'SIGKILL');
  await restarted.exited;
  expect(await peek.value('SELECT state FROM payments')).toBe('settling');
  // A round after its validBefore: it never reached the node, so it is released, and the payer paid nothing.
  const { store, rails } = await reconcilerOn(database);
  expect(await OnchainPayment.reconcile(store, rails, { olderThanMs: 0, now: row!.settleBy + 61_000 })).toEqual({ released: 1, credited: 0, pending: 0 });
  expect(await sandbox.balance('tempo', payer.address)).toBe(10_000_000n);
}, 120_000);

test('behavior: killed at random moments during tempo settlements, the server credits exactly the transfers that landed', async () => {
  const database = await place('settlements');
  // Broadcasts are held on the way to the node and back, so kills land before, during and after the transfer.
  const isBroadcast = (_path: string, body: string) => body.includes('eth_sendRawTransaction');
  let broadcast = () => {};
  const proxy = await Proxy.start(sandbox.tempo.url, {
    before: (p, b) => {
      if (!isBroadcast(p, b)) return 0;
      broadcast();
      return 200;
    },
    after: (p, b) => (isBroadcast(p, b) ? 200 : 0),
    // A broadcast still held when the server dies never reaches the node, as bytes a crashed machine never sent.
    forwardOnlyWhileConnected: true,
  });
  const next = Seeded.random(23);
  const payers: { key: `0x${string}`; address: string }[] = [];
  try {
    for (let round = 0; round < 4; round++) {
      const server = await serve(database.env, { TEMPO_RPC_URL: proxy.url });
      const body = JSON.stringify({ question, rail: 'tempo' });
      const request = { method: 'POST', headers: { 'content-type': 'application/json' }, body };
      const signed = [];
      for (let i = 0; i < 6; i++) {
        const payer = await sandbox.newPayer();
        payers.push(payer);
        signed.push(await credentialFor(sandbox, 'tempo', await fetch(`${server.url}/api/ask/query`, request), payer.key));
      }
      const settling = new Promise<void>((resolve) => (broadcast = resolve));
      const sent = signed.map((headers) => fetch(`${server.url}/api/ask/query`, { ...request, headers: { ...request.headers, ...headers } }).catch(() => undefined));
      // Killed at a moment from the first broadcast to past the last answer.
      await settling;
      await new Promise((resolve) => setTimeout(resolve, next() * 600));
      process.kill(server.pid, 'SIGKILL');
      expect(await server.exited).toBe('SIGKILL');
      await Promise.all(sent);
    }
    // Whatever the proxy still held has reached the node by now; the crash's rows are aged past the window a
    // running query could still be in, the killed servers' leases have run out, and the server starts again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const peek = await peekAt(database.env);
    await peek.run('UPDATE payments SET updated_at = updated_at - 11 * 60000');
    await peek.run('UPDATE instances SET seen_at = seen_at - 60000');
    const restarted = await serve(database.env);
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(restarted.pid, 'SIGKILL');
    await restarted.exited;

    const payments = () => peek.all<{ id: string; state: string; txHash: string | null }>('SELECT id, state, tx_hash AS txHash FROM payments');
    const rows = await payments();
    const landed = async (txHash: string | null) => {
      if (!txHash) return false;
      const receipt = await (await fetch(sandbox.tempo.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [txHash] }) })).json();
      return (receipt as { result: { status: string } | null }).result?.status === '0x1';
    };
    // At the restart: nothing credited or answered that did not land, nothing released that did; the rest waits.
    for (const row of rows) {
      if (row.state === 'credited' || row.state === 'answered') expect(await landed(row.txHash), row.id).toBe(true);
      if (row.state === 'released') expect(await landed(row.txHash), row.id).toBe(false);
      expect(['answered', 'credited', 'released', 'settling']).toContain(row.state);
    }
    // The next pass, once every signed transfer has expired, decides the rest.
    const { store, rails } = await reconcilerOn(database);
    await OnchainPayment.reconcile(store, rails, { olderThanMs: 0, now: Date.now() + 10 * 60_000 });
    const final = await payments();
    let paidFor = 0;
    for (const row of final) {
      const moved = await landed(row.txHash);
      expect(row.state, row.id).toBe(moved ? (row.state === 'answered' ? 'answered' : 'credited') : 'released');
      if (moved) paidFor += 1;
    }
    const credited = final.filter((r) => r.state === 'credited').length;
    expect(await peek.value('SELECT COUNT(*) FROM wallet_credits WHERE consumed_by IS NULL')).toBe(credited);
    // Exactly: what the payers lost is what was answered or credited.
    let spent = 0n;
    for (const payer of payers) spent += 10_000_000n - (await sandbox.balance('tempo', payer.address as `0x${string}`));
    expect(spent).toBe(BigInt(paidFor) * 50_000n);
    // The kills fell inside settlements: some transfers landed with no answer, and were credited.
    expect(credited).toBeGreaterThan(0);
  } finally {
    await proxy.close();
  }
}, 180_000);

test('behavior: on a server that keeps running, settlements whose outcome was lost are resolved by its own periodic pass once past their deadline: credited where the transfer landed, released where it never left', async () => {
  const database = await place('lost-outcomes');
  // What the rails' outside parties do with a settlement: apply it and lose the reply, or never get it.
  let tempo: 'relay' | 'drop' | 'lose' = 'relay';
  const isBroadcast = (_path: string, body: string) => body.includes('eth_sendRawTransaction');
  const tempoProxy = await Proxy.start(sandbox.tempo.url, { drop: (p, b) => tempo === 'drop' && isBroadcast(p, b), lose: (p, b) => tempo === 'lose' && isBroadcast(p, b) });
  const facilitator = await Proxy.start(sandbox.environment.X402_FACILITATOR_URL!, { drop: (path) => path === '/settle' });
  try {
    // Challenges (so x402 authorizations) live 30 s, the server reconciles every 2 s, and a transfer not found 5 s
    // past its deadline never lands (the sandbox's chains mine at once).
    const server = await serve(database.env, {
      TEMPO_RPC_URL: tempoProxy.url,
      X402_FACILITATOR_URL: facilitator.url,
      PAYMENT_CHALLENGE_TTL_SECONDS: '30',
      RECONCILE_INTERVAL_SECONDS: '2',
      SETTLEMENT_LANDING_MARGIN_SECONDS: '5',
    });
    const ask = async (rail: 'tempo' | 'x402_base', payer: { key: `0x${string}` }) => {
      const send = (headers: Record<string, string> = {}) =>
        fetch(`${server.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ question, rail }) });
      const paid = await send(await credentialFor(sandbox, rail, await send(), payer.key));
      expect(paid.status).toBe(503);
      expect(((await paid.json()) as { message: string }).message).toMatch(/outcome is not known yet.*becomes a credit/);
    };
    const payers = { applied: await sandbox.newPayer(), lost: await sandbox.newPayer(), x402: await sandbox.newPayer() };
    tempo = 'drop';
    await ask('tempo', payers.applied);
    tempo = 'lose';
    await ask('tempo', payers.lost);
    tempo = 'relay';
    await ask('x402_base', payers.x402);
    const peek = await peekAt(database.env);
    const stateOf = (wallet: string) => peek.value<string>('SELECT state FROM payments WHERE wallet = ?', wallet.toLowerCase());
    for (const payer of Object.values(payers)) expect(await stateOf(payer.address)).toBe('settling');

    // Nobody restarts anything: the server's own pass settles each once it can tell (a transfer that never left
    // only once it can no longer land, its validBefore 5 s past).
    const decided = async () => (await Promise.all(Object.values(payers).map((p) => stateOf(p.address)))).every((s) => s !== 'settling');
    for (const until = Date.now() + 150_000; !(await decided()); await new Promise((resolve) => setTimeout(resolve, 500))) {
      if (Date.now() > until) throw new Error(`still settling: ${JSON.stringify(await peek.all('SELECT wallet, state, settle_by FROM payments'))}`);
    }
    expect(await stateOf(payers.applied.address)).toBe('credited');
    expect(await stateOf(payers.x402.address)).toBe('credited');
    expect(await stateOf(payers.lost.address)).toBe('released');
    expect(await sandbox.balance('tempo', payers.applied.address)).toBe(10_000_000n - 50_000n);
    expect(await sandbox.balance('x402_base', payers.x402.address)).toBe(10_000_000n - 50_000n);
    expect(await sandbox.balance('tempo', payers.lost.address)).toBe(10_000_000n);
    // The same process, still serving under the lease it started with.
    expect(server.child.exitCode).toBeNull();
    expect(Number(await peek.value('SELECT count(*) FROM instances'))).toBe(1);
    // The credits are spent by the wallets' next signed payments, with no new transfer.
    tempo = 'relay';
    const next = await fetch(`${server.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question, rail: 'tempo' }) });
    const spent = await fetch(`${server.url}/api/ask/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(await credentialFor(sandbox, 'tempo', next, payers.applied.key)) },
      body: JSON.stringify({ question, rail: 'tempo' }),
    });
    expect(spent.status).toBe(200);
    expect(((await spent.json()) as { txHash: string }).txHash).toMatch(/^credit_/);
    expect(await sandbox.balance('tempo', payers.applied.address)).toBe(10_000_000n - 50_000n);
  } finally {
    await tempoProxy.close();
    await facilitator.close();
  }
}, 200_000);
