import type { Logger } from './Logger.js';
import type { RequestContext } from './RequestContext.js';

/**
 * The one line each request leaves in the log: its id (added by the logger), transport, route, status, duration,
 * and what its handlers noted (tool, outcome, charge kind, rail). The question only when LOG_QUESTIONS is on; no
 * credential ever (none is noted).
 */
export function write(logger: Logger, context: RequestContext, input: { status: number; method?: string | undefined; questions: boolean }): void {
  const { transport, route, tool, outcome, charge, rail, question } = context;
  const fields = {
    transport,
    ...(input.method !== undefined && { method: input.method }),
    ...(route !== undefined && { route }),
    status: input.status,
    ms: Math.round(performance.now() - context.started),
    ...(tool !== undefined && { tool }),
    ...(outcome !== undefined && { outcome }),
    ...(charge !== undefined && { charge }),
    ...(rail !== undefined && { rail }),
    ...(input.questions && question !== undefined && { question }),
  };
  // A refusal (a 402 challenge, a 404) is the service working: only failures are errors.
  if (input.status >= 500) logger.error('request', fields);
  else logger.info('request', fields);
}
