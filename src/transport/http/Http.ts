import { finished } from 'node:stream';
import type { Request, Response } from 'express';
import type { Connection } from '../../../tools/Tool.js';
import type { Presented } from '../../auth/Caller.js';
import { ServiceError } from '../../errors/ServiceError.js';
import * as RestWire from './RestWire.js';

/** The credentials an HTTP request presents: the `service-api-key` header and an `Authorization: Bearer` token. */
export function presentedOf(req: Request): Presented {
  const apiKey = req.get('service-api-key');
  const authorization = req.get('authorization');
  const bearer = authorization === undefined ? undefined : /^Bearer(?:\s+(.*))?$/i.exec(authorization.trim());
  return {
    apiKey: apiKey === undefined ? undefined : apiKey.trim(),
    bearerToken: bearer ? (bearer[1] ?? '').trim() : undefined,
    origin: req.ip ?? req.socket.remoteAddress ?? 'unknown',
  };
}

/** Writes a reply: its status, headers and JSON body. */
export function send(res: Response, reply: RestWire.Reply): void {
  res.status(reply.status).set(reply.headers).json(reply.body);
}

/** Writes a ServiceError as the contract's Error body with its status and headers. */
export function sendError(res: Response, error: ServiceError): void {
  send(res, RestWire.wire.failure(error, {}));
}

/** Answers a method a path does not take: 405 with `Allow`. */
export const notAllowed = (allow: string) => (_req: Request, res: Response) => sendError(res.set('Allow', allow), new ServiceError('method_not_allowed', `use ${allow}`));

/**
 * The caller's connection behind an HTTP response: gone once the socket closed, delivered once the response was
 * handed to the socket in full ('finish'), not delivered when it closed before that. Asked, not listened to, while
 * the call runs: a listener per request costs (see docs/decisions.md).
 */
export function connectionOf(res: Response): Connection {
  return {
    // A client that closed its side (FIN) is gone too: Node answers no request on a half-closed connection.
    gone: () => res.destroyed || !res.socket || res.socket.destroyed || res.socket.readableEnded || !res.socket.writable,
    delivered: () => new Promise((resolve) => finished(res, (error) => resolve(error === undefined || error === null))),
  };
}
