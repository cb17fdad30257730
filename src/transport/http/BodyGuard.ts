import type { NextFunction, Request, Response } from 'express';
import { ServiceError } from '../../errors/ServiceError.js';

/** Maps a failure to read the request (its path or body) onto the error table. */
export function requestError(error: { type?: string; status?: number }): ServiceError | undefined {
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

/** Refuses a body nested deeper than any request needs, before anything walks it recursively. */
export function shallowBody(req: Request, _res: Response, next: NextFunction): void {
  next(tooDeep(req.body) ? new ServiceError('invalid_request', `the body nests deeper than ${maxDepth} levels`) : undefined);
}
