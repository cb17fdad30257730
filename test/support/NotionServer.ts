import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Loose = Record<string, unknown>;

/** A workspace the stand-in serves: pages, block children, databases and their data sources' rows. */
export type Workspace = {
  pages: Map<string, Loose>;
  children: Map<string, Loose[]>;
  databases: Map<string, Loose>;
  rows: Map<string, Loose[]>;
};

/**
 * A stand-in for the Notion API on 127.0.0.1, driven by the real @notionhq/client through its `baseUrl`: bearer
 * authentication, Notion-Version, cursor pagination (at most 100 results a page), Notion's error bodies, and 429s
 * with Retry-After when told to.
 */
export async function start(token: string): Promise<{
  url: string;
  workspace: Workspace;
  requests: { method: string; path: string; version: string | undefined }[];
  /** Answer the next request with 429 and this Retry-After (seconds). */
  rateLimitNext: number | undefined;
  close(): Promise<void>;
}> {
  const workspace: Workspace = { pages: new Map(), children: new Map(), databases: new Map(), rows: new Map() };
  const state = { workspace, requests: [] as { method: string; path: string; version: string | undefined }[], rateLimitNext: undefined as number | undefined };
  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  const error = (res: http.ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}) =>
    send(res, status, { object: 'error', status, code, message, request_id: 'stand-in' }, headers);
  const page = (list: Loose[], cursor: string | null | undefined, size: number) => {
    const start = cursor ? Number(cursor) : 0;
    const results = list.slice(start, start + Math.min(size, 100));
    const more = start + results.length < list.length;
    return { object: 'list', results, has_more: more, next_cursor: more ? String(start + results.length) : null, type: 'block', block: {} };
  };

  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const url = new URL(req.url ?? '/', 'http://stand-in');
    state.requests.push({ method: req.method ?? 'GET', path: url.pathname, version: req.headers['notion-version'] as string | undefined });
    if (state.rateLimitNext !== undefined) {
      const wait = state.rateLimitNext;
      state.rateLimitNext = undefined;
      return error(res, 429, 'rate_limited', 'You have been rate limited.', { 'retry-after': String(wait) });
    }
    if (req.headers.authorization !== `Bearer ${token}`) return error(res, 401, 'unauthorized', 'API token is invalid.');
    let m: RegExpExecArray | null;
    if (req.method === 'GET' && (m = /^\/v1\/pages\/([\w-]+)$/.exec(url.pathname))) {
      const found = workspace.pages.get(m[1]!);
      return found ? send(res, 200, found) : error(res, 404, 'object_not_found', `Could not find page with ID: ${m[1]}.`);
    }
    if (req.method === 'GET' && (m = /^\/v1\/blocks\/([\w-]+)\/children$/.exec(url.pathname))) {
      const list = workspace.children.get(m[1]!);
      if (!list) return error(res, 404, 'object_not_found', `Could not find block with ID: ${m[1]}.`);
      return send(res, 200, page(list, url.searchParams.get('start_cursor'), Number(url.searchParams.get('page_size') ?? 100)));
    }
    if (req.method === 'GET' && (m = /^\/v1\/databases\/([\w-]+)$/.exec(url.pathname))) {
      const found = workspace.databases.get(m[1]!);
      return found ? send(res, 200, found) : error(res, 404, 'object_not_found', `Could not find database with ID: ${m[1]}.`);
    }
    if (req.method === 'POST' && (m = /^\/v1\/data_sources\/([\w-]+)\/query$/.exec(url.pathname))) {
      const rows = workspace.rows.get(m[1]!);
      if (!rows) return error(res, 404, 'object_not_found', `Could not find data source with ID: ${m[1]}.`);
      const body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as { start_cursor?: string; page_size?: number };
      return send(res, 200, { ...page(rows, body.start_cursor, body.page_size ?? 100), type: 'page_or_data_source', page_or_data_source: {} });
    }
    return error(res, 400, 'invalid_request_url', 'Invalid request URL.');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
