import { describe, expect, test } from 'vitest';
import { useChains, tempoFetch, x402Fetch } from './support/Chains.js';

const served = useChains();
const question = 'How warm should a sourdough starter be?';

const post = (f: typeof fetch, path: string, body: unknown, headers: Record<string, string> = {}) =>
  f(`${served.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('on-chain payment over REST', () => {
  test('tempo: the mppx client pays; the answer comes with a receipt; the payer pays once', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance('tempo');
    const unpaid = await post(fetch, '/api/ask/query', { question, rail: 'tempo' });
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get('www-authenticate')).toMatch(/^Payment /);
    const res = await post(tempoFetch(sandbox, sandbox.payer.key), '/api/ask/query', { question, rail: 'tempo' });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ charge: 'onchain', rail: 'tempo' });
    expect(res.headers.get('payment-receipt')).toBeTruthy();
    expect(before - (await sandbox.balance('tempo'))).toBe(50_000n);
  });

  test('x402_base: @x402/fetch pays; the answer comes with a receipt; the payer pays once', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance('x402_base');
    const unpaid = await post(fetch, '/api/ask/query', { question, rail: 'x402_base' });
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get('payment-required')).toBeTruthy();
    const res = await post(x402Fetch(sandbox, sandbox.payer.key), '/api/ask/query', { question, rail: 'x402_base' });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ charge: 'onchain', rail: 'x402_base' });
    expect(res.headers.get('payment-response')).toBeTruthy();
    expect(before - (await sandbox.balance('x402_base'))).toBe(50_000n);
  });
});
