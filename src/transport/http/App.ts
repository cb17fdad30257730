import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { projectRoot } from '../../config/Config.js';
import { ServiceError, toJsonRpcError, toServiceError } from '../../errors/ServiceError.js';
import type { Services } from '../../Services.js';
import * as Caller from '../../auth/Caller.js';
import * as CitationPage from '../../pages/CitationPage.js';
import * as Tools from '../../../tools/Tools.js';
import { connectionOf, presentedOf, sendError } from './Http.js';
import type { Health } from '../../contract/Contract.js';
import * as Credentials from '../../payments/Credentials.js';
import * as Readiness from '../../health/Readiness.js';
import * as McpHttp from './McpHttp.js';
import * as OpenApi from './OpenApi.js';
import * as RequestGuard from './RequestGuard.js';
import * as RequestContext from '../../log/RequestContext.js';
import * as RequestLog from '../../log/RequestLog.js';
import * as MetricsRoute from './MetricsRoute.js';
import { expressPath, routes } from './Rest.js';

const notAllowed = (allow: string) => (_req: Request, res: Response) =>
  sendError(res.set('Allow', allow), new ServiceError('method_not_allowed', `use ${allow}`));

/** Maps a failure to read the request (its path or body) onto the error table. */
function requestError(error: { type?: string; status?: number }): ServiceError | undefined {
  if (error instanceof ServiceError) return error;
  if (error instanceof URIError) return new ServiceError('invalid_request', 'the path has malformed percent-encoding');
  if (error.type === 'entity.parse.failed') return new ServiceError('invalid_json');
  // Everything else the body parser, decompression or static files refuse is the client's doing (a 4xx).
  switch (error.status) {
    case 413:
      return new ServiceError('payload_too_large');
    case 415:
      return new ServiceError('unsupported_media_type');
    case 416:
      return new ServiceError('range_not_satisfiable');
    default:
      return error.status !== undefined && error.status >= 400 && error.status < 500
        ? new ServiceError('invalid_request', 'the request could not be read')
        : undefined;
  }
}

/** How a path is reached, as the metrics and the log line label it. */
function transportOf(given: string): RequestContext.Transport {
  // Routes match regardless of case, as Express matches them.
  const path = given.toLowerCase();
  if (path === '/mcp' || /^\/[^/]+\/mcp$/.test(path)) return 'mcp_http';
  if (path.startsWith('/api/')) return 'rest';
  if (/^\/[^/]+\/i\//.test(path)) return 'page';
  return 'http';
}

/** Methods a label may hold; anything else Node lets through counts as OTHER. */
const knownMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The route pattern a request matched (bounded, unlike its path), for labels. */
function routeOf(req: Request): string {
  const pattern = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof pattern === 'string') return pattern;
  if (req.path.startsWith('/skill/')) return '/skill/*';
  return 'unmatched';
}

/** Deepest JSON nesting accepted; deeper bodies are refused before anything walks them recursively. */
const maxDepth = 64;

function tooDeep(value: unknown): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= maxDepth) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The HTTP surface: health, the OpenAPI document, SKILL.md, the REST paths (thin mappings onto the tools) and MCP over
 * HTTP. Every failure leaves as the contract's Error body (JSON-RPC envelopes on the MCP endpoints).
 */
export function create(services: Services, options: { listenHost?: string } = {}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', services.config.trustProxy);
  app.set('query parser', 'simple');

  app.use((req, res, next) => {
    // Every body is what its Content-Type says: a browser never sniffs JSON or Markdown into something that runs.
    res.set('X-Content-Type-Options', 'nosniff');
    // Every request has an id: the caller's, when it is of a sane shape, or a new one. It is in the response header,
    // every error body, and every log line written while the request is served.
    const context: RequestContext.RequestContext = { id: RequestContext.idFor(req.get('x-request-id')), transport: transportOf(req.path), started: performance.now() };
    res.set('X-Request-Id', context.id);
    // Counted and logged once, when the response is written out or the connection closes before it is.
    let counted = false;
    const done = () => {
      if (counted) return;
      counted = true;
      context.route ??= routeOf(req);
      const method = knownMethods.has(req.method) ? req.method : 'OTHER';
      // A connection closed before the response was written out is the client's going: 499, as proxies count it.
      const status = res.writableFinished ? res.statusCode : RequestLog.clientClosed;
      services.metrics.httpRequest({ transport: context.transport, method, route: context.route, status, seconds: (performance.now() - context.started) / 1000 });
      RequestLog.write(services.logger, context, { status, method, questions: services.config.log.questions });
    };
    res.on('finish', done);
    res.on('close', done);
    RequestContext.run(context, next);
  });

  app.use(...RequestGuard.create(services.config.allowed, options.listenHost ?? services.config.host));

  // Every body is read as JSON whatever its content type, so `curl -d '{...}'` works without a header.
  // Not strict: a body of 42 or "x" is JSON, and is refused for its shape, not as unreadable.
  app.use(express.json({ type: () => true, limit: services.config.maxBodyBytes, strict: false }));
  app.use((req, _res, next) => next(tooDeep(req.body) ? new ServiceError('invalid_request', `the body nests deeper than ${maxDepth} levels`) : undefined));

  app.route('/health').get(async (_req, res) => {
    const database = await services.store.ping().then(
      () => true,
      () => false,
    );
    const health: Health = { ok: database, service: 'profile-edge', environment: services.config.environment, dependencies: { database: { ok: database } } };
    res.json(health);
  }).all(notAllowed('GET'));

  // Readiness, for a load balancer: 503 while shutting down, before the index is loaded, or without the database.
  const readiness = Readiness.create(services);
  app.route('/ready').get(async (_req, res) => {
    const ready = await readiness.check();
    res.status(ready.ready ? 200 : 503).json(ready);
  }).all(notAllowed('GET'));

  // Off unless METRICS_TOKEN is set: then for its bearer only. METRICS_PORT alone serves it elsewhere, on loopback.
  const metricsToken = services.config.metrics.token;
  if (metricsToken !== undefined) app.route('/metrics').get(MetricsRoute.handler(services.metrics, metricsToken)).all(notAllowed('GET'));

  const openapi = OpenApi.document();
  app.route('/openapi.json').get((_req, res) => res.json(openapi)).all(notAllowed('GET'));

  app.route('/SKILL.md').get((_req, res) => {
    res.type('text/markdown; charset=utf-8').sendFile(path.join(projectRoot, 'SKILL.md'));
  }).all(notAllowed('GET'));
  const skillDir = path.join(projectRoot, 'skill');
  if (fs.existsSync(skillDir)) app.use('/skill', express.static(skillDir, { dotfiles: 'ignore', index: false, redirect: false, fallthrough: true }));

  const byPath = new Map<string, typeof routes>();
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
  for (const [apiPath, group] of byPath) {
    const chain = app.route(expressPath(apiPath));
    for (const route of group) {
      chain[route.method](async (req: Request, res: Response) => {
        try {
          const args = route.args(req);
          const payload = await Tools.invoke({
            services,
            name: route.tool,
            args,
            presented: presentedOf(req),
            binding: route.binding(req),
            payment: {
              credential: Credentials.fromHeaders((name) => req.get(name)) ?? Credentials.fromMeta((args as { _meta?: unknown } | undefined)?._meta),
              receipt: (receipt) => res.set(receipt.headers),
            },
            connection: connectionOf(res),
          });
          res.json(payload);
        } catch (thrown) {
          const error = toServiceError(thrown);
          if (error.code === 'internal_error') services.logger.error('request failed', { path: req.path, error: error.cause ?? error });
          sendError(res, error);
        }
      });
    }
    chain.all(notAllowed(group.map((r) => r.method.toUpperCase()).join(', ')));
  }

  // Where a citation's profileUrl points: HTML for browsers, JSON for Accept: application/json.
  app
    .route('/:slug/i/:itemId')
    .get(async (req: Request, res: Response) => {
      // Kept by no cache, and a link's signature is sent to no page it links to; errors included.
      res.vary('Accept').set({ 'Cache-Control': 'private, no-store', 'Referrer-Policy': 'no-referrer' });
      try {
        const caller = await Caller.resolve(services.store, presentedOf(req));
        const chunkIds = ([] as unknown[]).concat(req.query.chunks ?? []).flatMap((v) => String(v).split(',')).map((v) => v.trim()).filter(Boolean);
        const slug = String(req.params.slug);
        const itemId = String(req.params.itemId);
        const signed = req.query.sig !== undefined || req.query.expires !== undefined;
        const link = signed ? await services.citationLinks.verify({ slug, itemId, expires: req.query.expires, sig: req.query.sig }) : undefined;
        const page = await CitationPage.load(services.store, { slug, itemId, chunkIds, caller, link });
        if (req.accepts(['html', 'json']) === 'json') res.json(page);
        else res.set(CitationPage.htmlHeaders).type('html').send(CitationPage.html(page));
      } catch (thrown) {
        sendError(res, toServiceError(thrown));
      }
    })
    .all(notAllowed('GET'));

  app.route('/mcp').get(McpHttp.manifest(services)).post(McpHttp.rpc(services)).all(notAllowed('GET, POST'));
  app.route('/:slug/mcp').get(McpHttp.manifest(services)).post(McpHttp.rpc(services)).all(notAllowed('GET, POST'));

  app.use((req: Request, res: Response) => sendError(res, new ServiceError('not_found', `no route ${req.method} ${req.path}`)));

  app.use((thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    const error = requestError(thrown as { type?: string }) ?? toServiceError(thrown);
    if (error.code === 'internal_error') services.logger.error('request failed', { path: req.path, error: error.cause ?? error });
    if (res.headersSent) return;
    // A JSON-RPC envelope answers what went wrong with the message; a refusal of the request itself (Origin, Host)
    // comes before any JSON-RPC and is the Error body, like the per-profile 404.
    const refusal = error.code === 'forbidden_origin' || error.code === 'forbidden_host';
    if (req.method === 'POST' && /\/mcp$/.test(req.path) && !refusal) {
      res.status(error.status).json({ jsonrpc: '2.0', id: null, error: toJsonRpcError(error) });
      return;
    }
    sendError(res, error);
  });
  return app;
}
