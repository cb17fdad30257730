import type { Document } from '../ingest/Document.js';
import { fromPlainText } from '../ingest/Document.js';
import * as Html from '../ingest/Html.js';
import * as Ids from '../store/Ids.js';
import * as Charset from '../ingest/Charset.js';
import { type Connector, type Entry, type SourceItem, type SyncContext, hasRealText, withStandIn } from './Connector.js';
import * as Feed from './Feed.js';
import { type Fetcher, type Validators, mayPass } from './Fetcher.js';
import { httpUrl } from '../ingest/Values.js';

/**
 * Below this many characters of text, a description is a teaser: the article is fetched for its full text. Many RSS
 * 2.0 feeds put whole posts in `description`; those are used as they are.
 */
const summaryLength = 1_000;

const feedAccept = 'application/rss+xml, application/atom+xml, application/feed+json, application/json;q=0.9, application/xml;q=0.9, text/xml;q=0.8, */*;q=0.1';

/** Reads a feed with a conditional request; `undefined` when it has not changed since the validators. */
export async function readFeed(context: SyncContext): Promise<{ feed: Feed.Feed; validators: Validators; warnings: string[] } | undefined> {
  const validators = (context.state.validators as Validators | undefined) ?? {};
  const response = await context.fetcher.get(context.source, { validators, accept: feedAccept });
  if (response.status === 304) return undefined;
  let feed: Feed.Feed;
  const warnings: string[] = [];
  try {
    feed = Feed.parse(Charset.decode(response.body, response.contentType, (note) => warnings.push(`feed: ${note}`)), response.url);
  } catch (error) {
    const type = response.contentType ? ` (${response.contentType.split(';')[0]})` : '';
    throw new Error(`${response.url} is not a feed${type}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { feed, validators: response.validators, warnings: [...warnings, ...feed.collisions] };
}

const summaryOf = (entry: Feed.FeedEntry): Document => (entry.summaryHtml ? Html.fromHtml(entry.summaryHtml) : { blocks: [] });

/** The text of an entry: its full content when the feed carries it; else the article at its link; else its summary. */
async function documentOf(
  entry: Feed.FeedEntry,
  fetcher: Fetcher,
): Promise<{ document: Document; text: 'content' | 'article' | 'summary'; byline?: string | undefined; canonical?: string | undefined }> {
  if (entry.contentHtml) return { document: Html.fromHtml(entry.contentHtml), text: 'content' };
  if (entry.contentText) return { document: fromPlainText(entry.contentText), text: 'content' };
  const summary = summaryOf(entry);
  const summaryText = summary.blocks.reduce((n, b) => n + b.text.length, 0);
  if (summaryText >= summaryLength || !entry.link) return { document: summary, text: summaryText >= summaryLength ? 'content' : 'summary' };
  try {
    const page = await fetcher.get(entry.link, { accept: 'text/html, application/xhtml+xml;q=0.9, */*;q=0.1' });
    if (page.status === 200) {
      const article = Html.articleFromPage(Charset.decode(page.body, page.contentType));
      const articleText = article.blocks.reduce((n, b) => n + b.text.length, 0);
      // The article's own canonical URL (or where the link redirected) beats a feed's tracking link.
      const canonical = httpUrl(article.canonical, page.url) ?? page.url;
      if (articleText > summaryText) return { document: { blocks: article.blocks }, text: 'article', byline: article.byline, canonical };
    }
  } catch (error) {
    // A gone or unreadable article leaves the summary; a passing failure fails the item, to be tried again.
    if (mayPass(error)) throw error;
  }
  return { document: summary, text: 'summary' };
}

/** Blogs and newsletters: RSS 2.0, RDF, Atom and JSON Feed. */
export const connector: Connector = {
  kind: 'rss',
  async list(context) {
    const read = await readFeed(context);
    if (!read) return { unchanged: true, state: context.state };
    const { feed, validators, warnings } = read;
    const entries: Entry[] = feed.entries.map((entry) => ({
      externalId: entry.id,
      version: Ids.fingerprint(JSON.stringify([entry.title, entry.link, entry.publishedAt, entry.author, entry.contentHtml, entry.summaryHtml, entry.contentText])),
      publishedAt: entry.publishedAt,
      load() {
        const item = ({ document, text, byline, canonical }: Awaited<ReturnType<typeof documentOf>>): SourceItem => ({
          title: entry.title ?? document.title ?? entry.link ?? 'Untitled',
          sourceUrl: canonical ?? entry.link,
          publishedAt: entry.publishedAt,
          author: entry.author ?? (byline ? Feed.plain(byline) : undefined),
          document,
          metadata: { format: feed.format, text },
        });
        // An article that fails for a passing reason: a new entry is indexed from its summary meanwhile.
        return withStandIn(async () => item(await documentOf(entry, context.fetcher)), () => item({ document: summaryOf(entry), text: 'summary' }), {
          indexed: hasRealText(context, entry.id),
          passing: mayPass,
        });
      },
    }));
    return { entries, coverage: { kind: 'window' }, state: { validators }, warnings };
  },
};
