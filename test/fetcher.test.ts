import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Charset from '../src/ingest/Charset.js';
import * as Fetcher from '../src/sources/Fetcher.js';
import * as FeedHost from './support/FeedHost.js';

let host: Awaited<ReturnType<typeof FeedHost.start>>;

beforeAll(async () => {
  host = await FeedHost.start();
});
afterAll(() => host.close());

const policy: Fetcher.Policy = {
  allowPrivate: true,
  timeoutMs: 2_000,
  maxBytes: 10_000,
  maxRedirects: 3,
  concurrency: 2,
  retries: 2,
  maxRetryAfterMs: 2_000,
  userAgent: 'profile-edge-test/1',
};
/** The pauses the fetcher asked for, in order: its sleep notes each and goes on at once, so no test waits on a clock. */
const waits: number[] = [];
const fetcher = Fetcher.create({ ...policy, sleep: async (ms) => void waits.push(ms) });

describe('Fetcher', () => {
  test('behavior: sends a clear user agent and returns the body with its validators', async () => {
    host.routes.set('/feed', { body: '<rss/>', lastModified: 'Mon, 02 Jun 2025 10:00:00 GMT' });
    const r = await fetcher.get(`${host.url}/feed`);
    expect(r).toMatchObject({ status: 200, body: Buffer.from('<rss/>'), contentType: 'application/xml', validators: { etag: expect.any(String), lastModified: 'Mon, 02 Jun 2025 10:00:00 GMT' } });
    expect(host.requests.at(-1)!.headers['user-agent']).toBe('profile-edge-test/1');
  });

  test('behavior: a conditional request for unchanged content is a 304 keeping the validators', async () => {
    host.routes.set('/same', { body: 'unchanged' });
    const first = await fetcher.get(`${host.url}/same`);
    const again = await fetcher.get(`${host.url}/same`, { validators: first.validators });
    expect(again).toEqual({ status: 304, url: `${host.url}/same`, validators: first.validators });
    expect(host.requests.at(-1)!.headers['if-none-match']).toBe(first.validators.etag);
  });

  test('behavior: gzip bodies are decompressed', async () => {
    host.routes.set('/gz', { body: 'squeezed text '.repeat(50), gzip: true });
    const r = await fetcher.get(`${host.url}/gz`);
    expect(r.status === 200 && r.body.toString()).toBe('squeezed text '.repeat(50));
  });

  test('behavior: gzip bytes served without Content-Encoding (a feed.xml.gz) are decompressed too, within the size cap', async () => {
    const feed = `<rss version="2.0"><channel><title>Zipped</title>${'<item><title>x</title></item>'.repeat(20)}</channel></rss>`;
    host.routes.set('/feed.xml.gz', { body: zlib.gzipSync(feed), type: 'application/x-gzip' });
    const r = await fetcher.get(`${host.url}/feed.xml.gz`);
    expect(r.status === 200 && r.body.toString()).toBe(feed);
    host.routes.set('/bomb.gz', { body: zlib.gzipSync('x'.repeat(50_000)), type: 'application/octet-stream' });
    await expect(fetcher.get(`${host.url}/bomb.gz`)).rejects.toThrow(/over the 10000-byte limit/);
    // Audio is passed through as it came, whatever its first bytes.
    const audio = zlib.gzipSync('not really audio');
    host.routes.set('/episode.mp3', { body: audio, type: 'audio/mpeg' });
    expect(await fetcher.get(`${host.url}/episode.mp3`)).toMatchObject({ status: 200, body: audio });
  });

  test('behavior: redirects are followed up to the limit', async () => {
    host.routes.set('/moved', { body: '', status: 301, headers: { location: '/feed' } });
    expect(await fetcher.get(`${host.url}/moved`)).toMatchObject({ status: 200, url: `${host.url}/feed` });
    for (let i = 0; i < 5; i++) host.routes.set(`/loop${i}`, { body: '', status: 302, headers: { location: `/loop${i + 1}` } });
    await expect(fetcher.get(`${host.url}/loop0`)).rejects.toThrow(/more than 3 redirects/);
  });

  test('behavior: a 429 with a short Retry-After is waited out for as long as it says, and a 500 is retried after a back-off', async () => {
    waits.length = 0;
    host.routes.set('/busy', { body: 'ok', failFirst: [{ status: 429, headers: { 'retry-after': '1' } }] });
    const before = host.requests.length;
    expect(await fetcher.get(`${host.url}/busy`)).toMatchObject({ status: 200 });
    expect(waits).toEqual([1_000]);
    expect(host.requests.length - before).toBe(2);
    host.routes.set('/flaky', { body: 'ok', failFirst: [{ status: 500 }] });
    expect(await fetcher.get(`${host.url}/flaky`)).toMatchObject({ status: 200 });
    expect(waits).toEqual([1_000, 250]);
  });

  test('error: a long Retry-After fails at once, saying when to come back', async () => {
    waits.length = 0;
    host.routes.set('/later', { body: 'ok', failFirst: [{ status: 429, headers: { 'retry-after': '3600' } }] });
    await expect(fetcher.get(`${host.url}/later`)).rejects.toMatchObject({ message: expect.stringMatching(/rate limited \(429\); retry after 3600 s/), details: { status: 429, retryAfterMs: 3_600_000 } });
    expect(waits).toEqual([]);
  });

  test('error: 404 is not retried, and says it will not pass; a 503 says it may; a name that does not resolve will not', async () => {
    const before = host.requests.length;
    await expect(fetcher.get(`${host.url}/nothing-here`)).rejects.toMatchObject({ details: { status: 404, transient: false } });
    expect(host.requests.length - before).toBe(1);
    host.routes.set('/down', { body: 'x', status: 503 });
    await expect(Fetcher.create({ ...policy, retries: 0 }).get(`${host.url}/down`)).rejects.toMatchObject({ details: { status: 503, transient: true } });
    host.routes.set('/unimplemented', { body: 'x', status: 501 });
    await expect(Fetcher.create({ ...policy, retries: 0 }).get(`${host.url}/unimplemented`)).rejects.toMatchObject({ details: { status: 501, transient: false } });
    // Tests make no DNS lookups: which network errors last is checked on their codes.
    for (const code of ['ENOTFOUND', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID', 'DEPTH_ZERO_SELF_SIGNED_CERT']) expect(Fetcher.lasting(code), code).toBe(true);
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EAI_AGAIN', undefined]) expect(Fetcher.lasting(code), String(code)).toBe(false);
  });

  test('error: bodies over the size cap, truncated bodies and slow hosts fail clearly', async () => {
    host.routes.set('/huge', { body: 'x'.repeat(20_000) });
    await expect(fetcher.get(`${host.url}/huge`)).rejects.toThrow(/over the 10000-byte limit/);
    host.routes.set('/huge-gzip', { body: 'x'.repeat(20_000), gzip: true });
    await expect(fetcher.get(`${host.url}/huge-gzip`)).rejects.toThrow(/over the 10000-byte limit/);
    host.routes.set('/cut', { body: 'y'.repeat(5_000), truncate: true });
    await expect(Fetcher.create({ ...policy, retries: 0 }).get(`${host.url}/cut`)).rejects.toThrow(/cut short/);
    host.routes.set('/slow', { body: 'z', delayMs: 1_500 });
    await expect(Fetcher.create({ ...policy, timeoutMs: 300, retries: 0 }).get(`${host.url}/slow`)).rejects.toThrow(/no complete response within 300 ms/);
  });

  test('behavior: no more requests are in flight than the concurrency allows', async () => {
    host.routes.set('/wait', { body: 'w', delayMs: 100 });
    await Promise.all(Array.from({ length: 6 }, () => fetcher.get(`${host.url}/wait`)));
    expect(host.peakConcurrency).toBe(2);
  });

  test('error: only http(s), and no private or loopback address unless allowed', async () => {
    const strict = Fetcher.create({ ...policy, allowPrivate: false });
    await expect(strict.get('file:///etc/passwd')).rejects.toThrow(/only http and https/);
    await expect(strict.get('ftp://example.com/feed')).rejects.toThrow(/only http and https/);
    await expect(strict.get('not a url')).rejects.toThrow(/is not a URL/);
    await expect(strict.get(`${host.url}/feed`)).rejects.toThrow(/127\.0\.0\.1 is a private address/);
    const port = new URL(host.url).port;
    await expect(strict.get(`http://localhost:${port}/feed`)).rejects.toThrow(/localhost resolves to a private address/);
    await expect(strict.get(`http://[::1]:${port}/feed`)).rejects.toThrow(/private address/);
  });

  test('behavior: addresses are classified as private or public', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::7f00:1', '100.64.0.1', 'garbage']) {
      expect(Fetcher.isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) expect(Fetcher.isPrivateAddress(a), a).toBe(false);
  });

  test('behavior: Retry-After in seconds or as an HTTP date', () => {
    expect(Fetcher.retryAfterMs('120')).toBe(120_000);
    expect(Fetcher.retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('Wed, 21 Oct 2015 07:27:00 GMT'))).toBe(60_000);
    expect(Fetcher.retryAfterMs('soon')).toBeUndefined();
  });
});

describe('Charset', () => {
  test('behavior: decodes by BOM, Content-Type, XML declaration or meta tag, else UTF-8', () => {
    const cp1251 = Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]); // "Привет"
    expect(Charset.decode(cp1251, 'text/xml; charset=windows-1251')).toBe('Привет');
    expect(Charset.decode(Buffer.concat([Buffer.from('<?xml version="1.0" encoding="windows-1251"?>'), cp1251]))).toContain('Привет');
    expect(Charset.decode(Buffer.from('<meta charset="iso-8859-1"><p>caf\xe9</p>', 'latin1'))).toContain('café');
    expect(Charset.decode(Buffer.from('\ufeffplain', 'utf8'))).toBe('plain');
    expect(Charset.decode(Buffer.from('naïve'), 'text/plain; charset=no-such-charset')).toBe('naïve');
    // Not UTF-8 and undeclared: windows-1252, whose 0x80 to 0x9F are punctuation, not control characters.
    expect(Charset.decode(Buffer.from([0x80, 0x20, 0x93, 0x71, 0x94, 0x20, 0x9f]))).toBe('€ “q” Ÿ');
  });

  /** Text in a legacy single- or double-byte encoding, through the inverse of TextDecoder's table. */
  const encode = (text: string, encoding: string): Buffer => {
    const decoder = new TextDecoder(encoding);
    const table = new Map<string, number[]>();
    for (let a = 0; a < 256; a++) table.set(Charset.decode(Buffer.of(a), `text/plain; charset=${encoding}`), [a]);
    if (encoding === 'shift_jis') for (let a = 0x81; a < 0xf0; a++) for (let b = 0x40; b < 0xfd; b++) if (!table.has(decoder.decode(Uint8Array.of(a, b)))) table.set(decoder.decode(Uint8Array.of(a, b)), [a, b]);
    return Buffer.from([...text].flatMap((c) => table.get(c) ?? [0x3f]));
  };

  test.each([
    ['koi8-r', 'Как пережить зиму без потерь: советы садоводам о том, как укрыть розы и сохранить урожай в подвале.'],
    ['windows-1251', 'Как пережить зиму без потерь: советы садоводам о том, как укрыть розы и сохранить урожай в подвале.'],
    ['ibm866', 'Как пережить зиму без потерь: советы садоводам о том, как укрыть розы и сохранить урожай в подвале.'],
    ['iso-8859-7', 'Καλημέρα σας, πώς είστε σήμερα; Η Ελλάδα είναι όμορφη χώρα με πολλά νησιά και βουνά.'],
    ['shift_jis', '東京の天気は晴れです。明日は雨が降るでしょう。傘を持って出かけてください。'],
    ['windows-1252', 'Les œufs à la neige, la crème brûlée et le café « très » élégant, déjà vu.'],
  ])('behavior: undeclared %s is recognised from the bytes, with no warning', (encoding, text) => {
    const warnings: string[] = [];
    const feed = `<rss version="2.0"><channel><item><title>${text}</title></item></channel></rss>`;
    expect(Charset.decode(encode(feed, encoding), 'application/rss+xml', (w) => warnings.push(w))).toBe(feed);
    expect(warnings).toEqual([]);
  });

  test('behavior: Western text a detector half-takes for Central European is read as windows-1252, with a warning', () => {
    const warnings: string[] = [];
    const text = 'Ich möchte gern über die Straße gehen, während es regnet – schön!';
    expect(Charset.decode(encode(text, 'windows-1252'), undefined, (w) => warnings.push(w))).toBe(text);
    expect(warnings).toEqual([expect.stringMatching(/read as windows-1252, guessed from the bytes with confidence 0\.\d\d/)]);
  });

  test('error: bytes no detector is sure of are read as windows-1252, with a warning saying so', () => {
    const warnings: string[] = [];
    expect(Charset.decode(Buffer.from([0x41, 0xe9, 0x42]), undefined, (w) => warnings.push(w))).toBe('AéB');
    expect(warnings).toEqual([expect.stringMatching(/^no charset declared.*windows-1252/)]);
    // Declared or UTF-8 text is never second-guessed.
    expect(Charset.read(encode('Привет', 'koi8-r'), 'text/plain; charset=windows-1251')).toMatchObject({ encoding: 'windows-1251', text: expect.not.stringMatching('Привет') });
    expect(Charset.read(Buffer.from('Привет'))).toEqual({ text: 'Привет', encoding: 'utf-8' });
  });
});
