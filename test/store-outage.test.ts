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

  beforeAll(async () => {
    cluster = await Cluster.create();
    cluster.createDatabase('outage');
    environment = await Environment.create({ DATABASE_URL: cluster.url('outage'), DEMO_DATA: 'false' });
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
  const charges = async () => (await environment.services.store.ledger.entries({ limit: 1000 })).filter((e) => e.kind === 'query_charge').length;

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

    cluster.start();
    await expect.poll(async () => (await ask()).status, { timeout: 20_000, interval: 250 }).toBe(200);
    expect(await (await fetch(`${http.url}/health`)).json()).toMatchObject({ ok: true, dependencies: { database: { ok: true } } });
    // Each answer since the outage was charged once; what was refused while it lasted, not at all.
    const answered = (await charges()) - charged;
    expect(answered).toBeGreaterThanOrEqual(1);
    expect(balance - (await credits())).toBe(answered * cost);
  }, 60_000);
});
