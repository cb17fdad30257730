import crypto from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { Request, Response } from 'express';
import { ServiceError } from '../../errors/ServiceError.js';
import type { Metrics } from '../../health/Metrics.js';
import { sendError } from './Http.js';

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

/**
 * `/metrics` on a port of its own (METRICS_PORT), bound to loopback: for a scraper on the same machine (or a sidecar),
 * with nothing else of the service reachable there. Anything but GET /metrics is 404.
 */
export async function listen(metrics: Metrics, port: number): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'application/json; charset=utf-8' }).end(JSON.stringify({ error: 'not_found', message: 'Only GET /metrics is served here.' }));
      return;
    }
    metrics.render().then(
      ({ contentType, body }) => res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' }).end(body),
      () => res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' }).end(JSON.stringify({ error: 'internal_error', message: 'The metrics could not be read.' })),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return { server, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}/metrics` };
}
