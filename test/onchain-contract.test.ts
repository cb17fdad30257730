import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ErrorBody } from '../src/contract/Contract.js';
import { PaymentRequiredBody } from '../src/contract/Payment.js';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import type { Binding } from '../tools/Tools.js';
import * as Environment from './support/Environment.js';
import type { Keys } from './support/Environment.js';
import * as Transports from './support/Transports.js';
import type { Credentials, Outcome, Transport, TransportName } from './support/Transports.js';

/**
 * The on-chain side of the contract, through every transport (the handler, REST, MCP over HTTP and stdio): what an
 * unpaid, unanswerable, malformed or wrongly paid query gets. Payments by the real clients are in onchain.test.ts.
 */

type Case = {
  name: string;
  binding: Binding;
  args: Record<string, unknown>;
  meta?: Record<string, unknown>;
  as?: (keys: Keys) => Credentials;
  status: number;
  error?: string;
  check?: (body: Record<string, unknown>) => void;
};

const global: Binding = { kind: 'global' };
const mara: Binding = { kind: 'profile', slug: 'mara-lindqvist' };
const question = 'How warm should a sourdough starter be?';
const unanswerable = 'How do I laminate butter into dough to make croissants?';
const rails = (body: Record<string, unknown>) => (body.supportedRails as { rail: string }[]).map((r) => r.rail);

const cases: Case[] = [
  {
    name: 'an unpaid tempo query is 402 payment_required with the MPP challenge, bound to this request',
    binding: global,
    args: { question, rail: 'tempo' },
    status: 402,
    error: 'payment_required',
    check: (body) => {
      expect(rails(body)).toEqual(['tempo', 'x402_base']);
      expect(body.challenges).toEqual([expect.objectContaining({ method: 'tempo', intent: 'charge', realm: 'profile-edge', request: expect.objectContaining({ amount: '50000' }) })]);
      expect(body.message).toMatch(/0\.05 USD on tempo/);
    },
  },
  {
    name: 'an unpaid x402_base query is 402 payment_required with the x402 v2 requirements',
    binding: mara,
    args: { question, rail: 'x402_base' },
    status: 402,
    error: 'payment_required',
    check: (body) => {
      const [required] = body.challenges as { x402Version: number; accepts: Record<string, unknown>[] }[];
      expect(required!.x402Version).toBe(2);
      expect(required!.accepts[0]).toMatchObject({ scheme: 'exact', network: 'eip155:1337', amount: '50000' });
    },
  },
  { name: 'a question nothing is relevant to is 422 before any challenge: do not pay', binding: global, args: { question: unanswerable, rail: 'tempo' }, status: 422, error: 'no_relevant_content' },
  {
    name: 'a tempo credential that is not one is 402 with a fresh challenge and the reason',
    binding: global,
    args: { question, rail: 'tempo' },
    meta: { 'org.paymentauth/credential': 'Payment not-a-credential' },
    status: 402,
    error: 'payment_required',
    check: (body) => {
      expect(body.message).toMatch(/refused: .*not a readable MPP credential/);
      expect((body.challenges as unknown[]).length).toBe(1);
    },
  },
  {
    name: 'an x402 payload that is not one is 402 with a fresh challenge and the reason',
    binding: global,
    args: { question, rail: 'x402_base' },
    meta: { 'org.paymentauth/credential': { x402Version: 2, payload: {} } },
    status: 402,
    error: 'payment_required',
    check: (body) => expect(body.message).toMatch(/refused: it is not an x402 v2 payment payload/),
  },
  {
    name: "a tempo credential on the x402_base rail is 402: it is not that rail's",
    binding: global,
    args: { question, rail: 'x402_base' },
    meta: { 'org.paymentauth/credential': 'Payment abc' },
    status: 402,
    error: 'payment_required',
    check: (body) => expect(body.message).toMatch(/not one for the x402_base rail/),
  },
  { name: 'a malformed walletAddress is 400', binding: global, args: { question, rail: 'tempo', walletAddress: '0x12' }, status: 400, error: 'invalid_request' },
  { name: 'an unknown rail is 400 invalid_rail', binding: global, args: { question, rail: 'bitcoin' }, status: 400, error: 'invalid_rail' },
  { name: 'a private profile stays 404 to an on-chain payer', binding: { kind: 'profile', slug: 'sunniva-bratt' }, args: { question, rail: 'tempo' }, status: 404, error: 'not_found' },
  {
    name: 'with an API key the rail and credential are ignored and the balance is charged',
    binding: global,
    args: { question, rail: 'tempo', paymentMode: 'credits' },
    meta: { 'org.paymentauth/credential': 'Payment abc' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    check: (body) => {
      expect(body.charge).toBe('credits');
      expect(body.rail).toBeUndefined();
    },
  },
  {
    name: 'neither a key nor a rail is 401 api_key_required naming both ways to pay',
    binding: global,
    args: { question },
    status: 401,
    error: 'api_key_required',
    check: (body) => {
      expect(body.message).toMatch(/API key .* or rail/);
      expect(rails(body)).toEqual(['tempo', 'x402_base']);
    },
  },
];

let sandbox: Sandbox.Sandbox;
let environment: Environment.Environment;
let http: Awaited<ReturnType<typeof Environment.serve>>;
const transports = new Map<TransportName, Transport>();

beforeAll(async () => {
  sandbox = await Sandbox.start();
  environment = await Environment.create(sandbox.environment);
  http = await Environment.serve(environment);
  for (const t of [Transports.handler(environment), Transports.rest(http.url), Transports.mcpHttp(http.url), Transports.mcpStdio(environment)]) transports.set(t.name, t);
}, 60_000);

afterAll(async () => {
  await Promise.all([...transports.values()].map((t) => t.close()));
  await http?.close();
  await environment?.close();
  await sandbox?.close();
});

describe.each(['handler', 'rest', 'mcp-http', 'mcp-stdio'] as TransportName[])('on-chain contract over %s', (name) => {
  test.each(cases)('$name', async (c) => {
    const outcome: Outcome = await transports.get(name)!.call({ tool: 'profile_query', args: c.args, binding: c.binding, credentials: c.as?.(environment.keys), meta: c.meta });
    if (c.status === 200) {
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ ok: true });
      c.check?.((outcome as Extract<Outcome, { ok: true }>).payload);
      return;
    }
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ ok: false, status: c.status });
    const body = (outcome as Extract<Outcome, { ok: false }>).body;
    expect(ErrorBody.safeParse(body).success).toBe(true);
    expect(body.error).toBe(c.error);
    // People and logs read the first line: the code and the message lead, then the request's id, then the rails.
    const keys = Object.keys(body);
    expect(keys.slice(0, 2)).toEqual(['error', 'message']);
    if ('requestId' in body) expect(keys[2]).toBe('requestId');
    c.check?.(body);
    if (name === 'rest' && c.status === 402) {
      const headers = (outcome as { headers?: Headers }).headers!;
      expect(headers.get(c.args.rail === 'tempo' ? 'www-authenticate' : 'payment-required')).toBeTruthy();
    }
  });
});

test('behavior: no on-chain case above moved any money', async () => {
  expect(await sandbox.balance('tempo', sandbox.payTo.tempo)).toBe(0n);
  expect(await sandbox.balance('x402_base', sandbox.payTo.x402_base)).toBe(0n);
  expect(sandbox.facilitator.settlements()).toBe(0);
});

describe('how to pay is said in the words of each wire', () => {
  const unpaid = (name: TransportName, rail: string) => transports.get(name)!.call({ tool: 'profile_query', args: { question, rail }, binding: global });

  test.each(['tempo', 'x402_base'])('behavior: over REST a %s challenge names its header and where the credential goes back', async (rail) => {
    const body = ((await unpaid('rest', rail)) as Extract<Outcome, { ok: false }>).body;
    expect(PaymentRequiredBody.safeParse(body).success).toBe(true);
    expect(body.message).toMatch(rail === 'tempo' ? /in the WWW-Authenticate header .* with Authorization: Payment/ : /in the PAYMENT-REQUIRED header .* with PAYMENT-SIGNATURE/);
    expect(body.message).not.toMatch(/_meta/);
  });

  test.each(['mcp-http', 'mcp-stdio'] as TransportName[])('behavior: over %s it names data.challenges and _meta, never an HTTP header', async (name) => {
    for (const rail of ['tempo', 'x402_base']) {
      const body = ((await unpaid(name, rail)) as Extract<Outcome, { ok: false }>).body;
      expect(PaymentRequiredBody.safeParse(body).success).toBe(true);
      expect(body.message).toMatch(/Pay data\.challenges\[0\] and repeat the same call with the credential in params\._meta\["org\.paymentauth\/credential"\]/);
      expect(body.message).not.toMatch(/WWW-Authenticate|PAYMENT-REQUIRED|PAYMENT-SIGNATURE|Authorization/);
    }
  });

  test.each(['rest', 'mcp-http', 'mcp-stdio'] as TransportName[])('behavior: over %s the x402 challenge names what is paid for on that wire: the REST path, or the MCP tool', async (name) => {
    const body = ((await unpaid(name, 'x402_base')) as Extract<Outcome, { ok: false }>).body;
    const [required] = body.challenges as { resource: { url: string; description: string } }[];
    expect(required!.resource.url).toBe(name === 'rest' ? '/api/ask/query' : 'mcp://tool/profile_query');
    expect(required!.resource.description).toMatch(/^One answer from the global endpoint: "How warm/);
  });

  test('behavior: a credential in the arguments’ _meta of tools/call is read as in params._meta', async () => {
    const response = await fetch(`${http.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'profile_query', arguments: { question, rail: 'tempo', _meta: { 'org.paymentauth/credential': 'Payment not-a-credential' } } } }),
    });
    const answer = (await response.json()) as { error: { code: number; message: string } };
    expect(answer.error.code).toBe(-32042);
    // Read, and refused for what it is: not ignored for a fresh challenge with no reason.
    expect(answer.error.message).toMatch(/^The payment credential was refused: .*not a readable MPP credential/);
  });
});
