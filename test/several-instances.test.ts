import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Readiness } from '../src/contract/Contract.js';
import * as Cli from './support/Cli.js';
import * as MessagesApi from './support/MessagesApi.js';
import * as Engines from './support/Engines.js';
import * as FeedHost from './support/FeedHost.js';
import * as Peek from './support/Peek.js';
import * as Served from './support/Served.js';

/**
 * Three `profile-edge serve` processes on one database, as behind a load balancer that sends any request to any of
 * them: limits, content, MCP sessions and money agree across them, and a deploy's stop or a killed process loses no
 * payment.
 */

const children: ChildProcess[] = [];
let database: Awaited<ReturnType<typeof Engines.fresh>>;
let peek: Peek.Peek;
let instances: Served.Served[];
let apiKey: string;
const cli = (...argv: string[]) => Cli.run({ ...database.env, ENVIRONMENT: 'test', LOG_LEVEL: 'silent' }, ...argv);

/** Starts `serve` on the shared database; resolves once it listens. */
function serve(extra: Record<string, string> = {}): Promise<Served.Served> {
  return Served.serve({ ENVIRONMENT: 'test', ...database.env, SYNC_SCHEDULE: 'false', LOG_LEVEL: 'info', INSTANCE_LEASE_SECONDS: '2', ...extra }, children);
}

/** Resolves once `check` holds, asking every 50 ms for up to `ms`. */
async function within<T>(ms: number, check: () => Promise<T | undefined | false>): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const found = await check();
    if (found) return found;
    if (Date.now() > until) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const post = (base: string, route: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', 'service-api-key': apiKey, ...headers }, body: JSON.stringify(body) });
const balance = async () => Number(await peek.value("SELECT credit_balance FROM accounts WHERE name = 'spread'"));

beforeAll(async () => {
  database = await Engines.fresh(Engines.current, 'instances');
  // The first loads the demo dataset; the others find it there.
  instances = [await serve()];
  instances.push(...(await Promise.all([serve(), serve()])));
  peek = await Peek.open(database.env);
  const made = await cli('keys', 'create', '--account', 'spread', '--create', '--credits', '1000', '--json');
  apiKey = (JSON.parse(made.stdout) as { token: string }).token;
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await peek?.close();
  await database?.drop();
});

describe('several instances on one database', () => {
  test('behavior: each registers its lease, and every one is ready once its index is loaded', async () => {
    expect(await peek.value('SELECT count(*) FROM instances')).toBe(3);
    for (const { url } of instances) {
      const ready = await within(10_000, async () => {
        const response = await fetch(`${url}/ready`);
        return response.status === 200 && Readiness.parse(await response.json());
      });
      expect(ready).toMatchObject({ ready: true, draining: false, checks: { database: { ok: true }, index: { ok: true }, rails: {} } });
    }
  });

  test('error: 70 quotes from one caller spread over three instances share one bucket of 60: past it, and what refilled meanwhile, they get 429 with Retry-After', async () => {
    const statuses: number[] = [];
    const retryAfter: (string | null)[] = [];
    const started = Date.now();
    for (let i = 0; i < 70; i++) {
      const response = await post(instances[i % 3]!.url, '/api/ask/quote', {}, { 'x-forwarded-for': '203.0.113.7' });
      statuses.push(response.status);
      retryAfter.push(response.headers.get('retry-after'));
      await response.arrayBuffer();
    }
    // The bucket refills at one a second, so a slow machine sees one more answer for every second the burst took.
    const refilled = Math.ceil((Date.now() - started) / 1000);
    expect(statuses.slice(0, 60).every((s) => s === 200)).toBe(true);
    const answered = statuses.filter((s) => s === 200).length;
    expect(answered).toBeLessThanOrEqual(60 + refilled);
    expect(statuses.filter((s) => s === 429).length).toBe(70 - answered);
    if (refilled < 10) expect(answered).toBeLessThan(70);
    statuses.forEach((status, i) => {
      if (status === 429) expect(Number(retryAfter[i])).toBeGreaterThanOrEqual(1);
    });
  });

  test('behavior: an upload through the CLI is found by queries on every instance at once; a paused channel stops answering on every one', async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-spread-'));
    const file = path.join(directory, 'quince.md');
    fs.writeFileSync(file, '# Quince paste\n\nQuince paste sets when the fruit is cooked for three hours with its own weight in sugar, until it turns deep amber.\n');
    expect((await cli('profiles', 'create', 'orchard', '--name', 'Orchard', '--visibility', 'public')).code).toBe(0);
    const channel = { id: 'ch_orchard_notes' };
    expect((await cli('channels', 'create', '--profile', 'orchard', '--kind', 'user_upload', '--label', 'Notes', '--id', channel.id)).code).toBe(0);
    expect((await cli('upload', '--channel', channel.id, file)).code).toBe(0);
    const question = { question: 'How long is quince paste cooked?', mode: 'raw', paymentMode: 'credits', scope: { kind: 'profile', slug: 'orchard' } };
    const found = async (base: string) => {
      const body = (await (await post(base, '/api/ask/query', question)).json()) as { chunks?: { text: string }[] };
      return (body.chunks ?? []).some((c) => c.text.includes('three hours'));
    };
    for (const { url } of instances) expect(await within(2_000, () => found(url))).toBe(true);
    expect((await cli('channels', 'update', channel.id, '--status', 'paused')).code).toBe(0);
    for (const { url } of instances) expect(await within(2_000, async () => !(await found(url)))).toBe(true);
  });

  test('behavior: one MCP client session spread over the three (initialize on one, tools/list and tools/call on the others)', async () => {
    let next = 0;
    const seen = new Set<string>();
    // A load balancer in miniature: each request of the session goes to the next instance.
    const spread: typeof fetch = (input, init) => {
      const base = instances[next++ % 3]!.url;
      seen.add(base);
      const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
      return fetch(`${base}${url.pathname}${url.search}`, init);
    };
    const client = new Client({ name: 'spread', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${instances[0]!.url}/mcp`), { fetch: spread, requestInit: { headers: { 'service-api-key': apiKey } } }));
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['profile_list_channels', 'profile_query', 'profile_quote']);
    const listed = await client.callTool({ name: 'profile_list_channels', arguments: {} });
    expect(listed.isError).toBeFalsy();
    const answered = await client.callTool({ name: 'profile_query', arguments: { question: 'How warm should a sourdough starter be?', mode: 'raw', paymentMode: 'credits' } });
    expect(answered.isError).toBeFalsy();
    await client.close();
    expect(seen.size).toBe(3);
  });

  test('behavior: a paid query whose instance is killed after charging is given back by another once its lease runs out', async () => {
    const crashing = await serve({ PROFILE_EDGE_CRASH_AT: 'after_hold' });
    const before = await balance();
    await expect(post(crashing.url, '/api/ask/query', { question: 'How warm should a sourdough starter be?', mode: 'raw', paymentMode: 'credits' })).rejects.toThrow();
    expect(await crashing.exited).toBe('SIGKILL');
    // Charged, and never answered.
    expect(await balance()).toBeLessThan(before);
    // A live instance claims the lease once it runs out (2 s here) and gives the charge back.
    await within(10_000, async () => (await balance()) === before);
    const reversal = await peek.get<{ memo: string }>("SELECT memo FROM ledger WHERE kind = 'query_reversal' ORDER BY id DESC LIMIT 1");
    expect(reversal!.memo).toMatch(/by an instance that stopped before answering \(its lease ran out\)/);
    // The claiming instance logs it after its transaction commits: the line can reach the pipe after the balance.
    expect(await within(5_000, async () => instances.some((i) => i.log().includes('instances gone')))).toBe(true);
  }, 30_000);

  test('behavior: SIGTERM makes /ready unready, lets a paid query in flight finish and be charged once, and exits within 30 s', async () => {
    // Claude answers this instance's questions a second and a half after it is asked: the query is in flight when the
    // signal comes.
    const claude = await MessagesApi.start({
      kind: 'reply',
      delayMs: 1_500,
      content: (request) => {
        const doc = MessagesApi.documentOf(request);
        const sentence = doc.text.split(/(?<=\.)\s/)[0]!;
        return [MessagesApi.cited(sentence, doc, sentence)];
      },
    });
    const stopping = await serve({ SYNTHESIZER: 'anthropic', ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: claude.url });
    try {
      await within(10_000, async () => (await fetch(`${stopping.url}/ready`)).status === 200);
      const before = await balance();
      const asked = post(stopping.url, '/api/ask/query', { question: 'How warm should a sourdough starter be?', paymentMode: 'credits' });
      await within(5_000, async () => claude.received.length > 0);
      const started = Date.now();
      stopping.child.kill('SIGTERM');
      const response = await asked;
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ citations: [expect.anything()] });
      expect(await stopping.exited).toBe(0);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(stopping.log()).toContain('shutting down: unready');
      // Charged once, and the charge stands; the instance left its lease.
      expect(await balance()).toBe(before - 10);
      const queryId = await peek.value<string>("SELECT query_id FROM ledger WHERE kind = 'query_charge' ORDER BY id DESC LIMIT 1");
      expect(await peek.value("SELECT count(*) FROM ledger WHERE query_id = ? AND kind = 'query_answered'", queryId)).toBe(1);
      expect(await peek.value('SELECT count(*) FROM instances')).toBe(3);
    } finally {
      await claude.close();
    }
  }, 40_000);

  test('behavior: a sync killed with its instance is resumed by another once the lease is free: every item whole and once, as a single sync writes them', async () => {
    const host = await FeedHost.start();
    try {
      // A dozen posts whose feed holds only a teaser: each article is read from its page, a third of a second each.
      const words = (topic: string) =>
        `<p>${topic} is the subject of this post, with enough words to count as an article: its history, its practice, and what readers asked about ${topic}.</p>`;
      const guids = Array.from({ length: 12 }, (_, i) => `post-${i + 1}`);
      for (const guid of guids) {
        host.routes.set(`/articles/${guid}`, {
          type: 'text/html; charset=utf-8',
          delayMs: 300,
          body: `<html><head><title>${guid}</title></head><body><article><h1>${guid}</h1>${words(`Cider ${guid}`)}${words(`Pressing ${guid}`)}</article></body></html>`,
        });
      }
      const items = guids
        .map((guid, i) => `<item><title>${guid}</title><link>${host.url}/articles/${guid}</link><guid isPermaLink="false">${guid}</guid>
          <pubDate>${new Date(Date.UTC(2025, 0, i + 1)).toUTCString()}</pubDate><description>A teaser.</description></item>`)
        .join('\n');
      host.routes.set('/feed.xml', { type: 'application/rss+xml', body: `<?xml version="1.0"?><rss version="2.0"><channel><title>Cider</title><link>${host.url}/</link>${items}</channel></rss>` });
      expect((await cli('profiles', 'create', 'cider', '--name', 'Cider', '--visibility', 'public')).code).toBe(0);
      for (const id of ['ch_cider_blog', 'ch_cider_reference']) {
        expect((await cli('channels', 'create', '--profile', 'cider', '--kind', 'rss', '--label', id, '--id', id, '--source-url', `${host.url}/feed.xml`)).code).toBe(0);
      }
      // The reference: one sync, by one process, with nothing in its way.
      const fetching = { FETCH_ALLOW_PRIVATE: 'true', FETCH_TIMEOUT_MS: '10000' };
      expect((await Cli.run({ ...database.env, ENVIRONMENT: 'test', LOG_LEVEL: 'silent', ...fetching }, 'sync', '--channel', 'ch_cider_reference')).code).toBe(0);
      expect((await cli('channels', 'update', 'ch_cider_reference', '--status', 'paused')).code).toBe(0);

      const shape = (channel: string) =>
        peek.all<{ external_id: string; chunks: number }>(
          'SELECT i.external_id, count(c.id) AS chunks FROM items i LEFT JOIN chunks c ON c.item_id = i.id WHERE i.channel_id = ? GROUP BY i.external_id ORDER BY i.external_id',
          channel,
        );
      const written = async () => (await shape('ch_cider_blog')).length;
      const status = () => peek.value<string>("SELECT status FROM channels WHERE id = 'ch_cider_blog'");

      // An instance that runs the schedule takes the channel, and is killed part-way through it.
      const first = await serve({ SYNC_SCHEDULE: 'true', ...fetching });
      await within(20_000, async () => (await written()) >= 3);
      first.child.kill('SIGKILL');
      expect(await first.exited).toBe('SIGKILL');
      expect(await status()).toBe('syncing');
      expect(await written()).toBeLessThan(12);

      // Another instance's schedule finds the lease free (its holder is gone) and resumes.
      const second = await serve({ SYNC_SCHEDULE: 'true', ...fetching });
      await within(30_000, async () => (await status()) === 'live');
      expect(second.log()).toContain('sync started');
      const reference = await shape('ch_cider_reference');
      expect(reference).toHaveLength(12);
      expect(reference.every((r) => Number(r.chunks) > 0)).toBe(true);
      expect((await shape('ch_cider_blog')).map((r) => [r.external_id, Number(r.chunks)])).toEqual(reference.map((r) => [r.external_id, Number(r.chunks)]));
      expect(await peek.value("SELECT last_error FROM channels WHERE id = 'ch_cider_blog'")).toBeNull();
    } finally {
      await host.close();
    }
  }, 90_000);
});
