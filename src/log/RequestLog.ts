import type { Logger } from './Logger.js';
import type { RequestContext } from './RequestContext.js';

/** The status of a request whose client left before its response was written out (nginx's). */
export const clientClosed = 499;

/**
 * The one line each request leaves in the log: its id (added by the logger), transport, route, status, duration,
 * and what its handlers noted (tool, outcome, charge kind, rail). The question only when LOG_QUESTIONS is on; no
 * credential ever (none is noted).
 */
export function write(logger: Logger, context: RequestContext, input: { status: number; method?: string | undefined; questions: boolean }): void {
  const { transport, route, tool, charge, rail, question } = context;
  // A caller who left before the response was written: what became of its payment follows in lines with its id.
  const left = input.status === clientClosed;
  const outcome = left ? 'caller_left' : context.outcome;
  const fields = {
    // Written outright, not only by the logger's mixin: a connection's close is heard outside the request's context.
    requestId: context.id,
    transport,
    ...(input.method !== undefined && { method: input.method }),
    ...(route !== undefined && { route }),
    status: input.status,
    ms: Math.round(performance.now() - context.started),
    ...(tool !== undefined && { tool }),
    ...(outcome !== undefined && { outcome }),
    ...(!left && charge !== undefined && { charge }),
    ...(!left && rail !== undefined && { rail }),
    ...(input.questions && question !== undefined && { question }),
  };
  // A refusal (a 402 challenge, a 404) is the service working: only failures are errors. So is `/ready` answering 503
  // while the instance loads its index or drains: it reports a state the load balancer acts on, and says which.
  const reported = route === '/ready' && input.status === 503;
  if (input.status >= 500 && !reported) logger.error('request', fields);
  else logger.info('request', fields);
}
