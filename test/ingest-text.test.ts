import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Charset from '../src/ingest/Charset.js';
import * as Upload from '../src/ingest/Upload.js';
import * as Sync from '../src/sources/Sync.js';
import * as FeedHost from './support/FeedHost.js';
import * as Sources from './support/Sources.js';

/**
 * Ingested text is what the source says: feeds in undeclared legacy encodings or gzipped without saying so, HTML
 * escaped twice, entries sharing a GUID, HTML pages' own byline and date.
 */
let host: Awaited<ReturnType<typeof FeedHost.start>>;
let store: Awaited<ReturnType<typeof Sources.store>>;
let counter = 0;

beforeAll(async () => {
  host = await FeedHost.start();
  store = await Sources.store('ingest-text');
});
afterAll(async () => {
  await store.close();
  await host.close();
});

/** Text in a legacy single-byte encoding, through the inverse of its decoding table. */
function encode(text: string, encoding: string): Buffer {
  const table = new Map<string, number>();
  for (let b = 0; b < 256; b++) table.set(Charset.decode(Buffer.of(b), `text/plain; charset=${encoding}`), b);
  return Buffer.from([...text].map((c) => table.get(c) ?? 0x3f));
}

type Item = { guid: string; title: string; description: string; enclosure?: string; link?: string };
const rss = (items: Item[], declaration = '<?xml version="1.0"?>') =>
  `${declaration}<rss version="2.0"><channel><title>Feed</title><link>${host.url}/</link>${items
    .map((i) => `<item><title>${i.title}</title><guid isPermaLink="false">${i.guid}</guid>${i.link ? `<link>${i.link}</link>` : ''}<description>${i.description}</description>${i.enclosure ? `<enclosure url="${i.enclosure}" type="audio/mpeg" length="1"/>` : ''}</item>`)
    .join('')}</channel></rss>`;

/** A channel of the given kind reading a feed served with these bytes and this content type. */
async function channel(kind: 'rss' | 'podcast_rss', body: Buffer | string, type: string): Promise<string> {
  const id = `ch_text_${++counter}`;
  host.routes.set(`/feeds/${id}`, { body, type });
  await store.store.channels.create({ id, profileId: store.profileId, kind, label: id, accessLevel: 'public', ratePerMillionTokens: 1, sourceUrl: `${host.url}/feeds/${id}` });
  return id;
}

const texts = (channelId: string) => store.peek.column<string>('SELECT c.text FROM chunks c JOIN items i ON i.id = c.item_id WHERE i.channel_id = ? ORDER BY i.external_id, c.ordinal', channelId);

describe('feeds read as their publisher wrote them', () => {
  test('behavior: a KOI8-R feed with no declaration anywhere is read as Russian, not as windows-1252 mojibake', async () => {
    const words = 'Как пережить зиму без потерь: укройте розы лапником и проверьте урожай в подвале.';
    const id = await channel('rss', encode(rss([{ guid: 'w1', title: 'Зима в саду', description: words }]), 'koi8-r'), 'application/rss+xml');
    expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 1, failed: 0 });
    expect(await texts(id)).toEqual([words]);
    expect((await store.store.items.byChannel(id))[0]!.title).toBe('Зима в саду');
    expect((await store.store.channels.get(id)).lastError).toBeNull();
  });

  test('error: a guess the detector is unsure of is named on the channel', async () => {
    const words = 'Ich möchte gern über die Straße gehen, während es regnet – schön!';
    const id = await channel('rss', encode(rss([{ guid: 'g1', title: 'Straße', description: words }]), 'windows-1252'), 'text/xml');
    expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 1, failed: 0 });
    expect(await texts(id)).toEqual([words]);
    expect((await store.store.channels.get(id)).lastError).toMatch(/^feed: no charset declared; read as [\w-]+, guessed from the bytes with confidence 0\.\d\d$/);
  });

  test('behavior: a feed of gzip bytes served without Content-Encoding is read', async () => {
    const id = await channel('rss', zlib.gzipSync(rss([{ guid: 'z1', title: 'Zipped', description: 'Compressed but not declared as such.' }])), 'application/x-gzip');
    expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 1, failed: 0 });
    expect(await texts(id)).toEqual(['Compressed but not declared as such.']);
  });

  test('behavior: HTML escaped twice ("&amp;lt;p&amp;gt;") is indexed as text, not as literal tags; escaped text inside stays', async () => {
    const id = await channel('rss', rss([{ guid: 'h1', title: 'Twice', description: '&amp;lt;p&amp;gt;Keep the lid &amp;amp;lt;ajar&amp;amp;gt; while it cools.&amp;lt;/p&amp;gt;&amp;lt;p&amp;gt;Second paragraph.&amp;lt;/p&amp;gt;' }]), 'application/rss+xml');
    expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 1 });
    expect((await texts(id)).join('\n')).toBe('Keep the lid <ajar> while it cools.\n\nSecond paragraph.');
  });

  describe('HTML escaped once more than the feed format asks', () => {
    /** What link-sharing sites' feeds hold: a comment marker, a wrapper, the post, and a byline, escaped twice. */
    const shared = (words: string) =>
      `&amp;lt;!-- SC_OFF --&amp;gt;&amp;lt;div class=&amp;quot;md&amp;quot;&amp;gt;&amp;lt;p&amp;gt;${words}&amp;lt;/p&amp;gt;&amp;lt;/div&amp;gt;&amp;lt;!-- SC_ON --&amp;gt; &amp;amp;#32; submitted by &amp;lt;a href=&amp;quot;https://www.example.com/user/crumb&amp;quot;&amp;gt; /u/crumb &amp;lt;/a&amp;gt;`;
    const markup = /<\/?[a-z][a-z0-9]*[\s>/]|<!--|-->|&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);/i;

    const rssWith = (items: string) => `<?xml version="1.0"?><rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>r/Sourdough</title><link>${host.url}/</link>${items}</channel></rss>`;
    const atomWith = (entries: string) => `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>r/Sourdough</title><id>tag:example.com,2025:sourdough</id><updated>2025-11-03T10:00:00Z</updated>${entries}</feed>`;

    test.each([
      ['RSS description', 'rss', () => rssWith(`<item><title>Warm starter</title><guid>t3_1</guid><description>${shared('My starter sits at 24 &amp;amp;deg;C and doubles in six hours.')}</description></item>`)],
      ['RSS content:encoded', 'rss', () => rssWith(`<item><title>Warm starter</title><guid>t3_2</guid><content:encoded>${shared('My starter sits at 24 &amp;amp;deg;C and doubles in six hours.')}</content:encoded></item>`)],
      ['RSS description in CDATA', 'rss', () => rssWith(`<item><title>Warm starter</title><guid>t3_3</guid><description><![CDATA[&lt;!-- SC_OFF --&gt;&lt;div class="md"&gt;&lt;p&gt;My starter sits at 24 &amp;deg;C and doubles in six hours.&lt;/p&gt;&lt;/div&gt;&lt;!-- SC_ON --&gt; &amp;#32; submitted by &lt;a href="https://www.example.com/user/crumb"&gt; /u/crumb &lt;/a&gt;]]></description></item>`)],
      ['Atom summary', 'atom', () => atomWith(`<entry><title>Warm starter</title><id>t3_4</id><updated>2025-11-03T10:00:00Z</updated><summary type="html">${shared('My starter sits at 24 &amp;amp;deg;C and doubles in six hours.')}</summary></entry>`)],
      ['Atom content', 'atom', () => atomWith(`<entry><title>Warm starter</title><id>t3_5</id><updated>2025-11-03T10:00:00Z</updated><content type="html">${shared('My starter sits at 24 &amp;amp;deg;C and doubles in six hours.')}</content></entry>`)],
      // Plain text first, then the markup, in the same field: the byline ahead of the post.
      [
        'RSS description whose byline comes before the markup',
        'rss',
        () =>
          rssWith(
            `<item><title>Warm starter</title><guid>t3_6</guid><description>&amp;amp;#32; submitted by &amp;lt;a href=&amp;quot;https://www.example.com/user/crumb&amp;quot;&amp;gt; /u/crumb &amp;lt;/a&amp;gt; &amp;lt;br/&amp;gt; &amp;lt;!-- SC_OFF --&amp;gt;&amp;lt;div class=&amp;quot;md&amp;quot;&amp;gt;&amp;lt;p&amp;gt;My starter sits at 24 &amp;amp;deg;C and doubles in six hours.&amp;lt;/p&amp;gt;&amp;lt;/div&amp;gt;</description></item>`,
          ),
      ],
    ])('behavior: %s holding HTML escaped twice is indexed as its text: no tags, comment markers or entities', async (_where, format, body) => {
      const id = await channel('rss', body(), format === 'atom' ? 'application/atom+xml' : 'application/rss+xml');
      expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 1, failed: 0 });
      const text = (await texts(id)).join('\n');
      expect(text).toContain('My starter sits at 24 °C and doubles in six hours.');
      expect(text).toContain('submitted by /u/crumb');
      expect(text).not.toMatch(markup);
    });

    test('behavior: a feed mixing an item escaped twice with one of raw XHTML elements reads each field as what it holds', async () => {
      const id = await channel(
        'rss',
        rssWith(
          `<item><title>Warm starter</title><guid>m1</guid><description>${shared('My starter sits at 24 &amp;amp;deg;C and doubles in six hours.')}</description></item>` +
            `<item><title>Cold retard</title><guid>m2</guid><description><div xmlns="http://www.w3.org/1999/xhtml"><p>Retard the dough <b>overnight</b> at 4 °C.</p></div></description></item>`,
        ),
        'application/rss+xml',
      );
      expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 2, failed: 0 });
      const text = (await texts(id)).join('\n');
      expect(text).toContain('My starter sits at 24 °C and doubles in six hours.');
      expect(text).toContain('Retard the dough overnight at 4 °C.');
      expect(text).not.toMatch(markup);
    });

    test('behavior: prose that mentions a tag, and code that shows markup, stay as written', async () => {
      const id = await channel(
        'rss',
        rssWith(
          `<item><title>Recipe cards</title><guid>p1</guid><description>Use the &amp;lt;p&amp;gt; element for each step of a recipe card.</description></item>` +
            `<item><title>Comments</title><guid>p3</guid><description>A note to yourself in a recipe page's HTML looks like &amp;lt;!-- proof longer in winter --&amp;gt;</description></item>` +
            `<item><title>Stress</title><guid>p4</guid><description>To stress a step, wrap its key word in &amp;lt;em&amp;gt;like this&amp;lt;/em&amp;gt;</description></item>` +
            `<item><title>Markup</title><guid>p2</guid><content:encoded><![CDATA[<p>A step looks like this:</p><pre><code>&lt;p&gt;Fold the dough.&lt;/p&gt;</code></pre>]]></content:encoded></item>`,
        ),
        'application/rss+xml',
      );
      expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 4, failed: 0 });
      const text = (await texts(id)).join('\n');
      expect(text).toContain('Use the <p> element for each step of a recipe card.');
      expect(text).toContain("A note to yourself in a recipe page's HTML looks like <!-- proof longer in winter -->");
      expect(text).toContain('To stress a step, wrap its key word in <em>like this</em>');
      expect(text).toContain('<p>Fold the dough.</p>');
    });
  });

  test('behavior: two episodes sharing a GUID both survive, keyed apart by their audio, and the collision is reported; a true duplicate stays one', async () => {
    const episodes: Item[] = [
      { guid: 'ep-1', title: 'Pruning roses', description: 'Cut above an outward-facing bud.', enclosure: `${host.url}/a/roses.mp3` },
      { guid: 'ep-1', title: 'Dividing hostas', description: 'Split clumps in early spring.', enclosure: `${host.url}/a/hostas.mp3` },
      { guid: 'ep-2', title: 'Mulch', description: 'Mulch after rain.', enclosure: `${host.url}/a/mulch.mp3` },
      { guid: 'ep-2', title: 'Mulch', description: 'Mulch after rain.', enclosure: `${host.url}/a/mulch.mp3` },
    ];
    const id = await channel('podcast_rss', rss(episodes), 'application/rss+xml');
    expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 3, failed: 0 });
    expect((await store.store.items.byChannel(id)).map((i) => i.title).sort()).toEqual(['Dividing hostas', 'Mulch', 'Pruning roses']);
    expect((await store.store.channels.get(id)).lastError).toMatch(/2 different entries share the id "ep-1"; each is kept/);
    // The keys are stable: the next sync changes nothing.
    expect(await Sync.syncChannel(store.deps(), id)).toMatchObject({ created: 0, removed: 0 });
  });
});

describe('uploads keep what the file says about itself', () => {
  test('behavior: an HTML page\'s byline and publication date are the item\'s, unless the uploader says otherwise', async () => {
    const id = `ch_text_${++counter}`;
    await store.store.channels.create({ id, profileId: store.profileId, kind: 'user_upload', label: id, accessLevel: 'public', ratePerMillionTokens: 1 });
    const page = `<!doctype html><html><head><title>Overwintering dahlias</title>
      <meta name="author" content="Ada Lovelace"><meta property="article:published_time" content="2024-03-05T10:00:00Z"></head>
      <body><article><h1>Overwintering dahlias</h1><p>${'Lift the tubers after the first frost blackens the leaves, let them dry upside down, and store them in barely damp compost somewhere cool. '.repeat(3)}</p></article></body></html>`;
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-upload-'));
    const file = path.join(directory, 'dahlias.html');
    fs.writeFileSync(file, page);
    const result = await Upload.ingest(store, { channelId: id, file, chunkTargetTokens: 320 });
    expect(result).toMatchObject({ outcome: 'created', title: 'Overwintering dahlias', warnings: [] });
    expect((await store.store.items.byChannel(id))[0]).toMatchObject({ author: 'Ada Lovelace', publishedAt: Date.parse('2024-03-05T10:00:00Z') });
    await Upload.ingest(store, { channelId: id, file, chunkTargetTokens: 320, metadata: { author: 'A. Lovelace', publishedAt: '2024-03-06' } });
    expect((await store.store.items.byChannel(id))[0]).toMatchObject({ author: 'A. Lovelace', publishedAt: Date.parse('2024-03-06') });
    fs.rmSync(directory, { recursive: true, force: true });
  });
});
