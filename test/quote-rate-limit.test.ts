import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ErrorBody } from '../src/contract/Contract.js';
import * as Keys from '../src/auth/Keys.js';
import * as Environment from './support/Environment.js';
import * as Transports from './support/Transports.js';
import type { Transport } from './support/Transports.js';

const limit = { QUOTE_RATE_LIMIT_PER_MINUTE: '2' };

let environment: Environment.Environment;
let http: Awaited<ReturnType<typeof Environment.serve>>;
let transports: Transport[];

beforeAll(async () => {
  environment = await Environment.create(limit);
  http = await Environment.serve(environment);
  transports = [Transports.handler(environment), Transports.rest(http.url), Transports.mcpHttp(http.url), Transports.mcpStdio(environment, limit)];
});

afterAll(async () => {
  await Promise.all(transports.map((t) => t.close()));
  await http?.close();
  await environment?.close();
});

/** A key of its own per test, so each caller starts with a full quota. */
const freshKey = async () => {
  const { store } = environment.services;
  return (await Keys.issue(store, { kind: 'api_key', accountId: (await store.accounts.get('caller')).id })).token;
};

describe('quote rate limit', () => {
  test.each(['handler', 'rest', 'mcp-http', 'mcp-stdio'])('error: over %s the call past the limit is 429 with resetAt', async (name) => {
    const transport = transports.find((t) => t.name === name)!;
    const call = { tool: 'profile_quote' as const, binding: { kind: 'global' as const }, credentials: { apiKey: await freshKey() } };
    expect((await transport.call(call)).ok).toBe(true);
    expect((await transport.call(call)).ok).toBe(true);
    const limited = await transport.call(call);
    expect(limited).toMatchObject({ ok: false, status: 429 });
    if (limited.ok) return;
    const body = ErrorBody.parse(limited.body);
    expect(body.error).toBe('rate_limited');
    expect(Date.parse(body.resetAt!)).toBeGreaterThan(Date.now());
    if (name === 'rest') {
      const retryAfter = limited.headers!.get('retry-after')!;
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    }
  });

  test('behavior: callers are limited separately', async () => {
    const rest = transports.find((t) => t.name === 'rest')!;
    const first = { tool: 'profile_quote' as const, binding: { kind: 'global' as const }, credentials: { apiKey: await freshKey() } };
    for (let i = 0; i < 3; i += 1) await rest.call(first);
    const other = await rest.call({ ...first, credentials: { apiKey: await freshKey() } });
    expect(other.ok).toBe(true);
  });

  test('error: a direct JSON-RPC call past the limit carries Retry-After', async () => {
    const headers = { 'content-type': 'application/json', 'service-api-key': await freshKey() };
    const send = () => fetch(`${http.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'profile_quote' }) });
    await send();
    await send();
    const response = await send();
    const body = (await response.json()) as any;
    expect(body.error).toMatchObject({ code: -32029, data: { error: 'rate_limited', status: 429 } });
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
