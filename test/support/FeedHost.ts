import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

/** What a route answers. Content gets an ETag and Last-Modified, and a 304 when the request's validators match. */
export type Route = {
  body: string | Buffer;
  type?: string;
  status?: number;
  headers?: Record<string, string>;
  lastModified?: string;
  /** Compress the body when the client accepts gzip. */
  gzip?: boolean;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Send the headers and half the body, then drop the connection. */
  truncate?: boolean;
  /** Answer with these statuses first (e.g. [429] or [500, 500]) before the content. */
  failFirst?: { status: number; headers?: Record<string, string> }[];
  /** Answer from the request instead (an API that reads a JSON body, such as YouTube's player endpoint). */
  respond?: (request: Request) => Route;
};

export type Request = { path: string; method: string; headers: http.IncomingHttpHeaders; body: string };

/**
 * A stand-in web host on 127.0.0.1 for feeds, articles, transcripts and caption files: ETags and 304s, redirects,
 * gzip, and the failures real hosts have (404, 429 with Retry-After, 500, slow answers, truncated bodies).
 */
export async function start(): Promise<{
  url: string;
  routes: Map<string, Route>;
  requests: Request[];
  /** The most requests that were ever in flight at once. */
  peakConcurrency: number;
  close(): Promise<void>;
}> {
  const routes = new Map<string, Route>();
  const requests: Request[] = [];
  let inFlight = 0;
  const state = { peakConcurrency: 0 };
  const server = http.createServer(async (req, res) => {
    const path = req.url ?? '/';
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const request = { path, method: req.method ?? 'GET', headers: req.headers, body: Buffer.concat(parts).toString('utf8') };
    requests.push(request);
    inFlight += 1;
    state.peakConcurrency = Math.max(state.peakConcurrency, inFlight);
    res.on('close', () => (inFlight -= 1));
    const found = routes.get(path);
    const route = found?.respond ? found.respond(request) : found;
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (route.delayMs) await new Promise((r) => setTimeout(r, route.delayMs));
    const failure = route.failFirst?.shift();
    if (failure) {
      res.writeHead(failure.status, { 'content-type': 'text/plain', ...failure.headers }).end(`status ${failure.status}`);
      return;
    }
    const status = route.status ?? 200;
    const body = Buffer.from(route.body);
    if (status !== 200) {
      res.writeHead(status, { 'content-type': route.type ?? 'text/plain', ...route.headers }).end(body);
      return;
    }
    const etag = `"${crypto.createHash('sha1').update(body).digest('hex').slice(0, 16)}"`;
    const validators = { etag, ...(route.lastModified ? { 'last-modified': route.lastModified } : {}) };
    if (req.headers['if-none-match'] === etag || (route.lastModified && req.headers['if-modified-since'] === route.lastModified && !req.headers['if-none-match'])) {
      res.writeHead(304, validators).end();
      return;
    }
    const gzip = route.gzip && /gzip/.test(String(req.headers['accept-encoding']));
    const payload = gzip ? zlib.gzipSync(body) : body;
    res.writeHead(200, {
      'content-type': route.type ?? 'application/xml',
      'content-length': String(payload.length),
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      ...validators,
      ...route.headers,
    });
    if (route.truncate) {
      res.write(payload.subarray(0, Math.floor(payload.length / 2)));
      setTimeout(() => res.destroy(), 20);
      return;
    }
    res.end(payload);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    routes,
    requests,
    get peakConcurrency() {
      return state.peakConcurrency;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
