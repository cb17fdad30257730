import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { ServiceError } from '../../errors/ServiceError.js';
import type { Services } from '../../Services.js';
import { connectionOf, notAllowed, presentedOf, send, sendError } from './Http.js';
import * as Call from '../Call.js';
import * as RestWire from './RestWire.js';
import * as CitationRoute from './CitationRoute.js';
import * as McpHttp from './McpHttp.js';
import * as Site from './Site.js';
import * as RequestGuard from './RequestGuard.js';
import * as BodyGuard from './BodyGuard.js';
import * as Observed from './Observed.js';
import { expressPath, routes } from './Rest.js';

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
  // Not strict: a body of 42 or "x" is JSON, and is refused for its shape, not as unreadable. Read by the route that
  // takes it, so a body that cannot be read is logged and counted under that route.
  const body = [express.json({ type: () => true, limit: services.config.maxBodyBytes, strict: false }), BodyGuard.shallowBody];

  Site.mount(app, services);

  const byPath = new Map<string, typeof routes>();
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
  for (const [apiPath, group] of byPath) {
    const chain = app.route(expressPath(apiPath));
    for (const route of group) {
      chain[route.method](...body, async (req: Request, res: Response) => {
        const request = { tool: route.tool, args: route.args(req), binding: route.binding(req), presented: presentedOf(req), credential: RestWire.credentialOf(req), connection: connectionOf(res) };
        send(res, await Call.call(services, RestWire.wire, request));
      });
    }
    chain.all(notAllowed(group.map((r) => r.method.toUpperCase()).join(', ')));
  }

  // Where a citation's profileUrl points: HTML for browsers, JSON for Accept: application/json.
  app.route('/:slug/i/:itemId').get(CitationRoute.handler(services)).all(notAllowed('GET'));

  app.route('/mcp').get(McpHttp.manifest(services)).post(...body, McpHttp.rpc(services)).all(notAllowed('GET, POST'));
  app.route('/:slug/mcp').get(McpHttp.manifest(services)).post(...body, McpHttp.rpc(services)).all(notAllowed('GET, POST'));

  app.use((req: Request, res: Response) => sendError(res, new ServiceError('not_found', `no route ${req.method} ${req.path}`)));

  app.use((thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    const error = BodyGuard.requestError(thrown as { type?: string }) ?? Call.failureOf(services, thrown, { path: req.path });
    if (res.headersSent) return;
    // A JSON-RPC envelope answers what went wrong with the message; a refusal of the request itself (Origin, Host)
    // comes before any JSON-RPC and is the Error body, like the per-profile 404.
    const refusal = error.code === 'forbidden_origin' || error.code === 'forbidden_host';
    if (req.method === 'POST' && /\/mcp$/.test(req.path) && !refusal) McpHttp.unreadable(res, error);
    else sendError(res, error);
  });
  return app;
}
