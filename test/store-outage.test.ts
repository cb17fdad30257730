import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Cluster from './support/Cluster.js';
import * as Environment from './support/Environment.js';

const missing = Cluster.unavailable();
// eslint-disable-next-line no-console -- a run should say why the outage suite did not run
if (missing) console.warn(`store-outage.test: ${missing}`);

/** A server on PostgreSQL whose database goes away and comes back, with no restart in between. */
describe.skipIf(missing !== undefined)('a server whose PostgreSQL is lost while it serves', () => {
  let cluster: Cluster.Cluster;
  let environment: Environment.Environment;
  let http: Awaited<ReturnType<typeof Environment.serve>>;
  const logLines: string[] = [];
  const logged = () => logLines.map((line) => JSON.parse(line) as { level: string; message: string; [field: string]: unknown });

  beforeAll(async () => {
    cluster = await Cluster.create();
    cluster.createDatabase('outage');
    environment = await Environment.create({ DATABASE_URL: cluster.url('outage'), DEMO_DATA: 'false' }, { logLines });
    http = await Environment.serve(environment);
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await environment?.close().catch(() => undefined);
    cluster?.destroy();
  });

  const ask = () =>
    fetch(`${http.url}/api/profiles/nadia-ferreira-holm/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'service-api-key': environment.keys.sunnivaKey },
      body: JSON.stringify({ question: 'What is anchor sleep?', paymentMode: 'credits' }),
    });
  const credits = async () => (await environment.services.store.accounts.get('sunniva')).creditBalance;
  // Charges that stand: a query that failed once its hold was taken (retrieval runs beside it) is charged and reversed.
  const charges = async () => {
    const entries = await environment.services.store.ledger.entries({ limit: 1000 });
    const reversed = new Set(entries.filter((e) => e.kind === 'query_reversal').map((e) => e.queryId));
    return entries.filter((e) => e.kind === 'query_charge' && !reversed.has(e.queryId)).length;
  };

  test('behavior: queries get 503 with Retry-After while it is away, nothing is charged, and service resumes by itself', async () => {
    const start = await credits();
    const first = await ask();
    const answer = (await first.json()) as { retrieval: { noRelevantContent: boolean }; citations: unknown[] };
    expect([first.status, answer.retrieval.noRelevantContent, answer.citations.length > 0]).toEqual([200, false, true]);
    const cost = start - (await credits());
    expect(cost).toBeGreaterThan(0);
    const [balance, charged] = [await credits(), await charges()];

    cluster.stop();
    const refused = await ask();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    const body = (await refused.json()) as { error: string; message: string };
    expect(body.error).toBe('service_unavailable');
    expect(body.message).not.toMatch(/127\.0\.0\.1|outage/);
    expect(await (await fetch(`${http.url}/health`)).json()).toMatchObject({ ok: false, dependencies: { database: { ok: false } } });
    // MCP callers get the same failure in JSON-RPC terms, with their request's id, even when the key cannot be checked.
    const rpc = await fetch(`${http.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'service-api-key': environment.keys.sunnivaKey },
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'profile_query', params: { question: 'What is anchor sleep?', paymentMode: 'credits' } }),
    });
    expect(await rpc.json()).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32003, data: { error: 'service_unavailable' } } });
    expect(rpc.headers.get('retry-after')).toBe('5');
    // The operator's log says once which database was lost and why; callers were told neither.
    const lost = logged().filter((line) => line.message.startsWith('database unreachable'));
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ level: 'warn', database: expect.stringMatching(/^PostgreSQL at 127\.0\.0\.1:\d+\/outage: \S/) });
    // What had to wait for the database runs once it is back.
    let waited = 0;
    environment.services.database.whenBack('a test job', async () => void (waited = await credits()));

    cluster.start();
    await expect.poll(async () => (await ask()).status, { timeout: 20_000, interval: 250 }).toBe(200);
    expect(await (await fetch(`${http.url}/health`)).json()).toMatchObject({ ok: true, dependencies: { database: { ok: true } } });
    await expect.poll(() => waited, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(logged().filter((line) => line.message === 'database reachable again')).toHaveLength(1);
    // Each answer since the outage was charged once; what was refused while it lasted, not at all.
    const answered = (await charges()) - charged;
    expect(answered).toBeGreaterThanOrEqual(1);
    expect(balance - (await credits())).toBe(answered * cost);
  }, 60_000);

  test('behavior: a database that stops answering without closing its connections fails health in seconds, and comes back', async () => {
    const healthy = async () => ((await (await fetch(`${http.url}/health`)).json()) as { ok: boolean }).ok;
    expect(await healthy()).toBe(true);
    cluster.freeze();
    try {
      const started = performance.now();
      const health = await fetch(`${http.url}/health`, { signal: AbortSignal.timeout(20_000) });
      expect(await health.json()).toMatchObject({ ok: false, dependencies: { database: { ok: false } } });
      // Bounded by the health check's own deadline, not by TCP giving up (minutes).
      expect(performance.now() - started).toBeLessThan(15_000);
    } finally {
      cluster.thaw();
    }
    await expect.poll(healthy, { timeout: 20_000, interval: 250 }).toBe(true);
  }, 60_000);
});
