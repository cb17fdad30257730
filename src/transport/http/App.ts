import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { projectRoot } from '../../config/Config.js';
import { ServiceError } from '../../errors/ServiceError.js';
import type { Services } from '../../Services.js';
import * as Caller from '../../auth/Caller.js';
import * as CitationPage from '../../pages/CitationPage.js';
import { connectionOf, presentedOf, send, sendError } from './Http.js';
import type { Health } from '../../contract/Contract.js';
import * as Call from '../Call.js';
import * as McpWire from '../mcp/McpWire.js';
import * as RestWire from './RestWire.js';
import * as Readiness from '../../health/Readiness.js';
import * as McpHttp from './McpHttp.js';
import * as OpenApi from './OpenApi.js';
import * as RequestGuard from './RequestGuard.js';
import * as BodyGuard from './BodyGuard.js';
import * as Observed from './Observed.js';
import * as MetricsRoute from './MetricsRoute.js';
import { expressPath, routes } from './Rest.js';

const notAllowed = (allow: string) => (_req: Request, res: Response) =>
  sendError(res.set('Allow', allow), new ServiceError('method_not_allowed', `use ${allow}`));

/**
 * The HTTP surface: health, the OpenAPI document, SKILL.md, the REST paths (thin mappings onto the tools) and MCP over
 * HTTP. Every failure leaves as the contract's Error body (JSON-RPC envelopes on the MCP endpoints).
 */
export function create(services: Services, options: { listenHost?: string } = {}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', services.config.trustProxy);
  app.set('query parser', 'simple');

  app.use(Observed.observed(services));
  // Every body is what its Content-Type says: a browser never sniffs JSON or Markdown into something that runs.
  app.use((_req, res, next) => next(void res.set('X-Content-Type-Options', 'nosniff')));

  app.use(...RequestGuard.create(services.config.allowed, options.listenHost ?? services.config.host));

  // Every body is read as JSON whatever its content type, so `curl -d '{...}'` works without a header.
  // Not strict: a body of 42 or "x" is JSON, and is refused for its shape, not as unreadable.
  app.use(express.json({ type: () => true, limit: services.config.maxBodyBytes, strict: false }));
  app.use(BodyGuard.shallowBody);

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
        const request = { tool: route.tool, binding: route.binding(req), presented: presentedOf(req), credential: RestWire.credentialOf(req), connection: connectionOf(res) };
        try {
          send(res, await Call.call(services, RestWire.wire, { ...request, args: route.args(req) }));
        } catch (thrown) {
          // Reading the arguments failed (a malformed query string): answered as the call's own failure would be.
          sendError(res, Call.failureOf(services, thrown));
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
        sendError(res, Call.failureOf(services, thrown));
      }
    })
    .all(notAllowed('GET'));

  app.route('/mcp').get(McpHttp.manifest(services)).post(McpHttp.rpc(services)).all(notAllowed('GET, POST'));
  app.route('/:slug/mcp').get(McpHttp.manifest(services)).post(McpHttp.rpc(services)).all(notAllowed('GET, POST'));

  app.use((req: Request, res: Response) => sendError(res, new ServiceError('not_found', `no route ${req.method} ${req.path}`)));

  app.use((thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    const error = BodyGuard.requestError(thrown as { type?: string }) ?? Call.failureOf(services, thrown, { path: req.path });
    if (res.headersSent) return;
    // A JSON-RPC envelope answers what went wrong with the message; a refusal of the request itself (Origin, Host)
    // comes before any JSON-RPC and is the Error body, like the per-profile 404.
    const refusal = error.code === 'forbidden_origin' || error.code === 'forbidden_host';
    if (req.method === 'POST' && /\/mcp$/.test(req.path) && !refusal) {
      const reply = McpWire.envelopeError(error) as { error: McpWire.JsonRpcError };
      res.status(error.status).json({ jsonrpc: '2.0', id: null, error: reply.error });
      return;
    }
    sendError(res, error);
  });
  return app;
}
