import crypto from 'node:crypto';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { Config } from '../../config/Config.js';
import { ServiceError, toErrorBody } from '../../errors/ServiceError.js';
import type { Metrics } from '../../health/Metrics.js';
import { sendError } from './Http.js';
import * as RequestGuard from './RequestGuard.js';

/** Compares a presented token with the configured one in constant time (over their digests, whatever their lengths). */
function sameToken(presented: string, expected: string): boolean {
  const digest = (value: string) => crypto.createHash('sha256').update(value, 'utf8').digest();
  return crypto.timingSafeEqual(digest(presented), digest(expected));
}

/** `GET /metrics` on the main port: the exposition for a bearer of METRICS_TOKEN, 401 for anyone else. */
export function handler(metrics: Metrics, token: string): (req: Request, res: Response) => Promise<void> {
  return async (req, res) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
    if (bearer === undefined || !sameToken(bearer, token)) {
      sendError(res.set('WWW-Authenticate', 'Bearer realm="metrics"'), new ServiceError('invalid_bearer_token', '/metrics needs Authorization: Bearer with the METRICS_TOKEN the server was started with.'));
      return;
    }
    const { contentType, body } = await metrics.render();
    res.set('Cache-Control', 'no-store').type(contentType).send(body);
  };
}

/** The loopback address the metrics port listens on. */
const loopback = '127.0.0.1';

/** Writes a ServiceError as the contract's Error body, on a bare Node response. */
function refuse(res: ServerResponse, error: ServiceError): void {
  res.writeHead(error.status, { 'Content-Type': 'application/json; charset=utf-8', 'X-Content-Type-Options': 'nosniff' }).end(JSON.stringify(toErrorBody(error)));
}

/**
 * `/metrics` on a port of its own (METRICS_PORT), bound to loopback: for a scraper on the same machine (or a sidecar),
 * with nothing else of the service reachable there. Anything but GET /metrics is 404. It takes no token, so it keeps
 * the main port's DNS-rebinding checks: loopback Host names only (unless ALLOWED_HOSTS adds some), and no browser
 * Origin but the ones allowed; a page rebound to 127.0.0.1 cannot read revenue. No CORS: no page reads it.
 */
export async function listen(metrics: Metrics, options: { port: number; allowed: Config['allowed'] }): Promise<{ server: Server; url: string }> {
  const { port } = options;
  const rules = RequestGuard.rules(options.allowed, loopback);
  const server = createServer((req, res) => {
    const refused = RequestGuard.refusal(rules, { host: req.headers.host, origin: req.headers.origin, http10: req.httpVersionMajor === 1 && req.httpVersionMinor === 0 });
    if (refused) return refuse(res, refused);
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') return refuse(res, new ServiceError('not_found', 'Only GET /metrics is served here.'));
    metrics.render().then(
      ({ contentType, body }) => res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' }).end(body),
      () => refuse(res, new ServiceError('internal_error', 'The metrics could not be read.')),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, loopback, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return { server, url: `http://${loopback}:${typeof address === 'object' && address ? address.port : port}/metrics` };
}
