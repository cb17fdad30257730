import { parseFeed } from 'feedsmith';
import { decodeEntities, squash } from '../ingest/Document.js';
import * as Ids from '../store/Ids.js';
import { type Loose, list, record } from './Loose.js';
import { dateMs, httpUrl } from '../ingest/Values.js';

/** A feed reduced to what connectors use, whatever its format (RSS 0.9x/2.0, RDF, Atom, JSON Feed). */
export type Feed = {
  format: 'rss' | 'atom' | 'rdf' | 'json';
  title: string | undefined;
  link: string | undefined;
  /** The feed's language (RSS `language`, Atom `xml:lang` is not read), e.g. "en-us". */
  language: string | undefined;
  entries: FeedEntry[];
  /** Ids that different entries shared, and how they were kept apart: for the operator, as warnings. */
  collisions: string[];
};

export type FeedEntry = {
  /** The entry's stable id: guid, Atom id, JSON Feed id; else its link; else its title and date. */
  id: string;
  title: string | undefined;
  /** The canonical URL, resolved against the feed's address. */
  link: string | undefined;
  publishedAt: number | undefined;
  author: string | undefined;
  /** The entry's full HTML content (content:encoded, Atom content, content_html), when it carries one. */
  contentHtml: string | undefined;
  /** Its summary or description, HTML. */
  summaryHtml: string | undefined;
  /** Plain text content (JSON Feed content_text). */
  contentText: string | undefined;
  /** The parsed entry as feedsmith gives it, for namespaces a connector reads itself (podcast, itunes, yt, media). */
  raw: Record<string, unknown>;
};

/** A text construct: a string, or Atom's `{ value }`. */
const textOf = (v: unknown): string | undefined => {
  const s = typeof v === 'string' ? v : typeof record(v)?.value === 'string' ? (record(v)!.value as string) : undefined;
  return s === undefined || s.trim() === '' ? undefined : s;
};

/**
 * Plain text of a short HTML or entity-encoded string, such as a title. Only what looks like markup is dropped: a
 * title that reads "1 < 2 and 3 > 2" keeps its signs.
 */
export function plain(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const text = squash(decodeEntities(value.replace(/<\/?[a-z][a-z0-9]*(\s[^<>]*)?\/?>/gi, ' ')));
  return text === '' ? undefined : text;
}

/** Epoch milliseconds of a feed date (a string or a text construct), or undefined. */
export const dateOf = (value: unknown): number | undefined => dateMs(textOf(value));

const first = <T>(...values: (T | undefined)[]): T | undefined => values.find((v) => v !== undefined);

function authorOf(entry: Loose): string | undefined {
  for (const a of list(entry.authors)) {
    const name = typeof a === 'string' ? a : textOf(record(a)?.name) ?? textOf(record(a)?.email);
    if (name) return plain(name);
  }
  const dc = record(entry.dc);
  const creator = first(textOf(list(dc?.creators)[0]), textOf(dc?.creator), textOf(record(entry.itunes)?.author));
  return plain(creator);
}

function atomLink(entry: Loose): string | undefined {
  const links = list(entry.links).map(record).filter((l): l is Loose => l !== undefined);
  const alternate = links.find((l) => l.rel === undefined || l.rel === 'alternate') ?? links[0];
  return textOf(alternate?.href);
}

/**
 * Parses feed text in any format feedsmith reads. Throws with feedsmith's reason for text that is not a feed (an
 * HTML page, an error document).
 */
export function parse(text: string, feedUrl: string): Feed {
  const { format, feed } = parseFeed(text) as { format: Feed['format']; feed: Loose };
  const feedLink = format === 'atom' ? atomLink(feed) : textOf(feed.home_page_url) ?? textOf(feed.link);
  // xml:base on the feed, then on an entry, sets the base its relative links resolve against.
  const feedBase = httpUrl(textOf(record(feed.xml)?.base), feedUrl) ?? feedUrl;
  const base = httpUrl(feedLink, feedBase) ?? feedBase;
  const items = list(format === 'atom' ? feed.entries : feed.items).map(record).filter((e): e is Loose => e !== undefined);
  const entries = items.map((entry): FeedEntry => {
    const dc = record(entry.dc);
    const entryBase = httpUrl(textOf(record(entry.xml)?.base), base) ?? base;
    const link = httpUrl(format === 'atom' ? atomLink(entry) : first(textOf(entry.url), textOf(entry.link), textOf(record(entry.rdf)?.about)), entryBase);
    const title = plain(textOf(entry.title) ?? textOf(list(dc?.titles)[0]));
    const publishedAt = first(
      dateOf(entry.pubDate), dateOf(entry.published), dateOf(entry.date_published), dateOf(list(dc?.dates)[0]), dateOf(dc?.date),
      dateOf(entry.updated), dateOf(entry.date_modified), dateOf(record(entry.atom)?.updated),
    );
    // HTML a publisher escaped once more than the format asks is read as HTML where it is read (Html.fromHtml).
    const contentHtml = first(textOf(record(entry.content)?.encoded), format === 'atom' ? textOf(entry.content) : undefined, textOf(entry.content_html));
    const summaryHtml = first(textOf(entry.description), textOf(entry.summary));
    const guid = textOf(record(entry.guid)?.value) ?? textOf(entry.guid);
    // With no id, link or title, an entry is known by its content.
    const contentId = contentHtml ?? summaryHtml ?? textOf(entry.content_text);
    const id = first(guid, format === 'atom' || format === 'json' ? textOf(entry.id) : undefined, link, title && `${title}|${publishedAt ?? ''}`, contentId && `sha256:${Ids.fingerprint(contentId).slice(0, 32)}`) ?? '';
    return { id: id.trim(), title, link, publishedAt, author: authorOf(entry), contentHtml, summaryHtml, contentText: textOf(entry.content_text), raw: entry };
  });
  const { kept, collisions } = apart(entries.filter((e) => e.id !== ''));
  return { format, title: plain(textOf(feed.title)), link: base, language: plain(textOf(feed.language)), entries: kept, collisions };
}

/** What tells apart entries that share an id: the media file, else the link, else the title and date. */
function distinction(entry: FeedEntry): string {
  const enclosure = list(entry.raw.enclosures).map(record).map((e) => textOf(e?.url)).find(Boolean) ?? textOf(record(entry.raw.enclosure)?.url);
  return enclosure ?? entry.link ?? `${entry.title ?? ''}|${entry.publishedAt ?? ''}`;
}

/**
 * Keeps apart different entries that share an id (a publisher reusing a GUID): each is keyed by its id plus a hash
 * of what tells it apart, so both are indexed. The same entry listed twice (same id and same media or link) stays
 * one, for the sync to take once.
 */
function apart(entries: FeedEntry[]): { kept: FeedEntry[]; collisions: string[] } {
  const byId = new Map<string, Set<string>>();
  for (const e of entries) byId.set(e.id, (byId.get(e.id) ?? new Set()).add(distinction(e)));
  const collisions: string[] = [];
  for (const [id, kinds] of byId) if (kinds.size > 1) collisions.push(`${kinds.size} different entries share the id "${id}"; each is kept, keyed by its id and its media file or link`);
  if (collisions.length === 0) return { kept: entries, collisions };
  const kept = entries.map((e) => (byId.get(e.id)!.size > 1 ? { ...e, id: `${e.id}#${Ids.fingerprint(distinction(e)).slice(0, 12)}` } : e));
  return { kept, collisions };
}
