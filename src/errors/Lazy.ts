import { ServiceError } from './ServiceError.js';

/**
 * A module loaded when it is first needed rather than when the process starts: a command, a transport, an outside
 * library only some requests use (the model's SDK, the feed and HTML parsers, a rail). Loaded once; a load that
 * failed is tried again next time.
 *
 * A module that cannot be loaded (a missing optional dependency, a damaged install) fails with one line that names it
 * and what it was for, as a ServiceError (`service_unavailable`): an HTTP or MCP caller gets the contract's Error
 * body, the CLI prints the line, and nobody reads a stack trace.
 */
export function lazy<T>(what: string, load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw new ModuleUnavailable(what, error);
    }));
}

export class ModuleUnavailable extends ServiceError {
  constructor(what: string, cause: unknown) {
    const reason = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0]!.replace(/ imported from \S+$/, '');
    super('service_unavailable', `${what} could not be loaded (${reason}). Reinstall with \`npm install\`.`, { cause });
    this.name = 'ModuleUnavailable';
  }
}
