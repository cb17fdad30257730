import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';

/** How a request reached the service: the label its metrics and log line carry. */
export type Transport = 'rest' | 'mcp_http' | 'mcp_stdio' | 'page' | 'http';

/**
 * One request as the log and the metrics see it: its id, and what its handlers found out along the way (the outcome
 * of a query, what it was charged as, on which rail). Never a secret; the question only for LOG_QUESTIONS.
 */
export type RequestContext = {
  id: string;
  transport: Transport;
  /** The route pattern it matched (`/api/query`, `/:slug/mcp`): bounded, unlike the path. */
  route?: string;
  /** When it started (performance.now()). */
  started: number;
  /** The tool it called. */
  tool?: string;
  outcome?: string;
  charge?: string;
  rail?: string;
  question?: string;
};

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * An id a caller sent that is kept as it is: 1 to 128 characters of letters, digits and `._:-` (UUIDs, ULIDs, trace
 * ids). Anything else, which could carry line breaks or markup into a log, is replaced.
 */
const saneId = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The id of a request: the caller's, when it has a sane shape; a fresh one otherwise. */
export function idFor(incoming: string | undefined): string {
  const trimmed = incoming?.trim();
  return trimmed !== undefined && saneId.test(trimmed) ? trimmed : crypto.randomUUID();
}

/** Runs `work` as the request `context`: everything it calls, awaited or not, sees it. */
export function run<T>(context: RequestContext, work: () => T): T {
  return storage.run(context, work);
}

/** The request being served, when there is one. */
export function current(): RequestContext | undefined {
  return storage.getStore();
}

/** Records what a handler found out about the request being served (nothing, outside a request). */
export function note(fields: Partial<Omit<RequestContext, 'id' | 'transport' | 'started'>>): void {
  const context = storage.getStore();
  if (context) Object.assign(context, fields);
}
