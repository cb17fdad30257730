import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Breaker from '../src/health/Breaker.js';
import * as Claude from '../src/answer/Claude.js';
import * as Extractive from '../src/answer/Extractive.js';
import * as Metrics from '../src/health/Metrics.js';
import * as Config from '../src/config/Config.js';
import * as Log from '../src/log/Logger.js';
import * as OnchainPayment from '../src/payments/OnchainPayment.js';
import * as Terms from '../src/payments/Terms.js';
import { CredentialRejected, type PaymentRail } from '../src/payments/Rail.js';
import * as Caller from '../src/auth/Caller.js';
import * as Retriever from '../src/retrieval/Retriever.js';
import * as Scope from '../src/retrieval/Scope.js';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import * as Stores from '../src/store/Store.js';
import * as MetricsRoute from '../src/transport/http/MetricsRoute.js';
import { expressPath, routes } from '../src/transport/http/Rest.js';
import { tempoFetch, x402Fetch } from './support/Chains.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as Environment from './support/Environment.js';
import * as MessagesApi from './support/MessagesApi.js';
import { cli } from './support/Transports.js';

const question = 'How warm should a sourdough starter be?';
const metricsToken = 'metrics-token-0123456789abcdef';

/** One sample of the exposition: a metric's name, its labels and its value. */
type Sample = { name: string; labels: Record<string, string>; value: number };

function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`not an exposition line: ${line}`);
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
      return { name: m[1]!, labels, value: Number(m[3]) };
    });
}

/** The sum of a metric's samples whose labels include `labels`. */
const total = (all: Sample[], name: string, labels: Record<string, string> = {}) =>
  all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);

describe('breaker', () => {
  test('behavior: opens after the configured failures in a row, skips calls while cooling, lets one probe through, and closes on its success', () => {
    let now = 0;
    const changes: string[] = [];
    const breaker = Breaker.create('embedder', { failures: 3, coolMs: 1000, now: () => now, onChange: (_name, state) => changes.push(state) });
    breaker.failed();
    breaker.failed();
    breaker.succeeded();
    breaker.failed();
    breaker.failed();
    expect(breaker.state()).toBe('closed');
    breaker.failed();
    expect(breaker.state()).toBe('open');
    expect(breaker.allow()).toBe(false);
    expect(breaker.retryAfterSeconds()).toBe(1);
    now = 1000;
    expect(breaker.state()).toBe('half_open');
    expect(breaker.allow()).toBe(true);
    // One probe at a time.
    expect(breaker.allow()).toBe(false);
    breaker.failed();
    expect(breaker.state()).toBe('open');
    now = 2500;
    expect(breaker.allow()).toBe(true);
    // A probe that ended on this side's failure (the database) frees the slot and says nothing of the party.
    breaker.inconclusive();
    expect(breaker.state()).toBe('half_open');
    expect(breaker.allow()).toBe(true);
    breaker.succeeded();
    expect(breaker.state()).toBe('closed');
    expect(breaker.allow()).toBe(true);
    expect(changes).toEqual(['open', 'half_open', 'open', 'half_open', 'closed']);
  });

  test("behavior: a rail whose outside party keeps failing is skipped for a while: 503 with Retry-After, nothing claimed, and the rail is asked again after the cooling period", async () => {
    const place = await Engines.fresh(Engines.current, 'breaker');
    const { store } = await Stores.open(place.target);
    try {
      const config = Config.load({ ...place.env, X402_BASE_PAY_TO: Environment.payTo.x402_base });
      let verifies = 0;
      let failing = true;
      const rail = {
        rail: 'x402_base',
        accepts: () => true,
        challenge: async () => ({ headers: {}, mcp: {} }),
        verify: async () => {
          verifies += 1;
          if (failing) throw Object.assign(new Error('fetch failed'), { name: 'TypeError' });
          throw new CredentialRejected('not signed by anyone');
        },
      } as unknown as PaymentRail;
      let now = 0;
      const breaker = Breaker.create('x402_base', { failures: 2, coolMs: 30_000, now: () => now });
      const metrics = Metrics.create({ sources: { breakers: { ...Breaker.forAll({ failures: 2, coolMs: 30_000 }), x402_base: breaker } } });
      const terms = Terms.of({ rail: 'x402_base', served: { kind: 'global' }, request: { question: 'q', rail: 'x402_base' } as never, amountMillicents: 5_000 });
      const pay = () =>
        OnchainPayment.payment({ store, config, logger: Log.create({ level: 'silent' }), metrics, breaker, rails: { get: async () => rail } as never, rail: 'x402_base', terms, credential: { kind: 'x402' } as never, instance: undefined })
          .authorize({ queryId: `q_${Math.random()}`, memo: 'q', relevant: true })
          .catch((error: unknown) => error);
      expect(await pay()).toMatchObject({ name: 'TypeError' });
      expect(await pay()).toMatchObject({ name: 'TypeError' });
      const skipped = await pay();
      expect(skipped).toMatchObject({ code: 'service_unavailable', headers: { 'Retry-After': '30' } });
      expect((skipped as Error).message).toMatch(/failed repeatedly and is not called for about 30 s; nothing was charged/);
      expect(verifies).toBe(2);
      const exposition = samples((await metrics.render()).body);
      expect(total(exposition, 'profile_edge_breaker_state', { dependency: 'x402_base' })).toBe(1);
      expect(total(exposition, 'profile_edge_dependency_failures_total', { dependency: 'x402_base', kind: 'skipped' })).toBe(1);
      // Cooled: the next payment is the probe. The facilitator answers (a refusal is an answer), and the breaker closes.
      now = 30_000;
      failing = false;
      expect(await pay()).toMatchObject({ code: 'payment_required' });
      expect(verifies).toBe(3);
      expect(breaker.state()).toBe('closed');
      expect(await store.payments.unfinished({ cutoff: Date.now() + 1 })).toEqual([]);
    } finally {
      await store.close();
      await place.drop();
    }
  });

  test('behavior: a model that keeps failing is skipped for a while: answers are extractive at once, say degraded model, and the model is asked again after the cooling period', async () => {
    const api = await MessagesApi.start({ kind: 'status', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    try {
      let now = 0;
      const breaker = Breaker.create('synthesizer', { failures: 2, coolMs: 10_000, now: () => now });
      const metrics = Metrics.create();
      const synthesizer = Claude.create({ apiKey: 'sk-ant-test', baseUrl: api.url, model: 'claude-test', timeoutMs: 2_000, maxRetries: 0, fallback: Extractive.create(), logger: Log.create({ level: 'silent' }), breaker, metrics });
      const environment = await Environment.create();
      try {
        const { services } = environment;
        const { caller } = await Caller.inspect(services.store, { origin: 'test' });
        const scope = await Scope.resolve(services.store, { question, scope: undefined, boundSlug: undefined, channelIds: undefined, caller });
        const run = await Retriever.retrieve(services.store, await services.lexicalIndex(), { question, channels: scope.channels, mode: undefined });
        const input = { question, evidence: run.selected, terms: run.question, mode: run.mode };
        expect((await synthesizer.synthesize(input)).degraded).toEqual(['model']);
        expect((await synthesizer.synthesize(input)).degraded).toEqual(['model']);
        expect(api.received).toHaveLength(2);
        const skipped = await synthesizer.synthesize(input);
        expect(skipped.degraded).toEqual(['model']);
        expect(skipped.notes?.join(' ')).toMatch(/failed repeatedly and is skipped/);
        expect(api.received).toHaveLength(2);
        now = 10_000;
        await synthesizer.synthesize(input);
        expect(api.received).toHaveLength(3);
        const exposition = samples((await metrics.render()).body);
        expect(total(exposition, 'profile_edge_fallbacks_total', { dependency: 'synthesizer' })).toBe(4);
        expect(total(exposition, 'profile_edge_dependency_failures_total', { dependency: 'synthesizer', kind: 'skipped' })).toBe(1);
        expect(total(exposition, 'profile_edge_dependency_failures_total', { dependency: 'synthesizer', kind: 'error' })).toBe(3);
      } finally {
        await environment.close();
      }
    } finally {
      await api.close();
    }
  });
});

describe('metrics, request ids and logs of a served store', () => {
  let sandbox: Sandbox.Sandbox;
  let environment: Environment.Environment;
  let http: Awaited<ReturnType<typeof Environment.serve>>;
  const logLines: string[] = [];

  beforeAll(async () => {
    sandbox = await Sandbox.start();
    environment = await Environment.create({ ...sandbox.environment, METRICS_TOKEN: metricsToken }, { logLines });
    http = await Environment.serve(environment);
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await environment?.close();
    await sandbox?.close();
  });

  const scrape = async () => {
    const res = await fetch(`${http.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return samples(await res.text());
  };

  /** Scrapes until `ready` holds of the samples (a payment is captured once its answer was delivered), then returns them. */
  const scrapeWhen = async (ready: (all: Sample[]) => boolean) => {
    for (let i = 0; i < 100; i++) {
      const all = await scrape();
      if (ready(all)) return all;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the metrics never showed the payment captured');
  };

  const post = (f: typeof fetch, body: unknown, headers: Record<string, string> = {}) =>
    f(`${http.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  test('behavior: a paid query on each rail and an API-key query each move their counters by exactly one, and count their latencies', async () => {
    const cases = [
      { name: 'tempo', send: () => post(tempoFetch(sandbox, sandbox.payer.key), { question, rail: 'tempo' }), kind: 'onchain', rail: 'tempo', challenged: 1 },
      { name: 'x402_base', send: () => post(x402Fetch(sandbox, sandbox.payer.key), { question, rail: 'x402_base' }), kind: 'onchain', rail: 'x402_base', challenged: 1 },
      { name: 'api key', send: () => post(fetch, { question, paymentMode: 'credits' }, { 'service-api-key': environment.keys.callerKey }), kind: 'credits', rail: 'none', challenged: 0 },
    ];
    for (const c of cases) {
      const before = await scrape();
      const res = await c.send();
      expect(res.status, c.name).toBe(200);
      const after = await scrapeWhen((all) => total(all, 'profile_edge_charges_total', { kind: c.kind, rail: c.rail }) > total(before, 'profile_edge_charges_total', { kind: c.kind, rail: c.rail }));
      const moved = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);
      expect(moved('profile_edge_charges_total'), c.name).toBe(1);
      expect(moved('profile_edge_charges_total', { kind: c.kind, rail: c.rail }), c.name).toBe(1);
      expect(moved('profile_edge_reversals_total'), c.name).toBe(0);
      expect(moved('profile_edge_queries_total', { transport: 'rest', mode: 'synthesized', outcome: 'answered' }), c.name).toBe(1);
      expect(moved('profile_edge_queries_total', { outcome: 'challenged' }), c.name).toBe(c.challenged);
      expect(moved('profile_edge_http_requests_total', { transport: 'rest', route: '/api/ask/query', status: '200' }), c.name).toBe(1);
      expect(moved('profile_edge_http_requests_total', { route: '/api/ask/query', status: '402' }), c.name).toBe(c.challenged);
      if (c.kind === 'onchain') {
        expect(moved('profile_edge_revenue_usd_total', { rail: c.rail })).toBeCloseTo(0.05, 10);
        for (const state of ['challenged', 'verified', 'settled']) expect(moved('profile_edge_onchain_payments_total', { rail: c.rail, state }), `${c.name} ${state}`).toBe(1);
        for (const state of ['refused', 'released', 'credited', 'reconciled']) expect(moved('profile_edge_onchain_payments_total', { state }), `${c.name} ${state}`).toBe(0);
      } else {
        expect(moved('profile_edge_balance_spent_total', { kind: 'credits', unit: 'credits' })).toBe(10);
        expect(moved('profile_edge_onchain_payments_total')).toBe(0);
      }
      // Histograms: the whole query (the challenge was one too), and each stage of the answer.
      expect(moved('profile_edge_query_duration_seconds_count'), c.name).toBe(1 + c.challenged);
      expect(moved('profile_edge_query_stage_duration_seconds_count', { stage: 'first_stage' }), c.name).toBe(1 + c.challenged);
      expect(moved('profile_edge_query_stage_duration_seconds_count', { stage: 'rerank' }), c.name).toBe(1 + c.challenged);
      expect(moved('profile_edge_query_stage_duration_seconds_count', { stage: 'synthesis' }), c.name).toBe(1);
      expect(moved('profile_edge_query_stage_duration_seconds_count', { stage: 'settlement' }), c.name).toBe(1);
      expect(moved('profile_edge_http_request_duration_seconds_count', { route: '/api/ask/query' }), c.name).toBe(1 + c.challenged);
    }
    // Process metrics are served too.
    expect(total(await scrape(), 'profile_edge_process_resident_memory_bytes')).toBeGreaterThan(0);

    // The operator's picture counts the same answers, with what each rail earned and what the balance paid.
    await environment.services.tally.flush();
    const stats = await Cli.run(environment.env, 'stats', '--json');
    expect(stats.code, stats.stderr).toBe(0);
    const global = JSON.parse(stats.stdout).profiles.find((p: { profile: string }) => p.profile === 'global');
    expect(global.total).toMatchObject({ answered: 3, challenged: 2, refused: 0, failed: 0, revenueUsd: { tempo: 0.05, x402_base: 0.05 }, credits: 10, unlocks: 0 });
    const printed = await Cli.run(environment.env, 'stats');
    expect(printed.stdout).toMatch(/global: 3 answered, 0 unanswered, 2 asked to pay, 0 refused, 0 failed; paid \$0\.05 tempo, \$0\.05 x402_base, 10 credits/);
    // The table's columns add up to the summary's counts, asked to pay apart from refused.
    const lines = printed.stdout.split('\n');
    const at = lines.findIndex((line) => line.startsWith('global: '));
    const [header, ...rest] = lines.slice(at + 1);
    const rows = rest.slice(0, Math.max(0, rest.findIndex((line) => line.trim() === '')) || rest.length);
    const column = (name: string) => rows.reduce((sum, row) => sum + Number(row.slice(header!.indexOf(name)).trim().split(/\s+/)[0]), 0);
    expect(header, printed.stdout).toMatch(/\bday\b.*\banswered\b.*\basked to pay\b.*\brefused\b/);
    expect([column('answered'), column('asked to pay'), column('refused')], printed.stdout).toEqual([3, 2, 0]);
    expect(printed.stdout).toMatch(/█/);
  }, 60_000);

  test('error: /metrics without the token, or with another, is 401 in the Error body and shows nothing', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong-token-wrong-token' }, { authorization: `Basic ${metricsToken}` }, { authorization: `Bearer ${metricsToken}x` }]) {
      const res = await fetch(`${http.url}/metrics`, { headers });
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body).toMatchObject({ error: 'invalid_bearer_token', requestId: res.headers.get('x-request-id') });
      expect(JSON.stringify(body)).not.toContain('profile_edge_');
    }
    const res = await fetch(`${http.url}/metrics`, { method: 'POST', headers: { authorization: `Bearer ${metricsToken}` } });
    expect(res.status).toBe(405);
  });

  test('behavior: a body that cannot be read is answered, logged and counted under the route it was sent to, never as unmatched', async () => {
    const before = samples(await (await fetch(`${http.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text());
    for (const [path, id] of [['/api/ask/query', 'unreadable-rest'], ['/mcp', 'unreadable-mcp']] as const) {
      const res = await fetch(`${http.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, body: '{"question": ' });
      const body = (await res.json()) as Record<string, unknown>;
      expect(JSON.stringify(body)).toContain('invalid_json');
      const line = logLines.map((l) => JSON.parse(l)).find((l) => l.requestId === id && l.message === 'request');
      expect(line, path).toMatchObject({ route: path, status: res.status });
    }
    const after = samples(await (await fetch(`${http.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text());
    const moved = (labels: Record<string, string>) => total(after, 'profile_edge_http_requests_total', labels) - total(before, 'profile_edge_http_requests_total', labels);
    expect(moved({ route: '/api/ask/query', status: '400' })).toBe(1);
    expect(moved({ route: '/mcp' })).toBe(1);
    expect(moved({ route: 'unmatched' })).toBe(0);
  });

  test('behavior: a request id sent in is kept in the header, the error body and the log line; a malformed one is replaced', async () => {
    const sent = 'trace-7f3a.b2:c9';
    const res = await post(fetch, { question: '' }, { 'x-request-id': sent });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toBe(sent);
    expect(await res.json()).toMatchObject({ error: 'missing_question', requestId: sent });
    const line = logLines.map((l) => JSON.parse(l)).find((l) => l.requestId === sent && l.message === 'request');
    expect(line).toMatchObject({ level: 'info', requestId: sent, transport: 'rest', route: '/api/ask/query', status: 400, tool: 'profile_query', outcome: 'refused', ms: expect.any(Number) });
    expect(line).not.toHaveProperty('question');

    for (const malformed of ['has space', '<script>alert(1)</script>', 'x'.repeat(129), '-leading-dash', 'ünïcode']) {
      const refused = await fetch(`${http.url}/api/profiles/nobody-here/channels`, { headers: { 'x-request-id': encodeURI(malformed) === malformed ? malformed : malformed.replace(/[^\x20-\x7e]/g, '?') } });
      const id = refused.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(await refused.json()).toMatchObject({ error: 'not_found', requestId: id });
    }
    // A success carries one too.
    const ok = await fetch(`${http.url}/health`);
    expect(ok.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('behavior: over MCP, an error carries the request id in its data, and the request has one log line with it', async () => {
    const client = new Client({ name: 'ops-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${http.url}/mcp`)));
    try {
      const error = (await client.callTool({ name: 'profile_query', arguments: { question, rail: 'tempo' } }).catch((e: unknown) => e)) as { code: number; data: { requestId: string } };
      expect(error).toMatchObject({ code: -32042, data: { error: 'payment_required', requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) } });
      const lines = logLines.map((l) => JSON.parse(l)).filter((l) => l.requestId === error.data.requestId && l.message === 'request');
      // The JSON-RPC error travels in an HTTP 200, as MCP over HTTP has it.
      expect(lines).toEqual([expect.objectContaining({ transport: 'mcp_http', route: '/mcp', status: 200, tool: 'profile_query', outcome: 'challenged' })]);
    } finally {
      await client.close();
    }
  });

  test('behavior: over stdio, each request gets an id: in the error data and in its log line on stderr', async () => {
    const client = new Client({ name: 'ops-stdio', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: cli.command,
      args: [...cli.args, 'mcp'],
      env: { PATH: process.env.PATH ?? '', ...environment.env, LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
      cwd: environment.directory,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await client.connect(transport);
    try {
      const error = (await client.callTool({ name: 'profile_query', arguments: { question, rail: 'tempo' } }).catch((e: unknown) => e)) as { data: { requestId: string } };
      expect(error).toMatchObject({ code: -32042, data: { requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) } });
      // Other lines may carry the request's id too (the search index it made load): its own line ends the wait.
      const requestLine = () =>
        stderr
          .split('\n')
          .filter((l) => l.startsWith('{') && l.endsWith('}'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.requestId === error.data.requestId && l.message === 'request');
      for (let i = 0; i < 100 && !requestLine(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      const line = requestLine();
      expect(line).toMatchObject({ transport: 'mcp_stdio', route: 'tools/call', status: 402, tool: 'profile_query', outcome: 'challenged' });
    } finally {
      await client.close();
    }
  }, 30_000);

  test('behavior: after 1,000 fuzzed requests every label value comes from a bounded set, and no secret or wallet appears in the metrics or the log', async () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const word = () => Array.from({ length: 1 + Math.floor(random() * 12) }, () => pick([...'abcdefghijklmnopqrstuvwxyz0123456789-_.%~'])).join('');
    const marker = 'QUESTION-MARKER-7d1c';
    const secrets = [...Object.values(environment.keys), metricsToken, sandbox.payer.key, sandbox.payer.key.slice(2), sandbox.payer.address, marker];
    const paths = [
      () => `/api/profiles/${word()}/query`,
      () => `/api/profiles/${word()}/channels`,
      () => `/api/profiles?limit=${word()}`,
      () => '/api/ask/query',
      () => '/api/ask/quote',
      () => `/${word()}/mcp`,
      () => '/mcp',
      () => `/${word()}/i/${word()}?chunks=${word()}`,
      () => `/skill/${word()}`,
      () => `/${word()}/${word()}/${word()}`,
      () => `/%${word()}`,
      () => '/metrics',
      () => '/health',
      () => '/openapi.json',
    ];
    const bodies = [
      () => JSON.stringify({ question: `${marker} ${word()}`, paymentMode: pick(['credits', 'unlocks', 'bogus']) }),
      () => JSON.stringify({ question: `${marker} ${word()}`, rail: pick(['tempo', 'x402_base', word()]) }),
      () => JSON.stringify({ jsonrpc: '2.0', id: 1, method: pick(['tools/call', 'tools/list', word()]), params: { name: 'profile_query', arguments: { question: marker, rail: 'tempo' } } }),
      () => `{${word()}`,
      () => undefined,
    ];
    const requests = Array.from({ length: 1000 }, () => {
      const method = pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']);
      const headers: Record<string, string> = { accept: pick(['application/json', 'text/html', 'application/json, text/event-stream']), 'content-type': 'application/json' };
      if (random() < 0.3) headers['service-api-key'] = pick([environment.keys.callerKey, environment.keys.revokedKey, `pek_${word()}`]);
      if (random() < 0.3) headers.authorization = `Bearer ${pick([environment.keys.sunnivaBearer, metricsToken, word()])}`;
      if (random() < 0.3) headers['x-request-id'] = pick([word(), 'a b c', 'trace-1']);
      if (random() < 0.2) headers['payment-signature'] = sandbox.payer.address;
      const body = method === 'GET' || method === 'HEAD' ? undefined : pick(bodies)();
      return { url: `${http.url}${pick(paths)()}`, method, headers, body };
    });
    for (let i = 0; i < requests.length; i += 20) {
      await Promise.all(requests.slice(i, i + 20).map((r) => fetch(r.url, r).then((res) => res.arrayBuffer()).catch(() => undefined)));
    }
    const exposition = await (await fetch(`${http.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
    const channels = new Set((await environment.peek.column<string>('SELECT id FROM channels')).map(String));
    const routePatterns = new Set([...routes.map((r) => expressPath(r.path)), '/', '/health', '/ready', '/openapi.json', '/SKILL.md', '/skill/*', '/:slug/i/:itemId', '/mcp', '/:slug/mcp', '/metrics', 'unmatched']);
    const bounded: Record<string, (value: string) => boolean> = {
      transport: (v) => ['rest', 'mcp_http', 'mcp_stdio', 'page', 'http'].includes(v),
      method: (v) => ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'].includes(v),
      route: (v) => routePatterns.has(v),
      status: (v) => /^[1-5]\d\d$/.test(v),
      mode: (v) => ['raw', 'synthesized'].includes(v),
      outcome: (v) => ['answered', 'unanswered', 'challenged', 'refused', 'failed'].includes(v),
      confidence: (v) => ['high', 'medium', 'low', 'none'].includes(v),
      // Payment kinds, failure kinds, channel kinds, and prom-client's garbage collection kinds.
      kind: (v) => ['unlock', 'credits', 'onchain', 'error', 'timeout', 'skipped', 'youtube', 'podcast_rss', 'rss', 'notion', 'subtext', 'user_upload', 'minor', 'major', 'incremental', 'weakcb'].includes(v),
      rail: (v) => ['tempo', 'x402_base', 'none'].includes(v),
      state: (v) => ['challenged', 'verified', 'settled', 'refused', 'released', 'credited', 'reconciled'].includes(v),
      stage: (v) => ['first_stage', 'rerank', 'synthesis', 'settlement'].includes(v),
      dependency: (v) => Breaker.dependencies.includes(v as Breaker.Dependency),
      unit: (v) => ['unlocks', 'credits'].includes(v),
      limit: (v) => v === 'quote',
      result: (v) => ['synced', 'unchanged', 'skipped', 'failed'].includes(v),
      channel: (v) => channels.has(v),
      le: (v) => v === '+Inf' || Number.isFinite(Number(v)),
      // prom-client's own process metrics.
      version: () => true,
      major: () => true,
      minor: () => true,
      patch: () => true,
      space: () => true,
      type: () => true,
    };
    const seen = samples(exposition);
    expect(total(seen, 'profile_edge_http_requests_total')).toBeGreaterThanOrEqual(1000);
    for (const sample of seen) {
      for (const [label, value] of Object.entries(sample.labels)) {
        expect(bounded[label], `label ${label} of ${sample.name}`).toBeDefined();
        expect(bounded[label]!(value), `${sample.name}{${label}="${value}"}`).toBe(true);
      }
    }
    const log = logLines.join('\n');
    expect(logLines.length).toBeGreaterThanOrEqual(1000);
    for (const secret of secrets) {
      expect(exposition.toLowerCase()).not.toContain(secret.toLowerCase());
      expect(log.toLowerCase(), 'a secret in the log').not.toContain(secret.toLowerCase());
    }
  }, 120_000);
});

describe('LOG_QUESTIONS', () => {
  test('behavior: with LOG_QUESTIONS=true a query\'s log line holds its question; by default it never does', async () => {
    for (const [setting, logged] of [['true', true], ['false', false]] as const) {
      const logLines: string[] = [];
      const environment = await Environment.create({ LOG_QUESTIONS: setting }, { logLines });
      const http = await Environment.serve(environment);
      try {
        const res = await fetch(`${http.url}/api/ask/query`, { method: 'POST', headers: { 'service-api-key': environment.keys.callerKey }, body: JSON.stringify({ question, paymentMode: 'credits' }) });
        expect(res.status).toBe(200);
        const line = logLines.map((l) => JSON.parse(l)).find((l) => l.message === 'request' && l.route === '/api/ask/query');
        expect(line).toMatchObject({ outcome: 'answered', charge: 'credits', rail: 'none', requestId: res.headers.get('x-request-id') });
        if (logged) expect(line.question).toBe(question);
        else expect(logLines.join('\n')).not.toContain(question);
      } finally {
        await http.close();
        await environment.close();
      }
    }
  });
});

describe('a caller who leaves', () => {
  test('behavior: a request whose client left before its response is logged as 499 caller_left with its id, and counted so', async () => {
    const api = await MessagesApi.start({ kind: 'hang', ms: 3_000 });
    const logLines: string[] = [];
    const environment = await Environment.create({ SYNTHESIZER: 'anthropic', ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: api.url, ANTHROPIC_MAX_RETRIES: '0', METRICS_TOKEN: metricsToken }, { logLines });
    const http = await Environment.serve(environment);
    try {
      const left = await fetch(`${http.url}/api/ask/query`, {
        method: 'POST',
        headers: { 'service-api-key': environment.keys.callerKey, 'x-request-id': 'gone-early-1' },
        body: JSON.stringify({ question, paymentMode: 'credits' }),
        signal: AbortSignal.timeout(500),
      }).catch((error: unknown) => error);
      expect(left).toBeInstanceOf(Error);
      const lineOf = () => logLines.map((l) => JSON.parse(l)).find((l) => l.message === 'request' && l.requestId === 'gone-early-1');
      for (let i = 0; i < 100 && !lineOf(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(lineOf()).toMatchObject({ status: 499, outcome: 'caller_left', route: '/api/ask/query', transport: 'rest' });
      expect(lineOf()).not.toHaveProperty('charge');
      const exposition = await (await fetch(`${http.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
      expect(total(samples(exposition), 'profile_edge_http_requests_total', { route: '/api/ask/query', status: '499' })).toBe(1);
      // What became of its payment: given back, in a line of its own with the same id.
      await environment.services.pending.idle();
      for (let i = 0; i < 200 && total(samples(await environment.services.metrics.render().then((r) => r.body)), 'profile_edge_reversals_total') === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(total(samples((await environment.services.metrics.render()).body), 'profile_edge_reversals_total', { kind: 'credits' })).toBe(1);
    } finally {
      await http.close();
      await environment.close();
      await api.close();
    }
  }, 30_000);
});

/** A free TCP port on loopback. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A GET sent with the headers given, Host included (fetch may not set Host): what a page behind a rebinding sends. */
function getWith(url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    request.on('error', reject);
  });
}

describe('METRICS_PORT', () => {
  test('error: a foreign Host or a foreign browser Origin is 403 with the Error body (DNS rebinding); loopback names are served, and ALLOWED_HOSTS adds names', async () => {
    const served = await MetricsRoute.listen(Metrics.create(), { port: 0, allowed: Config.load({}).allowed });
    const port = new URL(served.url).port;
    try {
      for (const host of [`attacker.example:${port}`, 'attacker.example', `192.168.1.20:${port}`]) {
        const refused = await getWith(served.url, { host });
        expect(refused.status, host).toBe(403);
        expect(refused.headers['content-type']).toMatch(/^application\/json/);
        expect(JSON.parse(refused.body)).toEqual({ error: 'forbidden_host', message: expect.stringContaining('DNS-rebinding protection') });
        expect(refused.body).not.toContain('profile_edge_');
      }
      for (const origin of ['http://attacker.example', `http://localhost:${Number(port) + 1}`, 'null']) {
        const refused = await getWith(served.url, { host: `127.0.0.1:${port}`, origin });
        expect(refused.status, origin).toBe(403);
        expect(JSON.parse(refused.body)).toEqual({ error: 'forbidden_origin', message: expect.stringContaining('DNS-rebinding protection') });
      }
      // A wrong path is refused by the checks first, then is the same 404 as before.
      expect((await getWith(`http://127.0.0.1:${port}/api/profiles`, { host: 'attacker.example' })).status).toBe(403);
      expect(JSON.parse((await getWith(`http://127.0.0.1:${port}/api/profiles`, { host: `127.0.0.1:${port}` })).body)).toEqual({ error: 'not_found', message: 'Only GET /metrics is served here.' });
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `[::1]:${port}`]) {
        const served200 = await getWith(served.url, { host });
        expect(served200.status, host).toBe(200);
        expect(served200.body).toMatch(/^# HELP profile_edge_/m);
      }
      // Its own origin, as a page served from this port would send it; no CORS headers for anyone.
      const own = await getWith(served.url, { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` });
      expect(own.status).toBe(200);
      expect(own.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await new Promise((resolve) => served.server.close(resolve));
    }
    const named = await MetricsRoute.listen(Metrics.create(), { port: 0, allowed: Config.load({ ALLOWED_HOSTS: 'metrics.internal' }).allowed });
    try {
      const port = new URL(named.url).port;
      expect((await getWith(named.url, { host: `metrics.internal:${port}` })).status).toBe(200);
      expect((await getWith(named.url, { host: `localhost:${port}` })).status).toBe(200);
      expect((await getWith(named.url, { host: `attacker.example:${port}` })).status).toBe(403);
    } finally {
      await new Promise((resolve) => named.server.close(resolve));
    }
  });

  test('behavior: serves /metrics on a port of its own, on loopback, and not on the main port', async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-metrics-port-'));
    const metricsPort = await freePort();
    const child = spawn(cli.command, [...cli.args, 'serve', '--port', '0'], {
      env: { ...process.env, DATABASE_PATH: path.join(directory, 'store.db'), DEMO_DATA: 'false', LOG_LEVEL: 'warn', METRICS_PORT: String(metricsPort), METRICS_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start: ${stdout}`)), 30_000);
        child.stdout.on('data', () => /metrics {3}http/.test(stdout) && (clearTimeout(timer), resolve()));
        child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
      });
      const url = /listening on (http:\/\/\S+)/.exec(stdout)![1]!;
      expect(stdout).toContain(`metrics   http://127.0.0.1:${metricsPort}/metrics`);
      const main = await fetch(`${url}/metrics`);
      expect(main.status).toBe(404);
      const own = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(own.status).toBe(200);
      expect(await own.text()).toMatch(/^# HELP profile_edge_/m);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/api/profiles`)).status).toBe(404);
      // It keeps the main port's DNS-rebinding checks.
      expect((await getWith(`http://127.0.0.1:${metricsPort}/metrics`, { host: `attacker.example:${metricsPort}` })).status).toBe(403);
      // Bound to loopback: another address of this machine is refused.
      const other = Object.values(os.networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal);
      if (other) await expect(fetch(`http://${other.address}:${metricsPort}/metrics`)).rejects.toThrow();
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      fs.rmSync(directory, { recursive: true, force: true });
    }
  }, 60_000);
});
