import type { NextFunction, Request, Response } from 'express';
import type { Services } from '../../Services.js';
import * as RequestContext from '../../log/RequestContext.js';
import * as RequestLog from '../../log/RequestLog.js';

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

/**
 * Every request gets an id (the caller's, when of a sane shape, or a new one), sent back in X-Request-Id and carried
 * by every log line and error body; it is counted in the metrics and logged in one line once its response is out.
 */
export function observed(services: Services) {
  return (req: Request, res: Response, next: NextFunction): void => {
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
  };
}
