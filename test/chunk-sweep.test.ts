import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import * as Charset from '../src/ingest/Charset.js';
import * as Chunker from '../src/ingest/Chunker.js';
import type { Document } from '../src/ingest/Document.js';
import * as Html from '../src/ingest/Html.js';
import * as Upload from '../src/ingest/Upload.js';
import * as Feed from '../src/sources/Feed.js';
import * as NotionBlocks from '../src/sources/NotionBlocks.js';
import * as Shared from './support/Shared.js';

/**
 * Every fixture, as the connectors read it, chunked as the index stores it: no chunk holds markup (an HTML tag, a
 * comment marker, an escaped entity) or right-to-left text in reversed order. Real-world files from ../shared and
 * the ones made here (test/fixtures) alike.
 */

const ours = path.join(import.meta.dirname, 'fixtures');
const sizes = Chunker.sizes(300);

/** Every file under a folder with one of these extensions. */
function files(folder: string, extensions: string[]): string[] {
  if (!fs.existsSync(folder)) return [];
  return (fs.readdirSync(folder, { recursive: true }) as string[]).map((f) => path.join(folder, f)).filter((f) => extensions.some((e) => f.endsWith(e)) && fs.statSync(f).isFile());
}

const uploads = [...Shared.fixtures('.', ['.pdf', '.html', '.vtt', '.srt']), ...Shared.fixtures('transcripts/json', ['.json']), ...files(ours, ['.pdf', '.html', '.vtt', '.srt'])];
/** Fixtures that are feeds (not the deliberate non-feeds, nor YouTube's timed-text XML). */
const feeds = [...Shared.fixtures('.', ['.xml', '.rss', '.atom']), ...files(path.join(ours, 'feeds'), ['.xml', '.rss', '.atom'])].filter(
  (f) => !/ytapi_timedtext|unrecognized-html-not-feed|schema-podcast-example/.test(f),
);

/** Notion API answers that list blocks (a page's children), as the Notion connector reads them. */
const notionLists = Shared.fixtures('notion', ['.json']).filter((f) => {
  const answer = JSON.parse(fs.readFileSync(f, 'utf8')) as { object?: string; results?: { object?: string }[] };
  return answer.object === 'list' && (answer.results ?? []).some((r) => r.object === 'block');
});

/** The documents a feed's entries become: their content, else their summary, as HTML. */
function feedDocuments(file: string): Document[] {
  const feed = Feed.parse(Charset.decode(fs.readFileSync(file)), 'https://feeds.example.com/feed.xml');
  return feed.entries.map((e) => ({ title: e.title, blocks: [...Html.fromHtml(e.contentHtml ?? e.summaryHtml ?? '').blocks, ...(e.contentText ? [{ kind: 'paragraph' as const, text: e.contentText }] : [])] }));
}

/**
 * An HTML tag as markup leaves it: a closing tag, or an opening one with attributes. A bare `<p>` is how prose
 * mentions an element, and stays.
 */
const tag = /<\/(?:p|br|a|div|span|em|strong|b|i|u|ul|ol|li|h[1-6]|img|blockquote|table|tr|td|th|figure|figcaption|section|article|header|footer|iframe|script|style|html|body|head)\s*>|<(?:p|a|div|span|img|table|td|th|li|ul|ol|section|article|iframe|script|style)\s+[a-z-]+(?:=|\s|>)/i;
const commentMarker = /<!--|-->/;
const entity = /&(?:amp|lt|gt|quot|apos|nbsp|#\d{1,7}|#x[0-9a-f]{1,6});/i;
const presentationForm = /[\ufb50-\ufdff\ufe70-\ufefe]/u;
/**
 * Words that can only be right-to-left text read backwards: Hebrew final letters (ך ם ן ף ץ) stand only at a word's
 * end, and Arabic teh marbuta (ة) and alef maksura (ى) too; a word that starts with one and goes on was reversed.
 */
const reversedWord = /(?<![\p{L}\p{M}])(?:[ךםןףץ]|[ةى])[\p{L}\p{M}]/u;

/**
 * What some fixtures hold as written, and why: code shown as code keeps its characters, entities included; a PDF whose
 * producer wrote its text layer wrong keeps what it wrote.
 */
const asWritten: Record<string, RegExp> = {
  // A <pre> of XML whose data is itself escaped HTML (`&lt;a href=…`): a browser shows those characters too.
  'rss-parser_feedburner.atom': /^an escaped entity: &lt;$/,
  // WeasyPrint 57's own ToUnicode map holds runs of this report reversed, and cut and repeated: poppler reads them so too.
  'weasyprint-report-hebrew.pdf': /^reversed right-to-left text/,
};

/** What is wrong with a chunk's text, if anything. */
function problems(text: string): string[] {
  const found: string[] = [];
  if (tag.test(text)) found.push(`a tag: ${tag.exec(text)![0]}`);
  if (commentMarker.test(text)) found.push('a comment marker');
  if (entity.test(text)) found.push(`an escaped entity: ${entity.exec(text)![0]}`);
  if (presentationForm.test(text)) found.push('presentation forms');
  const reversed = reversedWord.exec(text);
  if (reversed) found.push(`reversed right-to-left text near "${text.slice(Math.max(0, reversed.index - 10), reversed.index + 20)}"`);
  return found;
}

const chunksOf = (documents: Document[]) => documents.flatMap((d) => Chunker.chunk(d, sizes).map((c) => c.text));

describe('every chunk of every fixture reads as the source wrote it', () => {
  test.each(uploads.map((f) => [path.relative(path.dirname(ours), f).replace(/^.*fixtures\//, ''), f]))('behavior: %s', async (_name, file) => {
    const format = Upload.formatOf(file);
    const document = await Upload.parse(fs.readFileSync(file), format, path.basename(file), () => undefined).catch(() => undefined);
    const chunks = chunksOf(document ? [document] : []);
    const allowed = asWritten[path.basename(file)];
    expect(chunks.flatMap((c) => problems(c).filter((p) => !allowed?.test(p)).map((p) => `${p} in "${c.slice(0, 80)}…"`))).toEqual([]);
  });

  test.each(feeds.map((f) => [path.relative(path.dirname(ours), f).replace(/^.*fixtures\//, ''), f]))('behavior: feed %s', (_name, file) => {
    const allowed = asWritten[path.basename(file)];
    const chunks = chunksOf(feedDocuments(file));
    expect(chunks.flatMap((c) => problems(c).filter((p) => !allowed?.test(p)).map((p) => `${p} in "${c.slice(0, 80)}…"`))).toEqual([]);
  });

  test.each(notionLists.map((f) => [path.basename(f), f]))('behavior: Notion blocks %s', (_name, file) => {
    const answer = JSON.parse(fs.readFileSync(file, 'utf8')) as { results: NotionBlocks.NotionBlock[] };
    const chunks = chunksOf([{ blocks: NotionBlocks.toBlocks(answer.results, () => []) }]);
    expect(chunks.flatMap((c) => problems(c).map((p) => `${p} in "${c.slice(0, 80)}…"`))).toEqual([]);
  });

  test('error: the sweep finds each kind of problem', () => {
    expect(problems('<div class="md">text</div>')).toHaveLength(1);
    expect(problems('before <!-- SC_OFF --> after')).toEqual(['a comment marker']);
    expect(problems('Tom &amp; Jerry')).toHaveLength(1);
    expect(problems('שלום םולש')).toHaveLength(1);
    expect(problems('ةسردملا')).toHaveLength(1);
    expect(problems('\ufeb3\ufee0\ufe8e\ufee1')).toHaveLength(1);
    expect(problems('Use the <p> element; שלום עולם; المدرسة الجديدة.')).toEqual([]);
  });
});
