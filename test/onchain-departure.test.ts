import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Challenge, Credential } from 'mppx';
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client';
import { McpClient } from 'mppx/mcp/client';
import { privateKeyToAccount } from 'viem/accounts';
import { spawn } from 'node:child_process';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import type * as Payments from '../src/store/Payments.js';
import { credentialFor, tempoGetClient, x402Payer } from './support/Chains.js';
import * as Environment from './support/Environment.js';
import * as Proxy from './support/Proxy.js';
import * as Seeded from './support/Seeded.js';
import { cli } from './support/Transports.js';

/**
 * Callers who leave. A paid call whose connection closes at any moment up to settlement is never recorded answered,
 * and the money that moved for it is a credit for the wallet that paid; a caller who stays is answered and charged
 * once. The node's broadcast and the facilitator's settlement are slowed by a proxy, so that closing at a random
 * moment lands before, during and after the transfer as often as not. Real payers: the mppx client (fetch and MCP),
 * the x402 client, and the MCP SDK client.
 */

type Rail = 'tempo' | 'x402_base';
type Way = 'rest' | 'mcp tools/call' | 'mcp direct';

const question = 'How warm should a sourdough starter be?';
const price = 50_000n;
/** How long the proxy holds a settlement on each side: the transfer is in flight for at least this twice over. */
const settleHoldMs = 150;

let sandbox: Sandbox.Sandbox;
let environment: Environment.Environment;
let server: Awaited<ReturnType<typeof Environment.serve>>;
const proxies: Awaited<ReturnType<typeof Proxy.start>>[] = [];

beforeAll(async () => {
  sandbox = await Sandbox.start();
  const isBroadcast = (_path: string, body: string) => body.includes('eth_sendRawTransaction');
  const slowTempo = await Proxy.start(sandbox.environment.TEMPO_RPC_URL!, {
    before: (path, body) => (isBroadcast(path, body) ? settleHoldMs : 0),
    after: (path, body) => (isBroadcast(path, body) ? settleHoldMs : 0),
  });
  const slowFacilitator = await Proxy.start(sandbox.environment.X402_FACILITATOR_URL!, {
    before: (path) => (path === '/settle' ? settleHoldMs : 0),
    after: (path) => (path === '/settle' ? settleHoldMs : 0),
  });
  proxies.push(slowTempo, slowFacilitator);
  environment = await Environment.create({ ...sandbox.environment, TEMPO_RPC_URL: slowTempo.url, X402_FACILITATOR_URL: slowFacilitator.url });
  server = await Environment.serve(environment);
  noteHandOvers(server.server);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await environment?.close();
  for (const proxy of proxies) await proxy.close();
  await sandbox?.close();
});

/** Whether a request carries a payment credential: in MCP `_meta`, or in a payment header. */
function isPaid(init: RequestInit | undefined): boolean {
  const headers = new Headers(init?.headers);
  if (headers.has('payment-signature') || /^Payment\s/i.test(headers.get('authorization') ?? '')) return true;
  return typeof init?.body === 'string' && init.body.includes('org.paymentauth/credential');
}

/**
 * When the last paid call was handed over and when its caller left, on one clock (the server runs in this process).
 * The server counts an answer delivered once the whole response was handed to the socket: a caller who leaves after
 * that, with the bytes on their way, was answered, though their fetch never read them (HTTP tells a server nothing
 * later). Only that case may be answered without the caller seeing it.
 */
const lastPaid: { handedOverAt?: number; leftAt?: number } = {};
const handedOverBeforeLeaving = () => lastPaid.handedOverAt !== undefined && lastPaid.leftAt !== undefined && lastPaid.handedOverAt <= lastPaid.leftAt;

/** A fetch that closes the connection `afterMs` after it sends a request carrying a payment credential. */
function leavingFetch(afterMs: number): typeof fetch {
  return (input, init) => {
    const paid = isPaid(init);
    if (!paid) return fetch(input, init);
    delete lastPaid.handedOverAt;
    delete lastPaid.leftAt;
    const leave = new AbortController();
    setTimeout(() => {
      lastPaid.leftAt = performance.now();
      leave.abort();
    }, afterMs);
    return fetch(input, { ...init, signal: leave.signal });
  };
}

/** Notes when the server hands over a paid call's response in full ('finish', as the server counts delivery). */
function noteHandOvers(server: Server): void {
  server.on('request', (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => {
    res.on('finish', () => {
      const headers = new Headers(Object.entries(req.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
      if (isPaid({ headers, body: JSON.stringify(req.body ?? null) })) lastPaid.handedOverAt ??= performance.now();
    });
  });
}

const jsonRpc = (id: number, params: Record<string, unknown>) => JSON.stringify({ jsonrpc: '2.0', id, method: 'profile_query', params });
const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** An MCP challenge (`data.challenges[0]` of -32042) paid with the rail's real client, as MCP `_meta` carries it. */
async function mcpCredential(rail: Rail, key: `0x${string}`): Promise<unknown> {
  const unpaid = (await (await fetch(`${server.url}/mcp`, { method: 'POST', headers: mcpHeaders, body: jsonRpc(1, { question, rail }) })).json()) as { error: { data: { challenges: unknown[] } } };
  const challenge = unpaid.error.data.challenges[0];
  if (rail === 'x402_base') return x402Payer(sandbox, key).createPaymentPayload(challenge as never);
  const payer = MppxClient.create({ methods: [tempoClient.charge({ account: privateKeyToAccount(key), getClient: tempoGetClient(sandbox) })], polyfill: false });
  const www = Challenge.serialize(challenge as Challenge.Challenge);
  return Credential.deserialize(await payer.createCredential(new Response(null, { status: 402, headers: { 'WWW-Authenticate': www } })));
}

/** One paid call whose caller leaves `afterMs` after sending it; true when the answer reached the caller first. */
async function paidCall(way: Way, rail: Rail, key: `0x${string}`, afterMs: number): Promise<boolean> {
  const leaving = leavingFetch(afterMs);
  if (way === 'rest') {
    const body = JSON.stringify({ question, rail });
    const unpaid = await fetch(`${server.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const headers = await credentialFor(sandbox, rail, unpaid, key);
    const res = await leaving(`${server.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }).catch(() => undefined);
    return res !== undefined && (await res.json().catch(() => undefined)) !== undefined && res.status === 200;
  }
  const credential = await mcpCredential(rail, key);
  if (way === 'mcp direct') {
    const body = jsonRpc(2, { question, rail, _meta: { 'org.paymentauth/credential': credential } });
    const res = await leaving(`${server.url}/mcp`, { method: 'POST', headers: mcpHeaders, body }).catch(() => undefined);
    const answer = (await res?.json().catch(() => undefined)) as { result?: unknown } | undefined;
    return answer?.result !== undefined;
  }
  const client = new Client({ name: 'leaving-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { fetch: leaving }));
  try {
    const result = await client.callTool({ name: 'profile_query', arguments: { question, rail }, _meta: { 'org.paymentauth/credential': credential } }).catch(() => undefined);
    return result !== undefined && !result.isError;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** The payment rows of a wallet once every one of them has come to rest (answered, released or credited). */
async function settledRows(wallet: string): Promise<Payments.PaymentRow[]> {
  // The rows checked are the rows returned, read at once: one the server records just after still counts as unseen.
  return vi.waitFor(
    async () => {
      const rows = await environment.services.store.payments.recent({ wallet, limit: 10 });
      expect(rows.filter((r) => !['answered', 'released', 'credited'].includes(r.state))).toEqual([]);
      return rows;
    },
    { timeout: 15_000, interval: 50 },
  );
}

/** What each call came to, checked: never answered unless delivered; money that moved is the answer's or a credit. */
async function outcome(rail: Rail, payer: { address: string }, delivered: boolean): Promise<'answered' | 'credited' | 'released' | 'none'> {
  const rows = await settledRows(payer.address);
  expect(rows.length).toBeLessThanOrEqual(1);
  const row = rows[0];
  const spent = 10_000_000n - (await sandbox.balance(rail, payer.address as `0x${string}`));
  if (!row) {
    expect(spent).toBe(0n);
    return 'none';
  }
  if (!delivered && !handedOverBeforeLeaving()) expect(row.state, `${rail} payment ${row.id} was not delivered`).not.toBe('answered');
  if (delivered) expect(row.state).toBe('answered');
  expect(spent, `${rail} payment ${row.id} is ${row.state}`).toBe(row.state === 'released' ? 0n : price);
  if (row.state === 'credited') {
    const credit = await environment.peek.get('SELECT wallet, consumed_by AS consumedBy FROM wallet_credits WHERE payment_id = ?', row.id);
    expect(credit).toEqual({ wallet: payer.address.toLowerCase(), consumedBy: null });
  }
  return row.state as 'answered' | 'credited' | 'released';
}

describe.each(['tempo', 'x402_base'] as const)('a %s payer who leaves', (rail) => {
  test("behavior: a paid tools/call whose connection closes 3 ms after it was sent is not answered, and what it paid is a credit", async () => {
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const payer = await sandbox.newPayer();
      let delivered = false;
      if (rail === 'tempo') {
        // mppx's MCP client pays the -32042 challenge and repeats the call, as MCP payment clients do.
        const client = new Client({ name: 'wallet-agent', version: '1.0.0' });
        await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { fetch: leavingFetch(3) }));
        const paying = McpClient.wrap(client, { methods: [tempoClient.charge({ account: privateKeyToAccount(payer.key), getClient: tempoGetClient(sandbox) })] });
        delivered = await paying.callTool({ name: 'profile_query', arguments: { question, rail } }).then(
          (r) => !r.isError,
          () => false,
        );
        await client.close().catch(() => undefined);
      } else {
        delivered = await paidCall('mcp tools/call', rail, payer.key, 3);
      }
      seen.push(await outcome(rail, payer, delivered));
    }
    expect(seen).not.toContain('answered');
  }, 120_000);

  test.each(['rest', 'mcp tools/call', 'mcp direct'] as const)('behavior: over %s, callers who leave at random moments up to settlement are never charged without an answer', async (way) => {
    const next = Seeded.random(way.length * 7919 + rail.length);
    const seen: string[] = [];
    // Funded one after another (the Base stand-in mints in order), then all sent at once.
    const payers: Awaited<ReturnType<typeof sandbox.newPayer>>[] = [];
    for (let i = 0; i < 8; i++) payers.push(await sandbox.newPayer());
    await Promise.all(
      payers.map(async (payer) => {
        // From the moment the paid call leaves until well inside the slowed settlement.
        const delivered = await paidCall(way, rail, payer.key, Math.floor(next() * (2 * settleHoldMs + 100)));
        seen.push(await outcome(rail, payer, delivered));
      }),
    );
    expect(seen).not.toContain('answered');
  }, 120_000);

  test('behavior: a stdio host that closes the pipe during settlement is not charged: the server finishes the call, credits the money, then exits', async () => {
    const payer = await sandbox.newPayer();
    const credential = await mcpCredential(rail, payer.key);
    const child = spawn(cli.command, [...cli.args, 'mcp'], { env: { PATH: process.env.PATH ?? '', ...environment.env, LOG_LEVEL: 'warn' }, cwd: environment.directory, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const line = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
    line({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'leaving-host', version: '1' } } });
    line({ jsonrpc: '2.0', method: 'notifications/initialized' });
    line({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'profile_query', arguments: { question, rail }, _meta: { 'org.paymentauth/credential': credential } } });
    // The host goes away once the payment is settling (the proxy holds the transfer on its way).
    const state = () => environment.peek.value('SELECT state FROM payments WHERE wallet = ?', payer.address.toLowerCase());
    await vi.waitFor(async () => expect(await state()).toBe('settling'), { timeout: 20_000, interval: 20 });
    child.stdin.end();
    expect(await exited).toBe(0);
    expect(stderr).not.toMatch(/release failed|not open/);
    expect(await outcome(rail, payer, false)).toBe('credited');
  }, 60_000);

  test.skipIf(rail !== 'tempo')('behavior: a payer who broadcast the transfer themselves and leaves before the answer keeps it as a credit', async () => {
    const seen: string[] = [];
    for (const afterMs of [5, 30, 80]) {
      const payer = await sandbox.newPayer();
      const body = JSON.stringify({ question, rail });
      const send = (headers: Record<string, string>, leaving = leavingFetch(afterMs)) =>
        leaving(`${server.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }).catch(() => undefined);
      const unpaid = await fetch(`${server.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const headers = await credentialFor(sandbox, rail, unpaid, payer.key, 'push');
      const res = await send(headers);
      const delivered = res !== undefined && res.status === 200 && (await res.json().catch(() => undefined)) !== undefined;
      // Verifying a pushed transfer reads the chain: give a request that reached the server the time to be recorded.
      const recorded = () => environment.peek.get('SELECT 1 AS recorded FROM payments WHERE wallet = ?', payer.address.toLowerCase());
      await vi.waitFor(async () => expect(await recorded()).toBeDefined(), { timeout: 2_000 }).catch(() => undefined);
      const [row] = await settledRows(payer.address);
      if (!row) {
        // The server never had it: the pushed transfer is still the payer's to present, and pays.
        expect((await send(headers, fetch))?.status).toBe(200);
        seen.push('presented again');
        continue;
      }
      seen.push(row.state);
      // Pushed: the money moved before the server saw anything, so it is an answer or a credit, never released.
      expect(row.state).toBe(delivered || handedOverBeforeLeaving() ? 'answered' : 'credited');
      if (row.state === 'credited') expect((await environment.services.store.payments.openCredit(rail, payer.address))?.paymentId).toBe(row.id);
    }
    expect(seen).toContain('credited');
  }, 60_000);

  test.each(['rest', 'mcp tools/call', 'mcp direct'] as const)('behavior: over %s, a caller who stays is answered and charged once', async (way) => {
    const payer = await sandbox.newPayer();
    expect(await paidCall(way, rail, payer.key, 60_000)).toBe(true);
    expect(await outcome(rail, payer, true)).toBe('answered');
  }, 60_000);

  test('behavior: over stdio, a host that stays is answered and charged once (the answer counts as sent once stdout wrote it)', async () => {
    const payer = await sandbox.newPayer();
    const client = new Client({ name: 'stdio-wallet', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: cli.command, args: [...cli.args, 'mcp'], env: { PATH: process.env.PATH ?? '', ...environment.env }, cwd: environment.directory, stderr: 'pipe' }));
    try {
      const result = await client.callTool({ name: 'profile_query', arguments: { question, rail }, _meta: { 'org.paymentauth/credential': await mcpCredential(rail, payer.key) } });
      expect(result.isError).toBeFalsy();
      expect(await outcome(rail, payer, true)).toBe('answered');
    } finally {
      await client.close();
    }
  }, 60_000);
});

test('behavior: leaving before, during and after the transfer all happened above (both releases and credits were seen)', async () => {
  const states = await environment.peek.all<{ state: string; n: number }>('SELECT state, COUNT(*) AS n FROM payments GROUP BY state');
  const count = (state: string) => states.find((s) => s.state === state)?.n ?? 0;
  expect(count('released')).toBeGreaterThan(0);
  expect(count('credited')).toBeGreaterThan(0);
});
