import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Readiness } from '../src/contract/Contract.js';
import { useChains } from './support/Chains.js';
import * as Environment from './support/Environment.js';

/** `/ready`, for a load balancer: 200 while this instance should be sent requests, 503 with the reason otherwise. */
describe('readiness', () => {
  let environment: Environment.Environment;
  let http: Awaited<ReturnType<typeof Environment.serve>>;

  beforeAll(async () => {
    // The rails' chains and facilitator are where nothing answers (127.0.0.1:9).
    environment = await Environment.create();
    http = await Environment.serve(environment);
  });

  afterAll(async () => {
    await http?.close();
    await environment?.close();
  });

  const ready = async () => {
    const response = await fetch(`${http.url}/ready`);
    return { status: response.status, body: Readiness.parse(await response.json()) };
  };

  test('behavior: ready once the index is loaded; a rail whose chain does not answer is reported and does not make it unready', async () => {
    await environment.services.lexicalIndex();
    const { status, body } = await ready();
    expect(status).toBe(200);
    expect(body).toMatchObject({ ready: true, draining: false, checks: { database: { ok: true }, index: { ok: true, chunks: expect.any(Number) } } });
    expect(body.checks.index.chunks).toBeGreaterThan(0);
    expect(Object.keys(body.checks.rails).sort()).toEqual(['tempo', 'x402_base']);
    for (const rail of Object.values(body.checks.rails)) expect(rail).toMatchObject({ ok: false, detail: expect.stringMatching(/did not answer/) });
  });

  test('error: while the index loads, /ready answers 503 and says how far the load has got', async () => {
    const { indexLoaded, indexLoading } = environment.services;
    environment.services.indexLoaded = () => false;
    try {
      for (const [loading, percent] of [
        [{ source: 'snapshot', done: 3 << 20, total: 12 << 20 }, 25],
        [{ source: 'rows', done: 8_192, total: 1_000_000 }, 0.8],
      ] as const) {
        environment.services.indexLoading = () => loading;
        expect(await ready()).toMatchObject({ status: 503, body: { ready: false, checks: { index: { ok: false, loading: { ...loading, percent } } } } });
      }
    } finally {
      Object.assign(environment.services, { indexLoaded, indexLoading });
    }
    expect((await ready()).body.checks.index).not.toHaveProperty('loading');
  });

  test('error: a draining instance answers 503, saying so', async () => {
    environment.services.draining = true;
    try {
      expect(await ready()).toMatchObject({ status: 503, body: { ready: false, draining: true } });
    } finally {
      environment.services.draining = false;
    }
  });

  test('error: /ready takes GET only', async () => {
    const response = await fetch(`${http.url}/ready`, { method: 'POST' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
  });
});

describe('readiness with the chains up', () => {
  const chains = useChains();

  test('behavior: each configured rail is ok when its chain (and the x402 facilitator) answers as configured', async () => {
    await chains.environment.services.lexicalIndex();
    const body = Readiness.parse(await (await fetch(`${chains.url}/ready`)).json());
    expect(body.checks.rails).toEqual({ tempo: { ok: true }, x402_base: { ok: true } });
    expect(body.ready).toBe(true);
  });
});
