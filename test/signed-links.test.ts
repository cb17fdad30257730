import fs from 'node:fs';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import { ItemPage } from '../src/contract/ItemPage.js';
import * as Log from '../src/log/Logger.js';
import * as SignedLinks from '../src/pages/SignedLinks.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as HttpServer from '../src/transport/http/Server.js';
import * as Environment from './support/Environment.js';
import * as Transports from './support/Transports.js';
import type { Transport, TransportName } from './support/Transports.js';

/**
 * A paid answer's links to private content open in a browser without the caller's key: signed, short-lived and bound
 * to the item. Public links stay as they were.
 */
const chromium = '/usr/bin/chromium';

type Link = { profileUrl: string; itemId: string; chunkId: string };
type Chunk = Link & { accessLevel: 'public' | 'private'; channelId: string };

const signedPattern = /^\/([a-z0-9-]+)\/i\/([^?]+)\?chunks=([^&]+)&expires=(\d+)&sig=([A-Za-z0-9_-]{43})$/;
const canonical = (slug: string, link: Link) => `/${slug}/i/${link.itemId}?chunks=${link.chunkId}`;
/** A link without its signature: what opening it unsigned looks like. */
const unsigned = (url: string) => url.replace(/&expires=\d+&sig=[A-Za-z0-9_-]+$/, '');

/** Asked of owen-halvorsen by its owner, it finds the private members' channel and the public blog alike. */
const owenQuestion = 'What is a wash sale, and how do rebalancing bands work?';
const sunnivaQuestion = 'How do we run discovery interviews?';

describe('SignedLinks', () => {
  const secret = 's'.repeat(40);
  const item = { slug: 'sunniva-bratt', itemId: 'it_one', chunkIds: ['ck_b', 'ck_a'] };

  test('behavior: a signature opens its own item until it expires, on a whole minute at least the TTL away', async () => {
    let now = Date.UTC(2026, 0, 1, 12, 0, 30);
    const links = SignedLinks.create({ secret, ttlSeconds: 3600, now: () => now });
    const { expires, sig } = await links.sign(item);
    expect(expires % 60).toBe(0);
    expect(expires * 1000 - now).toBeGreaterThanOrEqual(3600_000);
    expect(expires * 1000 - now).toBeLessThan(3660_000);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await links.verify({ ...item, expires: String(expires), sig })).toBe('valid');
    now = expires * 1000;
    expect(await links.verify({ ...item, expires: String(expires), sig })).toBe('expired');
  });

  test('error: another item, another profile, another expiry, another key or a malformed signature is invalid', async () => {
    const links = SignedLinks.create({ secret, ttlSeconds: 3600 });
    const { expires, sig } = await links.sign(item);
    const e = String(expires);
    expect(await links.verify({ ...item, itemId: 'it_two', expires: e, sig })).toBe('invalid');
    expect(await links.verify({ ...item, slug: 'owen-halvorsen', expires: e, sig })).toBe('invalid');
    // The passages are part of what is signed (in any order): others, more, fewer or none open nothing.
    expect(await links.verify({ ...item, chunkIds: ['ck_a', 'ck_b'], expires: e, sig })).toBe('valid');
    for (const chunkIds of [['ck_a'], ['ck_a', 'ck_b', 'ck_c'], ['ck_c', 'ck_b'], []]) expect(await links.verify({ ...item, chunkIds, expires: e, sig }), chunkIds.join()).toBe('invalid');
    expect(await links.verify({ ...item, expires: String(expires + 60), sig })).toBe('invalid');
    expect(await SignedLinks.create({ secret: 't'.repeat(40), ttlSeconds: 3600 }).verify({ ...item, expires: e, sig })).toBe('invalid');
    const flipped = `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`;
    for (const bad of [flipped, sig.slice(0, -1), `${sig}A`, `${sig.slice(0, -1)}${sig.at(-1) === 'A' ? 'B' : 'A'}`, '', 'not a signature!']) {
      expect(await links.verify({ ...item, expires: e, sig: bad }), bad).toBe('invalid');
    }
    for (const bad of [undefined, ['1', '2'], '-5', '1e12', '']) expect(await links.verify({ ...item, expires: bad, sig })).toBe('invalid');
    expect(await links.verify({ ...item, expires: e, sig: [sig, sig] })).toBe('invalid');
  });

  test('error: an expiry later than the link lifetime from now, plus the minute it is rounded up by, is invalid even when signed with the key', async () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const links = SignedLinks.create({ secret, ttlSeconds: 3600, now: () => now });
    // Links signed with the same key for longer lives: what a holder of the key could forge.
    const lasting = async (ttlSeconds: number) => {
      const signed = await SignedLinks.create({ secret, ttlSeconds, now: () => now }).sign(item);
      return links.verify({ ...item, expires: String(signed.expires), sig: signed.sig });
    };
    expect(await lasting(3600)).toBe('valid');
    // The latest this signer gives: the lifetime and a whole minute of rounding.
    expect(await lasting(3660)).toBe('valid');
    expect(await lasting(3661)).toBe('invalid');
    expect(await lasting(10 * 365 * 86_400)).toBe('invalid');
    // The largest expiry a request can spell is refused before anything else.
    expect(await links.verify({ ...item, expires: '999999999999', sig: 'A'.repeat(43) })).toBe('invalid');
  });

  test('error: a short CITATION_LINK_SECRET or a TTL out of bounds is refused, without echoing the secret', () => {
    const short = 'x'.repeat(31);
    expect(() => Config.load({ CITATION_LINK_SECRET: short })).toThrow(/CITATION_LINK_SECRET: must be at least 32 characters/);
    try {
      Config.load({ CITATION_LINK_SECRET: short });
    } catch (error) {
      expect((error as Error).message).not.toContain(short);
    }
    expect(() => Config.load({ CITATION_LINK_TTL_SECONDS: '59' })).toThrow(/CITATION_LINK_TTL_SECONDS/);
    expect(() => Config.load({ CITATION_LINK_TTL_SECONDS: '604801' })).toThrow(/CITATION_LINK_TTL_SECONDS/);
    expect(Config.load({}).citationLinks).toEqual({ secret: undefined, ttlSeconds: 3600 });
    expect(Config.load({ CITATION_LINK_SECRET: 'y'.repeat(32), CITATION_LINK_TTL_SECONDS: '60' }).citationLinks).toEqual({ secret: 'y'.repeat(32), ttlSeconds: 60 });
  });
});

describe('paid answers over every transport', () => {
  // No CITATION_LINK_SECRET: the key is kept in the database, so links a stdio server signs open at the HTTP server.
  let environment: Environment.Environment;
  let http: Awaited<ReturnType<typeof Environment.serve>>;
  const transports = new Map<TransportName, Transport>();
  const names: TransportName[] = ['handler', 'rest', 'mcp-http', 'mcp-stdio'];

  beforeAll(async () => {
    environment = await Environment.create();
    http = await Environment.serve(environment);
    for (const t of [Transports.handler(environment), Transports.rest(http.url), Transports.mcpHttp(http.url), Transports.mcpStdio(environment)]) transports.set(t.name, t);
  });
  afterAll(async () => {
    await Promise.all([...transports.values()].map((t) => t.close()));
    await http?.close();
    await environment?.close();
  });

  const ask = async (transport: TransportName, slug: string, args: Record<string, unknown>, apiKey: string) => {
    const outcome = await transports.get(transport)!.call({ tool: 'profile_query', binding: { kind: 'profile', slug }, args: { paymentMode: 'credits', ...args }, credentials: { apiKey } });
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ ok: true });
    return (outcome as Extract<Transports.Outcome, { ok: true }>).payload as any;
  };

  /** Opens a link without any credential and checks it shows the cited chunk of its item. */
  const opensWithoutKey = async (link: Link) => {
    const res = await fetch(`${http.url}${link.profileUrl}`, { headers: { accept: 'application/json' } });
    expect(res.status, link.profileUrl).toBe(200);
    expect(res.headers.get('cache-control')).toBe('private, no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const page = ItemPage.parse(await res.json());
    expect(page.item.itemId).toBe(link.itemId);
    expect(page.chunks.find((c) => c.chunkId === link.chunkId)).toMatchObject({ cited: true });
  };

  test.each(names)('behavior: over %s, raw chunks of a private channel carry a signed link that opens without a key; public ones stay as they were', async (transport) => {
    const raw = await ask(transport, 'owen-halvorsen', { question: owenQuestion, mode: 'raw' }, environment.keys.owenKey);
    const chunks = raw.chunks as Chunk[];
    const members = chunks.filter((c) => c.accessLevel === 'private');
    const open = chunks.filter((c) => c.accessLevel === 'public');
    expect(members.length).toBeGreaterThan(0);
    expect(open.length).toBeGreaterThan(0);
    for (const c of open) expect(c.profileUrl).toBe(canonical('owen-halvorsen', c));
    for (const c of members) {
      const [, slug, itemId, chunkId] = signedPattern.exec(c.profileUrl) ?? [];
      expect([slug, itemId, chunkId], c.profileUrl).toEqual(['owen-halvorsen', c.itemId, c.chunkId]);
      expect(unsigned(c.profileUrl)).toBe(canonical('owen-halvorsen', c));
      await opensWithoutKey(c);
      // The same link without its signature is what it always was: 404 to a caller without a key.
      expect((await fetch(`${http.url}${unsigned(c.profileUrl)}`, { headers: { accept: 'application/json' } })).status).toBe(404);
    }
    // Source groups hold the same chunks with the same links.
    const byChunk = new Map(chunks.map((c) => [c.chunkId, c.profileUrl]));
    for (const group of raw.sourceGroups as { chunks: Chunk[] }[]) for (const c of group.chunks) expect(c.profileUrl).toBe(byChunk.get(c.chunkId));
  });

  test.each(names)('behavior: over %s, a synthesized answer signs its citations of a private channel and no others', async (transport) => {
    const answer = await ask(transport, 'owen-halvorsen', { question: owenQuestion, queryMode: 'summary' }, environment.keys.owenKey);
    const { store } = environment.services;
    const isPrivate = async (c: Link) => (await store.channels.get((await store.items.withChunks(c.itemId))!.channelId)).accessLevel === 'private';
    const citations = answer.citations as Link[];
    const privacy = await Promise.all(citations.map(isPrivate));
    expect(privacy.filter(Boolean).length).toBeGreaterThan(0);
    for (const [i, c] of citations.entries()) {
      if (!privacy[i]) {
        expect(c.profileUrl).toBe(canonical('owen-halvorsen', c));
        continue;
      }
      expect(c.profileUrl).toMatch(signedPattern);
      expect(unsigned(c.profileUrl)).toBe(canonical('owen-halvorsen', c));
      await opensWithoutKey(c);
    }
  });

  test.each(names)('behavior: over %s, citations of a private profile are signed and open without a key', async (transport) => {
    const answer = await ask(transport, 'sunniva-bratt', { question: sunnivaQuestion }, environment.keys.sunnivaKey);
    const citations = answer.citations as Link[];
    expect(citations.length).toBeGreaterThan(0);
    for (const c of citations) {
      expect(c.profileUrl).toMatch(signedPattern);
      expect(unsigned(c.profileUrl)).toBe(canonical('sunniva-bratt', c));
      await opensWithoutKey(c);
    }
  });

  test.each(names)('behavior: over %s, citations of public content are not signed', async (transport) => {
    const answer = await ask(transport, 'nadia-ferreira-holm', { question: 'How long is the caffeine half-life in a healthy adult?' }, environment.keys.callerKey);
    const citations = answer.citations as Link[];
    expect(citations.length).toBeGreaterThan(0);
    for (const c of citations) expect(c.profileUrl).toBe(canonical('nadia-ferreira-holm', c));
  });
});

describe('opening a signed link', () => {
  const secret = 'citation-link-secret-for-tests-0123456789';
  const lines: string[] = [];
  let now = Date.now();
  let environment: Environment.Environment;
  let server: { url: string; server: Server };
  let url: string;
  const signedUrls: string[] = [];

  beforeAll(async () => {
    environment = await Environment.create({ CITATION_LINK_SECRET: secret });
    // The served process, with a clock the tests move and a log they read.
    const services = {
      ...environment.services,
      logger: Log.create({ level: 'debug', write: (l) => lines.push(l) }),
      citationLinks: SignedLinks.create({ secret: environment.services.config.citationLinks.secret!, ttlSeconds: environment.services.config.citationLinks.ttlSeconds, now: () => now }),
    };
    server = await HttpServer.listen(services, { host: '127.0.0.1', port: 0 });
    url = server.url;
  });
  afterAll(async () => {
    if (server) await HttpServer.close(server.server);
    await environment?.close();
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers: { accept: 'application/json', ...headers } });

  /** A fresh paid answer's citations, asked over REST as a browser user's agent would. */
  async function cite(slug: string, question: string, key: string): Promise<Link[]> {
    const res = await fetch(`${url}/api/profiles/${slug}/query`, { method: 'POST', headers: { 'content-type': 'application/json', 'service-api-key': key }, body: JSON.stringify({ question, paymentMode: 'credits' }) });
    expect(res.status).toBe(200);
    const citations = ((await res.json()) as { citations: Link[] }).citations;
    expect(citations.length).toBeGreaterThan(0);
    signedUrls.push(...citations.map((c) => c.profileUrl));
    return citations;
  }

  test('behavior: the link opens for a caller with no key, as JSON and as HTML, and is kept by no cache and sent to no other page', async () => {
    const [c] = await cite('sunniva-bratt', sunnivaQuestion, environment.keys.sunnivaKey);
    const json = await get(c!.profileUrl);
    expect(json.status).toBe(200);
    expect(json.headers.get('cache-control')).toBe('private, no-store');
    expect(json.headers.get('referrer-policy')).toBe('no-referrer');
    const page = ItemPage.parse(await json.json());
    expect(page.item.sourceUrl).toBeUndefined();
    const html = await fetch(`${url}${c!.profileUrl}`, { headers: { accept: 'text/html' } });
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html.headers.get('cache-control')).toBe('private, no-store');
    expect(html.headers.get('referrer-policy')).toBe('no-referrer');
    expect(await html.text()).toContain(`<section id="${c!.chunkId}" class="chunk cited">`);
  });

  test('error: a tampered signature, another item, another expiry or no signature is the same 404 as an unsigned link', async () => {
    const [c] = await cite('sunniva-bratt', sunnivaQuestion, environment.keys.sunnivaKey);
    const [, , itemId, chunkId, expires, sig] = signedPattern.exec(c!.profileUrl)!;
    // Each refusal has its own request id; everything else is the same.
    const withoutId = (value: unknown) => {
      const { requestId: _id, ...body } = value as Record<string, unknown>;
      return body;
    };
    const refusal = withoutId(await (await get(unsigned(c!.profileUrl))).json());
    expect(refusal).toMatchObject({ error: 'not_found' });
    const other = (await environment.services.store.items.byChannel('ch_sunniva_uploads')).concat(await environment.services.store.items.byChannel('ch_sunniva_notion')).find((i) => i.id !== itemId)!;
    const flipped = `${sig!.slice(0, 5)}${sig![5] === 'A' ? 'B' : 'A'}${sig!.slice(6)}`;
    for (const path of [
      `/sunniva-bratt/i/${itemId}?chunks=${chunkId}&expires=${expires}&sig=${flipped}`,
      `/sunniva-bratt/i/${itemId}?chunks=${chunkId}&expires=${Number(expires) + 60}&sig=${sig}`,
      `/sunniva-bratt/i/${other.id}?expires=${expires}&sig=${sig}`,
      `/sunniva-bratt/i/${itemId}?chunks=${chunkId}&sig=${sig}`,
      `/sunniva-bratt/i/${itemId}?chunks=${chunkId}&expires=${expires}`,
      `/sunniva-bratt/i/${itemId}?chunks=${chunkId}`,
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(withoutId(await res.json()), path).toEqual(refusal);
      expect(res.headers.get('cache-control')).toBe('private, no-store');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
    // The cited chunks are signed: the link without them, or naming others, opens nothing.
    const others = (await environment.services.store.items.withChunks(itemId!))!.chunks.map((k) => k.id).filter((id) => id !== chunkId);
    for (const path of [`/sunniva-bratt/i/${itemId}?expires=${expires}&sig=${sig}`, `/sunniva-bratt/i/${itemId}?chunks=${[chunkId, ...others].join(',')}&expires=${expires}&sig=${sig}`]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(withoutId(await res.json()), path).toEqual(refusal);
    }
    // A link made with the key itself but for a far-future expiry (a year) opens nothing either.
    const forged = await SignedLinks.create({ secret, ttlSeconds: 365 * 86_400, now: () => now }).sign({ slug: 'sunniva-bratt', itemId: itemId!, chunkIds: [chunkId!] });
    const res = await get(`/sunniva-bratt/i/${itemId}?chunks=${chunkId}&expires=${forged.expires}&sig=${forged.sig}`);
    expect(res.status).toBe(404);
    expect(withoutId(await res.json())).toEqual(refusal);
  });

  test('behavior: a signed link shows the passages it cites and their neighbours, never the rest of the item; a caller who may read the item opens any passage', async () => {
    const { store } = environment.services;
    const channel = await store.channels.get('ch_sunniva_uploads');
    const chunks = Array.from({ length: 9 }, (_, n) => ({ text: `Passage ${n + 1} of a long private interview guide, with its own words.` }));
    const { itemId } = await store.items.put(SearchTerms.indexed({ channelId: channel.id, externalId: 'long-guide', title: 'A long private guide', contentHash: 'v1', chunks }));
    const ids = (await store.items.withChunks(itemId))!.chunks.map((k) => k.id);
    const links = SignedLinks.create({ secret, ttlSeconds: 3600, now: () => now });
    const cited = [ids[4]!];
    const path = SignedLinks.withSignature(`/sunniva-bratt/i/${itemId}?chunks=${cited.join(',')}`, await links.sign({ slug: 'sunniva-bratt', itemId, chunkIds: cited }));
    try {
      const page = ItemPage.parse(await (await get(path)).json());
      expect(page.chunks.map((k) => k.chunkId)).toEqual([ids[3], ids[4], ids[5]]);
      expect(page.chunks.filter((k) => k.cited).map((k) => k.chunkId)).toEqual(cited);
      const html = await (await fetch(`${url}${path}`, { headers: { accept: 'text/html' } })).text();
      for (const [n, id] of ids.entries()) expect(html.includes(`id="${id}"`), id).toBe(n >= 3 && n <= 5);
      // Whoever may read the item opens any passage of it, with the link or without.
      const reader = { 'service-api-key': environment.keys.partnerKey };
      const all = ItemPage.parse(await (await get(`/sunniva-bratt/i/${itemId}?chunks=${ids[0]},${ids[8]}`, reader)).json());
      expect(all.chunks.map((k) => k.chunkId)).toEqual([ids[0], ids[1], ids[7], ids[8]]);
      expect(ItemPage.parse(await (await get(`/sunniva-bratt/i/${itemId}`, reader)).json()).chunks).toHaveLength(5);
      // A reader who also holds the link sees what it cites, as without it.
      expect(ItemPage.parse(await (await get(path, reader)).json()).chunks.map((k) => k.chunkId)).toEqual([ids[3], ids[4], ids[5]]);
    } finally {
      await store.items.remove(itemId);
    }
  });

  test('error: an expired link is 404 saying it expired; a caller who may read the item still opens it', async () => {
    const [c] = await cite('sunniva-bratt', sunnivaQuestion, environment.keys.sunnivaKey);
    const expires = Number(signedPattern.exec(c!.profileUrl)![4]);
    const started = now;
    try {
      now = expires * 1000 - 1;
      expect((await get(c!.profileUrl)).status).toBe(200);
      now = expires * 1000;
      const res = await get(c!.profileUrl);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'not_found', message: expect.stringMatching(/expired.*fresh link/) });
      expect((await get(c!.profileUrl, { 'service-api-key': environment.keys.partnerKey })).status).toBe(200);
      expect((await get(c!.profileUrl, { 'service-api-key': environment.keys.callerKey })).status).toBe(404);
    } finally {
      now = started;
    }
  });

  test('error: a private channel of a public profile: signed links open until the channel is paused or the item deleted', async () => {
    const res = await fetch(`${url}/api/profiles/owen-halvorsen/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'service-api-key': environment.keys.owenKey },
      body: JSON.stringify({ question: owenQuestion, mode: 'raw', paymentMode: 'credits' }),
    });
    const members = ((await res.json()) as { chunks: Chunk[] }).chunks.filter((c) => c.channelId === 'ch_owen_members');
    expect(members.length).toBeGreaterThan(0);
    const [first] = members;
    signedUrls.push(first!.profileUrl);
    expect((await get(first!.profileUrl)).status).toBe(200);
    const { store } = environment.services;
    await store.channels.update('ch_owen_members', { status: 'paused' });
    try {
      expect((await get(first!.profileUrl)).status).toBe(404);
    } finally {
      await store.channels.update('ch_owen_members', { status: 'live' });
    }
    expect((await get(first!.profileUrl)).status).toBe(200);
    // A link signed for an item that is then deleted opens nothing.
    const channel = await store.channels.get('ch_owen_members');
    const { itemId } = await store.items.put(SearchTerms.indexed({ channelId: channel.id, externalId: 'short-lived', title: 'Short-lived note', contentHash: 'v1', chunks: [{ text: 'A members-only note that is about to be deleted.' }] }));
    const links = SignedLinks.create({ secret, ttlSeconds: 3600, now: () => now });
    const { chunks: [only] } = (await store.items.withChunks(itemId))!;
    const path = SignedLinks.withSignature(`/owen-halvorsen/i/${itemId}?chunks=${only!.id}`, await links.sign({ slug: 'owen-halvorsen', itemId, chunkIds: [only!.id] }));
    expect((await get(path)).status).toBe(200);
    // A signature names the item under its own profile only.
    expect((await get(path.replace('/owen-halvorsen/', '/mara-lindqvist/'))).status).toBe(404);
    await store.items.remove(itemId);
    expect((await get(path)).status).toBe(404);
  });

  test('behavior: neither the secret nor a link’s signature is ever written to the log', () => {
    expect(lines.length).toBeGreaterThan(0);
    expect(signedUrls.length).toBeGreaterThan(0);
    const log = lines.join('\n');
    expect(log).not.toContain(secret);
    for (const link of signedUrls) expect(log).not.toContain(signedPattern.exec(link)![5]);
  });

  const hasChromium = fs.existsSync(chromium);
  // eslint-disable-next-line no-console -- say why the browser check did not run
  if (!hasChromium) console.warn(`signed-links.test: ${chromium} is absent, so the browser check is skipped (apt-get install chromium)`);

  test.skipIf(!hasChromium)('behavior: a browser with no key opens the signed link, and shows the cited chunk', async () => {
    const [c] = await cite('sunniva-bratt', sunnivaQuestion, environment.keys.sunnivaKey);
    const { chromium: launcher } = await import('playwright-core');
    const browser = await launcher.launch({ executablePath: chromium, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    try {
      const page = await browser.newPage();
      const response = await page.goto(`${url}${c!.profileUrl}`);
      expect(response?.status()).toBe(200);
      const cited = page.locator(`section[id="${c!.chunkId}"]`);
      await expect.poll(async () => cited.getAttribute('class')).toBe('chunk cited');
      expect(await page.evaluate(`getComputedStyle(document.getElementById('${c!.chunkId}')).backgroundColor`)).toBe('rgb(255, 243, 176)');
      // Without the signature the browser gets the refusal every caller without a key gets.
      const refused = await page.goto(`${url}${unsigned(c!.profileUrl)}`);
      expect(refused?.status()).toBe(404);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
