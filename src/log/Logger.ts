import { pino } from 'pino';
import { createRequire } from 'node:module';
import type PinoPretty from 'pino-pretty';
import * as RequestContext from './RequestContext.js';

/**
 * The service's log, on pino: one JSON line per event on stderr (stdout belongs to the stdio MCP transport and CLI
 * output), or pretty lines when stderr is a terminal. Every line written while a request is served carries its id.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error';

export type Logger = Record<Level, (message: string, fields?: Record<string, unknown>) => void>;

/** Field names whose values are never written, whatever a caller passes. */
const secretFields = /key|token|secret|authorization|password|credential|signature/i;

function clean(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([k, v]) => {
      if (secretFields.test(k)) return [k, '[redacted]'];
      if (v instanceof Error) return [k, described(v)];
      return [k, v];
    }),
  );
}

/** How deep an error's causes are written: a wrapper's wrapper's cause is as far as a reader follows. */
const causesWritten = 3;

/** An error as a log field: its name, message, code (a socket's ECONNRESET, say) and stack, and what caused it. */
function described(error: Error, depth = 0): Record<string, unknown> {
  const code = (error as { code?: unknown }).code;
  const cause = error.cause;
  return {
    name: error.name,
    message: error.message,
    ...((typeof code === 'string' || typeof code === 'number') && { code }),
    stack: error.stack,
    ...(cause !== undefined && depth < causesWritten && { cause: cause instanceof Error ? described(cause, depth + 1) : String(cause) }),
  };
}

export type Format = 'json' | 'pretty' | 'auto';

/** The pretty printer, loaded only for a terminal: JSON lines (servers, pipes, tests) never need it. */
const pretty = (): typeof PinoPretty => createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;

export function create(options: { level: Level | 'silent'; write?: (line: string) => void; format?: Format }): Logger {
  const prettyLines = options.write === undefined && (options.format === 'pretty' || (options.format !== 'json' && process.stderr.isTTY === true));
  const destination = options.write
    ? { write: (line: string) => options.write!(line.trimEnd()) }
    : prettyLines
      ? pretty()({ destination: 2, sync: true, messageKey: 'message', translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      : pino.destination({ dest: 2, sync: true });
  const log = pino(
    {
      level: options.level,
      base: undefined,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      // Labels in JSON lines ("level":"info"), as they always were; the pretty printer reads pino's numbers.
      ...(!prettyLines && { formatters: { level: (label: string) => ({ level: label }) } }),
      mixin: () => {
        const id = RequestContext.current()?.id;
        return id === undefined ? {} : { requestId: id };
      },
    },
    destination,
  );
  const at = (level: Level) => (message: string, fields: Record<string, unknown> = {}) => log[level](clean(fields), message);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
