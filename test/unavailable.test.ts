import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Environment from './support/Environment.js';
import * as Transports from './support/Transports.js';
import type { Call, Transport, TransportName } from './support/Transports.js';

/**
 * What the tools stand on failing (the search index, the store) is SPEC's 503, "service unavailable", in each tool's
 * own words, on every transport; nothing is charged and the cause is for the operator's log only.
 */

let environment: Environment.Environment;
let http: Awaited<ReturnType<typeof Environment.serve>>;
const transports = new Map<TransportName, Transport>();
const names: TransportName[] = ['handler', 'rest', 'mcp-http'];

beforeAll(async () => {
  environment = await Environment.create({ QUOTE_RATE_LIMIT_PER_MINUTE: '100000' });
  http = await Environment.serve(environment);
  for (const t of [Transports.handler(environment), Transports.rest(http.url), Transports.mcpHttp(http.url)]) transports.set(t.name, t);
});

afterAll(async () => {
  await Promise.all([...transports.values()].map((t) => t.close()));
  await http?.close();
  await environment?.close();
});

/** Runs `call` while `break` has something the tools stand on throw a plain error, then puts it back. */
async function whileBroken(transport: TransportName, call: Call, breakIt: () => () => void) {
  const restore = breakIt();
  try {
    return await transports.get(transport)!.call(call);
  } finally {
    restore();
  }
}

const callerAccount = () => environment.services.store.accounts.get('caller');

describe.each(names)('what the tools stand on failing, over %s', (transport) => {
  const question = { tool: 'profile_query', binding: { kind: 'global' }, args: { question: 'How warm should a sourdough starter be kept?', paymentMode: 'credits' } } as const;

  /** The caller's ledger rows since `afterId`, oldest first. */
  const ledgerSince = async (accountId: string, afterId: number) => (await environment.services.store.ledger.entries({ accountId, limit: 10 })).filter((e) => e.id > afterId).reverse();

  test('error: a search index that cannot be loaded answers a query 503 in its own words, and charges nothing (no hold is taken before the index is loaded)', async () => {
    const { services, keys } = environment;
    const before = await callerAccount();
    const [last] = await services.store.ledger.entries({ accountId: before.id, limit: 1 });
    const outcome = await whileBroken(transport, { ...question, credentials: { apiKey: keys.callerKey } }, () => {
      const [lexicalIndex, indexLoaded] = [services.lexicalIndex, services.indexLoaded];
      // An instance whose index is still to load (or failed to): an earlier test on this one may have loaded it.
      services.indexLoaded = () => false;
      services.lexicalIndex = () => Promise.reject(new Error('the index file is unreadable'));
      return () => Object.assign(services, { lexicalIndex, indexLoaded });
    });
    expect(outcome).toMatchObject({ ok: false, status: 503, body: { error: 'service_unavailable', message: expect.stringMatching(/^Retrieval is unavailable.*nothing stays charged/) } });
    expect(JSON.stringify(outcome)).not.toContain('unreadable');
    expect(await callerAccount()).toEqual(before);
    expect(await ledgerSince(before.id, last?.id ?? 0)).toEqual([]);
  });

  test('error: a loaded search index that fails answers a query 503 in its own words, and charges nothing (the hold taken beside retrieval is given back)', async () => {
    const { services, keys } = environment;
    const index = await services.lexicalIndex();
    const before = await callerAccount();
    const [last] = await services.store.ledger.entries({ accountId: before.id, limit: 1 });
    const outcome = await whileBroken(transport, { ...question, credentials: { apiKey: keys.callerKey } }, () => {
      const original = index.search;
      index.search = () => Promise.reject(new Error('the index file is unreadable'));
      return () => (index.search = original);
    });
    expect(outcome).toMatchObject({ ok: false, status: 503, body: { error: 'service_unavailable', message: expect.stringMatching(/^Retrieval is unavailable.*nothing stays charged/) } });
    expect(JSON.stringify(outcome)).not.toContain('unreadable');
    expect(await callerAccount()).toEqual(before);
    // The balance's debit does not wait for retrieval; the ledger shows it and its reversal, nothing else.
    const since = await ledgerSince(before.id, last?.id ?? 0);
    expect(since).toMatchObject([
      { kind: 'query_charge', creditsDelta: -services.config.pricing.costCredits },
      { kind: 'query_reversal', creditsDelta: services.config.pricing.costCredits, memo: expect.stringContaining('query failed') },
    ]);
    expect(since[1]!.queryId).toBe(since[0]!.queryId);
  });

  test('error: a store that fails under a profile\'s channels answers 503, not 500', async () => {
    const { services } = environment;
    const outcome = await whileBroken(transport, { tool: 'profile_list_channels', binding: { kind: 'profile', slug: 'mara-lindqvist' } }, () => {
      const original = services.store.channels.byProfile;
      services.store.channels.byProfile = () => Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
      return () => (services.store.channels.byProfile = original);
    });
    expect(outcome).toMatchObject({ ok: false, status: 503, body: { error: 'service_unavailable', message: 'The directory is unavailable. Try again shortly.' } });
  });

  test('error: a quote whose limiter fails answers 503, the quote service unavailable', async () => {
    const { services } = environment;
    const outcome = await whileBroken(transport, { tool: 'profile_quote', binding: { kind: 'global' }, args: { rail: 'tempo' } }, () => {
      const original = services.quoteLimiter.take;
      services.quoteLimiter.take = () => Promise.reject(new Error('connection reset'));
      return () => (services.quoteLimiter.take = original);
    });
    expect(outcome).toMatchObject({ ok: false, status: 503, body: { error: 'service_unavailable', message: 'The quote service is unavailable. Try again shortly.' } });
  });

  test('error: a store that fails while the caller\'s key is checked answers 503, before any tool runs', async () => {
    const { services, keys } = environment;
    const outcome = await whileBroken(transport, { tool: 'profile_quote', binding: { kind: 'global' }, args: { rail: 'tempo' }, credentials: { apiKey: keys.callerKey } }, () => {
      const original = services.store.credentials.withHash;
      services.store.credentials.withHash = () => Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
      return () => (services.store.credentials.withHash = original);
    });
    expect(outcome).toMatchObject({ ok: false, status: 503, body: { error: 'service_unavailable', message: expect.stringMatching(/cannot check credentials or profiles/) } });
  });

  test('error: a mistake of this program (a TypeError) is 500 internal_error, not an outage to wait out', async () => {
    const { services } = environment;
    const outcome = await whileBroken(transport, { tool: 'profile_quote', binding: { kind: 'global' }, args: { rail: 'tempo' } }, () => {
      const original = services.quoteLimiter.take;
      services.quoteLimiter.take = () => Promise.reject(new TypeError("Cannot read properties of undefined (reading 'ok')"));
      return () => (services.quoteLimiter.take = original);
    });
    expect(outcome).toMatchObject({ ok: false, status: 500, body: { error: 'internal_error', message: 'Internal error.' } });
    expect(JSON.stringify(outcome)).not.toContain('Cannot read');
  });
});

describe('what an MCP endpoint stands on failing', () => {
  test('error: the profile lookup of a per-profile endpoint failing is 503 on GET and POST, never 500', async () => {
    const { services } = environment;
    const original = services.store.profiles.byHandle;
    services.store.profiles.byHandle = () => Promise.reject(new Error('connection reset'));
    try {
      const manifest = await fetch(`${http.url}/mara-lindqvist/mcp`);
      expect(manifest.status).toBe(503);
      expect(await manifest.json()).toMatchObject({ error: 'service_unavailable' });
      const posted = await fetch(`${http.url}/mara-lindqvist/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
      });
      const body = (await posted.json()) as { id: number; error: { data: Record<string, unknown> } };
      expect(body).toMatchObject({ id: 3, error: { data: { error: 'service_unavailable', status: 503 } } });
    } finally {
      services.store.profiles.byHandle = original;
    }
  });
});
