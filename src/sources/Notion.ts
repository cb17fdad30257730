import { setTimeout as timer } from 'node:timers/promises';
import { APIErrorCode, APIResponseError, Client, DEFAULT_INITIAL_RETRY_DELAY_MS, LogLevel, iteratePaginatedAPI } from '@notionhq/client';
import type { Block, Document } from '../ingest/Document.js';
import * as Ids from '../store/Ids.js';
import type { Connector, Entry, SyncContext } from './Connector.js';
import { retryAfterMs } from './Fetcher.js';
import { type NotionBlock, nested, pageTitle, propertyLines, toBlocks } from './NotionBlocks.js';
import type { Loose } from './Loose.js';


export const defaultBaseUrl = 'https://api.notion.com';
/** The environment variable holding a channel's integration token unless its `tokenVariable` setting names another. */
export const defaultTokenVariable = 'NOTION_TOKEN';
/** A walk stops here: a workspace this large should be split over channels. */
const maxPages = 5_000;

/** The page, database or data source id in a Notion URL or an id as given (32 hex digits, dashed or not). */
export function idOf(source: string): string | undefined {
  const hex = /([0-9a-f]{32})(?:[?#]|$)/i.exec(source.replace(/-/g, ''))?.[1];
  return hex && `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`.toLowerCase();
}

type Walked = { page: Loose; blocks: NotionBlock[]; children: Map<string, NotionBlock[]> };

/** Waits out a pause before a retry. */
type Sleep = (ms: number) => Promise<void>;

/** Further tries of one API call, and the longest pause before one (a longer Retry-After is cut to it). */
const maxRetries = 3;
const maxRetryDelayMs = 30_000;

/** Answers worth another try, as the official client judges them: rate limits and overloads always, server errors of a GET. */
function retryable(error: unknown, get: boolean): error is APIResponseError {
  if (!APIResponseError.isAPIResponseError(error)) return false;
  if (error.code === APIErrorCode.RateLimited || error.code === APIErrorCode.ServiceOverload) return true;
  return get && (error.code === APIErrorCode.InternalServerError || error.code === APIErrorCode.ServiceUnavailable);
}

const retryAfterOf = (error: APIResponseError): string | undefined => {
  const headers = error.headers;
  if (headers instanceof Headers) return headers.get('retry-after') ?? undefined;
  const value = (headers as Record<string, unknown> | undefined)?.['retry-after'];
  return typeof value === 'string' ? value : undefined;
};

/**
 * One API call, tried again as the official client would: after a 429's Retry-After, or a back-off with jitter that
 * doubles each time. The client's own retry is off so that every pause goes through `sleep`; each try keeps the
 * client's deadline.
 */
function retrying<A, R>(call: (args: A) => Promise<R>, options: { sleep: Sleep; get: boolean }): (args: A) => Promise<R> {
  return async (args) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call(args);
      } catch (error) {
        if (attempt >= maxRetries || !retryable(error, options.get)) throw error;
        const backOff = DEFAULT_INITIAL_RETRY_DELAY_MS * 2 ** attempt;
        await options.sleep(Math.min(retryAfterMs(retryAfterOf(error)) ?? backOff * Math.random() + backOff / 2, maxRetryDelayMs));
      }
    }
  };
}

/** The calls a walk makes, each retried. */
function apiOf(client: Client, sleep: Sleep) {
  return {
    page: retrying(client.pages.retrieve, { sleep, get: true }),
    database: retrying(client.databases.retrieve, { sleep, get: true }),
    children: retrying(client.blocks.children.list, { sleep, get: true }),
    // A data source is queried with a POST: only a rate limit or an overload is tried again.
    rows: retrying(client.dataSources.query, { sleep, get: false }),
  };
}
type Api = ReturnType<typeof apiOf>;

/** What the API answers for an object the integration cannot read here: missing, not shared, restricted, a linked view. */
const notFound = (error: unknown) =>
  APIResponseError.isAPIResponseError(error) && (error.code === 'object_not_found' || error.code === 'validation_error' || error.code === 'restricted_resource');

/**
 * Walks pages, their sub-pages, and databases' rows under a root, fetching every block (100 a page of results). A
 * database that cannot be read (a linked view, one not shared with the integration) is skipped, and the walk says it
 * is partial, as it does when it stops at `maxPages`: a partial walk must not remove pages it did not reach.
 */
async function walk(api: Api, rootId: string, logger: SyncContext['logger']): Promise<{ pages: Walked[]; partial: string | undefined }> {
  const pages = new Map<string, Walked>();
  const seen = new Set<string>();
  const gaps: string[] = [];

  const childrenOf = async (blockId: string): Promise<NotionBlock[]> => {
    const out: NotionBlock[] = [];
    for await (const block of iteratePaginatedAPI(api.children, { block_id: blockId, page_size: 100 })) out.push(block as unknown as NotionBlock);
    return out;
  };
  const visitPage = async (id: string, page?: Loose): Promise<void> => {
    if (seen.has(id)) return;
    if (pages.size >= maxPages) {
      if (!gaps.includes('page limit')) gaps.push('page limit');
      return;
    }
    seen.add(id);
    const found = page ?? ((await api.page({ page_id: id })) as unknown as Loose);
    if (found.archived === true || found.in_trash === true) return;
    const children = new Map<string, NotionBlock[]>();
    const subpages: string[] = [];
    const databases: string[] = [];
    const expand = async (blocks: NotionBlock[]) => {
      for (const block of blocks) {
        if (block.type === 'child_page') subpages.push(block.id);
        else if (block.type === 'child_database') databases.push(block.id);
        else if (block.has_children && nested.has(block.type)) {
          const inner = await childrenOf(block.id);
          children.set(block.id, inner);
          await expand(inner);
        }
      }
    };
    const blocks = await childrenOf(id);
    await expand(blocks);
    pages.set(id, { page: found, blocks, children });
    for (const sub of subpages) await visitPage(sub);
    for (const database of databases) {
      try {
        await visitDatabase(database);
      } catch (error) {
        if (!notFound(error)) throw error;
        gaps.push(`database ${database} (${(error as APIResponseError).code})`);
        logger.warn('notion database skipped', { database, code: (error as APIResponseError).code });
      }
    }
  };
  const visitDataSource = async (id: string): Promise<void> => {
    for await (const row of iteratePaginatedAPI(api.rows, { data_source_id: id, page_size: 100 })) {
      if ((row as Loose).object === 'page') await visitPage((row as Loose).id as string, row as unknown as Loose);
    }
  };
  const visitDatabase = async (id: string): Promise<void> => {
    if (seen.has(id)) return;
    seen.add(id);
    const database = (await api.database({ database_id: id })) as unknown as Loose;
    for (const source of (database.data_sources as Loose[] | undefined) ?? []) await visitDataSource(source.id as string);
  };

  // The root may be a page, a database, or a data source; only the root's own lookup decides which.
  let rootPage: Loose | undefined;
  try {
    rootPage = (await api.page({ page_id: rootId })) as unknown as Loose;
  } catch (error) {
    if (!notFound(error)) throw error;
  }
  if (rootPage) await visitPage(rootId, rootPage);
  else {
    let database: Loose | undefined;
    try {
      database = (await api.database({ database_id: rootId })) as unknown as Loose;
    } catch (error) {
      if (!notFound(error)) throw error;
    }
    if (database) {
      seen.add(rootId);
      for (const source of (database.data_sources as Loose[] | undefined) ?? []) await visitDataSource(source.id as string);
    } else await visitDataSource(rootId);
  }
  const partial = gaps.length > 0 ? `${gaps.join(', ')}${gaps.includes('page limit') ? ` (stopped at ${maxPages} pages)` : ''}` : undefined;
  return { pages: [...pages.values()], partial };
}

/** A page as a document: its properties (for database rows), then its blocks, with structure kept. */
function documentOf(walked: Walked): Document {
  const properties: Block[] = propertyLines(walked.page).map((text) => ({ kind: 'paragraph', text }));
  return { title: pageTitle(walked.page), blocks: [...properties, ...toBlocks(walked.blocks, (id) => walked.children.get(id) ?? [])] };
}

export type NotionOptions = {
  baseUrl?: string;
  tokens: Record<string, string>;
  timeoutMs?: number;
  /** How a pause before a retry is waited out: a timer unless given (tests note what was asked, and go on at once). */
  sleep?: Sleep | undefined;
};

/**
 * Notion workspaces through the official client: the channel's source is a page, database or data source URL; every
 * page under it (sub-pages, and database rows) is an item, its blocks turned into text with headings, lists, to-dos,
 * toggles, tables and code kept. Block children are read 100 at a time, and a 429 is waited out as its Retry-After
 * says (at most 30 s). Each channel names the environment variable of its integration token (`tokenVariable`).
 */
export function connector(options: NotionOptions): Connector {
  return {
    kind: 'notion',
    async list(context: SyncContext) {
      const variable = typeof context.channel.settings.tokenVariable === 'string' ? context.channel.settings.tokenVariable : defaultTokenVariable;
      const token = options.tokens[variable];
      if (!token) throw new Error(`no Notion integration token: set ${variable} in the environment`);
      const rootId = idOf(context.source);
      if (!rootId) throw new Error(`${context.source} names no Notion page or database (no 32-digit id in it)`);
      const client = new Client({
        auth: token,
        baseUrl: options.baseUrl ?? defaultBaseUrl,
        timeoutMs: options.timeoutMs ?? 30_000,
        retry: false,
        logLevel: LogLevel.ERROR,
        logger: (level, message, extra) => context.logger.warn(`notion client: ${message}`, { level, ...(extra as Loose) }),
      });
      let walked: Walked[];
      let partial: string | undefined;
      try {
        ({ pages: walked, partial } = await walk(apiOf(client, options.sleep ?? ((ms) => timer(ms))), rootId, context.logger));
      } catch (error) {
        if (APIResponseError.isAPIResponseError(error)) throw new Error(`Notion answered ${error.status} ${error.code}: ${error.message}`);
        throw error;
      }
      const entries: Entry[] = walked.map((w) => {
        const document = documentOf(w);
        const page = w.page;
        const publishedAt = Date.parse(String(page.created_time ?? ''));
        const item = {
          title: document.title ?? 'Untitled',
          sourceUrl: typeof page.url === 'string' ? page.url : undefined,
          publishedAt: Number.isFinite(publishedAt) ? publishedAt : undefined,
          document,
          metadata: { notionId: page.id, lastEditedTime: page.last_edited_time },
        };
        return { externalId: String(page.id), version: Ids.fingerprint(JSON.stringify([item.title, item.sourceUrl, document.blocks])), publishedAt: item.publishedAt, load: async () => item };
      });
      return { entries, coverage: partial ? { kind: 'partial', reason: `not read: ${partial}` } : { kind: 'complete' }, state: {} };
    },
  };
}
