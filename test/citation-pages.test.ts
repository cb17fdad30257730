import fs from 'node:fs';
import { describe, expect, test } from 'vitest';
import { ItemPage } from '../src/contract/ItemPage.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as Environment from './support/Environment.js';

/** Where a citation's profileUrl points: an HTML page for browsers and JSON for clients, under the profile's access rules. */
const served = Environment.useServed();
const chromium = '/usr/bin/chromium';

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${served.url}${path}`, { headers: { accept: 'application/json', ...headers } });
const query = async (body: Record<string, unknown>, key = served.environment.keys.callerKey) =>
  (await (await fetch(`${served.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', 'service-api-key': key }, body: JSON.stringify({ paymentMode: 'credits', ...body }) })).json()) as any;

/** A long item whose tenth chunk is cited, so a browser must scroll to it. */
async function longItem(): Promise<{ slug: string; itemId: string; chunkId: string }> {
  const { store } = served.environment.services;
  const existing = await store.profiles.byHandle('long-read');
  const profile = existing ?? (await store.profiles.create({ slug: 'long-read', name: 'Long <Read>', visibility: 'unlisted' }));
  const channel = existing ? (await store.channels.byProfile(profile.id))[0]! : await store.channels.create({ profileId: profile.id, kind: 'rss', label: 'Essays', accessLevel: 'public', ratePerMillionTokens: 1 });
  const paragraph = (n: number) => `Paragraph ${n}. ${'The long essay goes on about kilns, glazes and the patience firing asks of a potter. '.repeat(14)}`;
  const { itemId } = await store.items.put(SearchTerms.indexed({
    channelId: channel.id,
    externalId: 'essay',
    title: 'Firing <script>alert(1)</script> slowly',
    sourceUrl: 'https://essays.example.com/firing',
    contentHash: 'essay-v1',
    chunks: Array.from({ length: 12 }, (_, n) => ({ text: paragraph(n) })),
  }));
  const chunkId = (await store.items.withChunks(itemId))!.chunks[10]!.id;
  return { slug: 'long-read', itemId, chunkId };
}

describe('citation pages', () => {
  test('behavior: every citation of an answer, and every raw chunk, resolves to its item with the cited chunk marked', async () => {
    const answer = await query({ question: 'What is anchor sleep?' });
    const raw = await query({ question: 'What is anchor sleep?', mode: 'raw' });
    const urls = [...answer.citations.map((c: any) => [c.profileUrl, c.chunkId]), ...raw.chunks.map((c: any) => [c.profileUrl, c.chunkId])];
    expect(urls.length).toBeGreaterThan(1);
    for (const [url, chunkId] of urls) {
      const res = await get(url);
      expect(res.status, url).toBe(200);
      const page = ItemPage.parse(await res.json());
      expect(page.chunks.find((c) => c.chunkId === chunkId)).toMatchObject({ cited: true });
    }
  });

  test('behavior: the cited chunk comes with its neighbours, deep links for public content, and the item opening when none is named', async () => {
    const { slug, itemId, chunkId } = await longItem();
    const page = ItemPage.parse(await (await get(`/${slug}/i/${itemId}?chunks=${chunkId}`)).json());
    expect(page.chunks.map((c) => c.ordinal)).toEqual([9, 10, 11]);
    expect(page.item).toMatchObject({ title: 'Firing <script>alert(1)</script> slowly', sourceUrl: 'https://essays.example.com/firing', chunkCount: 12 });
    const opening = ItemPage.parse(await (await get(`/${slug}/i/${itemId}`)).json());
    expect(opening.chunks.map((c) => c.ordinal)).toEqual([0, 1, 2, 3, 4]);
    expect(opening.chunks.every((c) => !c.cited)).toBe(true);
  });

  test('error: private content follows the profile’s rules, and unknown or mismatched items are 404', async () => {
    const { keys } = served.environment;
    // Sunniva's profile is private: 404 to anyone else, readable with her key or an authorized partner's.
    const privateAnswer = await query({ question: 'How do we run discovery interviews?', scope: { kind: 'profile', slug: 'sunniva-bratt' } }, keys.sunnivaKey);
    // The link without the signature a paid answer adds (test/signed-links.test.ts): what anyone else may try.
    const url = (privateAnswer.citations[0].profileUrl as string).replace(/&expires=\d+&sig=[\w-]+$/, '');
    expect(url).not.toContain('sig=');
    expect((await get(url)).status).toBe(404);
    expect((await get(url, { 'service-api-key': keys.callerKey })).status).toBe(404);
    const mine = await get(url, { 'service-api-key': keys.sunnivaKey });
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as any).item.sourceUrl).toBeUndefined();
    expect((await get(url, { 'service-api-key': keys.partnerKey })).status).toBe(200);
    expect((await get(url, { 'service-api-key': keys.revokedKey })).status).toBe(401);
    const { itemId } = await longItem();
    expect((await get(`/long-read/i/it_0000000000000000`)).status).toBe(404);
    expect((await get(`/mara-lindqvist/i/${itemId}`)).status).toBe(404);
    expect((await get(`/nobody-here/i/${itemId}`)).status).toBe(404);
    const body = await (await get(`/nobody-here/i/${itemId}`)).json();
    expect(body).toMatchObject({ error: 'not_found', message: expect.any(String) });
  });

  test('behavior: browsers get HTML with every piece of creator text escaped', async () => {
    const { slug, itemId, chunkId } = await longItem();
    const res = await fetch(`${served.url}/${slug}/i/${itemId}?chunks=${chunkId}`, { headers: { accept: 'text/html' } });
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('<h1>Firing &lt;script&gt;alert(1)&lt;/script&gt; slowly</h1>');
    expect(html).toContain('Long &lt;Read&gt;');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain(`<section id="${chunkId}" class="chunk cited">`);
    // Only the page's own style and script may run, nothing loads, nothing frames it, nothing is sniffed.
    const policy = res.headers.get('content-security-policy')!;
    expect(policy).toMatch(/^default-src 'none'; style-src 'sha256-[^']+'; script-src 'sha256-[^']+';/);
    expect(policy).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const json = await get(`/${slug}/i/${itemId}`);
    expect(json.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

const hasChromium = fs.existsSync(chromium);
// eslint-disable-next-line no-console -- say why the browser check did not run
if (!hasChromium) console.warn(`citation-pages.test: ${chromium} is absent, so the browser check is skipped (apt-get install chromium)`);

describe.skipIf(!hasChromium)('a citation page in a real browser (headless Chromium)', () => {
  test('behavior: the cited chunk is highlighted and scrolled into view', async () => {
    const { chromium: launcher } = await import('playwright-core');
    const { slug, itemId, chunkId } = await longItem();
    const browser = await launcher.launch({ executablePath: chromium, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
      await page.goto(`${served.url}/${slug}/i/${itemId}?chunks=${chunkId}`);
      const cited = page.locator(`section[id="${chunkId}"]`);
      await expect.poll(async () => (await cited.boundingBox())?.y ?? -1).toBeGreaterThanOrEqual(0);
      const box = (await cited.boundingBox())!;
      // The page is longer than the window, and the cited chunk sits inside it after loading.
      // Browser-side code as strings: the project compiles without the DOM library.
      expect(await page.evaluate('document.documentElement.scrollHeight')).toBeGreaterThan(700);
      expect(box.y).toBeLessThan(700);
      expect(box.y + Math.min(box.height, 300)).toBeLessThanOrEqual(700);
      expect(await page.evaluate(`getComputedStyle(document.getElementById('${chunkId}')).backgroundColor`)).toBe('rgb(255, 243, 176)');
      // The policy lets the page's own script run and no other: nothing was refused while it loaded.
      const refused: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
      });
      await page.reload();
      await expect.poll(async () => (await cited.boundingBox())?.y ?? -1).toBeGreaterThanOrEqual(0);
      expect(refused).toEqual([]);
      const shot = await page.screenshot();
      expect(shot.length).toBeGreaterThan(5_000);
      // The highlight is on screen: the screenshot of the visible window includes the cited chunk's pixels.
      const clip = await cited.screenshot();
      expect(clip.length).toBeGreaterThan(1_000);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
