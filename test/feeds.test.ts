import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import * as Html from '../src/ingest/Html.js';
import * as Charset from '../src/ingest/Charset.js';
import * as Feed from '../src/sources/Feed.js';
import * as Shared from './support/Shared.js';

const feedFiles = Shared.fixtures('.', ['.xml', '.rss', '.atom']).filter((f) => !/ytapi_timedtext/.test(f));
/** Fixtures that are deliberately not feeds. */
const notFeeds = new Set(['rss-parser_unrecognized-html-not-feed.rss', 'podcastindex_schema-podcast-example.xml']);
const base = 'https://feeds.example.com/feed.xml';
const read = (relative: string) => Feed.parse(Charset.decode(fs.readFileSync(Shared.fixture(relative))), base);

describe.skipIf(!Shared.hasFixtures)('real-world feeds (../shared/fixtures)', () => {
  test.each(feedFiles.map((f) => [path.basename(f), f]))('behavior: %s parses, or is refused as not a feed', (name, file) => {
    const text = Charset.decode(fs.readFileSync(file));
    if (notFeeds.has(name)) {
      expect(() => Feed.parse(text, base)).toThrow(/Unrecognized feed format/);
      return;
    }
    const feed = Feed.parse(text, base);
    for (const entry of feed.entries) {
      expect(entry.id).not.toBe('');
      if (entry.link !== undefined) expect(entry.link).toMatch(/^https?:\/\//);
      if (entry.publishedAt !== undefined) expect(Number.isFinite(entry.publishedAt)).toBe(true);
    }
  });

  test('behavior: RSS 2.0 sample: titles, canonical links, dates and authors', () => {
    const feed = read('rss/node-feedparser_rss2sample.xml');
    expect(feed.format).toBe('rss');
    expect(feed.entries).toHaveLength(4);
    expect(feed.entries[0]).toMatchObject({
      id: 'http://liftoff.msfc.nasa.gov/2003/06/03.html#item573',
      title: 'Star City',
      link: 'http://liftoff.msfc.nasa.gov/news/2003/news-starcity.asp',
      publishedAt: Date.parse('2003-06-03T09:39:21Z'),
      author: 'Writer',
    });
  });

  test('behavior: declared encodings are honoured (windows-1251, ISO-8859-1) and undeclared cp1252 is repaired', () => {
    expect(read('rss/node-feedparser_iconv-windows-1251.xml').entries[0]!.title).toMatch(/^В Бузулуке главные стройплощадки/);
    expect(read('rss/rss-parser_encoding-iso-8859-1.rss').entries[0]!.title).toMatch(/^Mãe de utente é a nova presidente/);
    expect(read('rss/feedparser_demoronize-cp1252.xml').entries[0]!.summaryHtml).toBe('don’t');
  });

  test('behavior: relative links are resolved against the feed, and full content is kept apart from summaries', () => {
    const relative = read('rss/node-feedparser_relative-urls.xml');
    expect(relative.entries[0]!.link).toBe('https://feeds.example.com/en/games/neverwinter/news/detail/10743874-neverwinter-%26-jingle-jam-humble-bundle%21');
    const encoded = read('rss/rss-parser_content-encoded.rss').entries[0]!;
    expect(encoded).toMatchObject({ title: 'THE CREATIVE FORAGER', author: 'Jeremy Puma' });
    expect(encoded.contentHtml).toMatch(/^<h4>Using Wild Ingredients in the\s+Kitchen<\/h4>/);
  });

  test('behavior: RDF, Atom and YouTube feeds', () => {
    const rdf = read('rss/rss-parser_craigslist-rdf.rss');
    expect(rdf.format).toBe('rdf');
    expect(rdf.entries).toHaveLength(25);
    expect(rdf.entries[0]!.publishedAt).toBe(Date.parse('2017-06-21T10:33:10-07:00'));
    const atom = read('atom/rss-parser_feedburner.atom');
    expect(atom.entries[0]).toMatchObject({ author: 'Google Ads Developer Advisor', publishedAt: Date.parse('2016-06-03T14:38:00Z') });
    expect(atom.entries[0]!.contentHtml).toBeDefined();
    const youtube = read('youtube/capyreader_atom-feed-youtube.xml');
    expect(youtube.entries).toHaveLength(15);
    expect(youtube.entries[0]).toMatchObject({ id: 'yt:video:W_S7iKZZdHw', link: 'https://www.youtube.com/watch?v=W_S7iKZZdHw', author: 'Digital Foundry' });
  });
});

describe.skipIf(!Shared.hasFixtures)('real-world HTML (../shared/fixtures/html)', () => {
  test.each(Shared.fixtures('html', ['.html']).map((f) => [path.basename(f), f]))('behavior: %s gives clean text', (_name, file) => {
    const article = Html.articleFromPage(Charset.decode(fs.readFileSync(file)));
    expect(article.blocks.length).toBeGreaterThan(0);
    const text = article.blocks.map((b) => b.text).join('\n');
    expect(text).not.toMatch(/<\/?(script|style|div|span|p|a)[\s>]/i);
  });

  test('behavior: headings are kept as structure, and page furniture is left out', () => {
    const v8 = Html.articleFromPage(fs.readFileSync(Shared.fixture('html/readability_v8-blog.html'), 'utf8'));
    expect(v8.title).toMatch(/standalone WebAssembly binaries using Emscripten/);
    expect(v8.blocks.filter((b) => b.kind === 'heading').map((b) => b.text)).toContain('Using standalone mode in Emscripten');
    expect(v8.blocks[0]!.text).toMatch(/^Emscripten has always focused first and foremost on compiling to the Web/);
    const wikipedia = Html.articleFromPage(fs.readFileSync(Shared.fixture('html/readability_wikipedia.html'), 'utf8'));
    expect(wikipedia.blocks.some((b) => b.kind === 'heading' && b.text === 'History')).toBe(true);
    expect(wikipedia.blocks.some((b) => b.text.includes(' | '))).toBe(true);
  });
});

describe('feed details', () => {
  test('behavior: titles keep their signs, zone-less dates are UTC, and xml:base scopes an item\'s links', () => {
    expect(Feed.plain('Why 1 < 2 and 3 > 2')).toBe('Why 1 < 2 and 3 > 2');
    expect(Feed.plain('Tags <b>bold</b> &amp; <i class="x">italic</i>')).toBe('Tags bold & italic');
    expect(Feed.dateOf('2025-03-01T10:00:00')).toBe(Date.parse('2025-03-01T10:00:00Z'));
    expect(Feed.dateOf('Tue, 03 Jun 2003 09:39:21 GMT')).toBe(Date.parse('2003-06-03T09:39:21Z'));
    expect(Feed.dateOf('Mon, 01 Jan 2024 10:00:00')).toBe(Date.parse('2024-01-01T10:00:00Z'));
    expect(Feed.dateOf('Mon, 01 Jan 2024 10:00:00 -0500')).toBe(Date.parse('2024-01-01T15:00:00Z'));
    const feed = Feed.parse(
      `<rss version="2.0"><channel><title>T</title><link>https://example.com/</link>
       <item xml:base="https://example.com/first/"><title>First</title><link>first</link></item><item><title>Second</title><link>second</link></item></channel></rss>`,
      'https://example.com/feed.xml',
    );
    expect(feed.entries.map((e) => e.link)).toEqual(['https://example.com/first/first', 'https://example.com/second']);
  });
});

describe('JSON Feed', () => {
  test('behavior: JSON Feed 1.1 items: ids, HTML or text content, dates, authors and relative URLs', () => {
    const feed = Feed.parse(
      JSON.stringify({
        version: 'https://jsonfeed.org/version/1.1',
        title: 'Ada writes',
        home_page_url: 'https://ada.example.com/',
        items: [
          { id: '2', url: '/posts/two', title: 'Two', content_html: '<p>Second <em>post</em>.</p>', date_published: '2025-02-02T10:00:00Z', authors: [{ name: 'Ada' }] },
          { id: '1', title: 'One', content_text: 'First post.', date_published: '2025-01-01T10:00:00Z' },
        ],
      }),
      'https://ada.example.com/feed.json',
    );
    expect(feed.format).toBe('json');
    expect(feed.entries.map((e) => [e.id, e.title, e.link, e.publishedAt, e.author])).toEqual([
      ['2', 'Two', 'https://ada.example.com/posts/two', Date.parse('2025-02-02T10:00:00Z'), 'Ada'],
      ['1', 'One', undefined, Date.parse('2025-01-01T10:00:00Z'), undefined],
    ]);
    expect(feed.entries[0]!.contentHtml).toBe('<p>Second <em>post</em>.</p>');
    expect(feed.entries[1]!.contentText).toBe('First post.');
  });
});

describe('HTML to text', () => {
  test('behavior: headings, lists, tables and line breaks become structured blocks; scripts and forms vanish', () => {
    const doc = Html.fromHtml(
      '<h2>Steps</h2><p>Mix &amp; rest.<br>Then fold.</p><ul><li>Flour</li><li>Water <b>warm</b></li></ul><table><tr><th>g</th><th>%</th></tr><tr><td>500</td><td>100</td></tr></table><script>x()</script><form>Sign up</form>',
    );
    expect(doc.blocks).toEqual([
      { kind: 'heading', text: 'Steps', level: 2 },
      { kind: 'paragraph', text: 'Mix & rest. Then fold.' },
      { kind: 'paragraph', text: '- Flour' },
      { kind: 'paragraph', text: '- Water warm' },
      { kind: 'paragraph', text: 'g | %' },
      { kind: 'paragraph', text: '500 | 100' },
    ]);
  });
});
