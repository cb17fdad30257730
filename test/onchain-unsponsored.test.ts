import { expect, test } from 'vitest';
import * as Rails from '../src/payments/Rails.js';
import * as Stores from '../src/store/Store.js';
import { tempoFetch, useChains } from './support/Chains.js';
import * as Engines from './support/Engines.js';

/** A tempo rail without TEMPO_FEE_PAYER_KEY: the payer pays its own gas, and everything that describes the rail says so. */
const served = useChains({}, { feePayer: false });
const question = 'How warm should a sourdough starter be?';
const post = (f: typeof fetch, path: string, body: unknown) => f(`${served.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('behavior: without a fee payer the quote, the 402 and the challenge say the payer pays gas, and the payer does', async () => {
  const { sandbox } = served;
  const missing = (await (await post(fetch, '/api/ask/quote', {})).json()) as { supportedRails: { rail: string; feeSponsored: boolean }[] };
  expect(missing.supportedRails).toEqual([expect.objectContaining({ rail: 'tempo', feeSponsored: false }), expect.objectContaining({ rail: 'x402_base', feeSponsored: true })]);
  const unpaid = (await (await post(fetch, '/api/ask/query', { question, rail: 'tempo' })).json()) as { challenges: { request: { methodDetails: Record<string, unknown> } }[] };
  expect(unpaid.challenges[0]!.request.methodDetails.feePayer).toBeUndefined();

  const payer = await sandbox.newPayer();
  const received = await sandbox.balance('tempo', sandbox.payTo.tempo);
  const res = await post(tempoFetch(sandbox, payer.key), '/api/ask/query', { question, rail: 'tempo' });
  expect(res.status).toBe(200);
  expect(await sandbox.balance('tempo', sandbox.payTo.tempo)).toBe(received + 50_000n);
  // The price, and a gas fee on top, both from the payer.
  expect(await sandbox.balance('tempo', payer.address)).toBeLessThan(10_000_000n - 50_000n);
});

test('behavior: a development server makes its payment secret once and keeps it in its database', async () => {
  const { config, store } = served.environment.services;
  const first = await Rails.secretOf(config, store);
  expect(Buffer.byteLength(first)).toBeGreaterThanOrEqual(32);
  expect(await Rails.secretOf(config, store)).toBe(first);
  // Another database, on this run's engine, makes its own.
  const place = await Engines.fresh(Engines.current, 'other-secret');
  const { store: other } = await Stores.open(place.target);
  try {
    expect(await Rails.secretOf(config, other)).not.toBe(first);
  } finally {
    await other.close();
    await place.drop();
  }
});
