/** Structured JSON lines on stderr (stdout belongs to the stdio MCP transport and CLI output). */
export type Level = 'debug' | 'info' | 'warn' | 'error';

export type Logger = Record<Level, (message: string, fields?: Record<string, unknown>) => void>;

const order: Record<Level | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Field names whose values are never written, whatever a caller passes. */
const secretFields = /key|token|secret|authorization|password|credential/i;

function clean(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([k, v]) => {
      if (secretFields.test(k)) return [k, '[redacted]'];
      if (v instanceof Error) return [k, { name: v.name, message: v.message, stack: v.stack }];
      return [k, v];
    }),
  );
}

export function create(options: { level: Level | 'silent'; write?: (line: string) => void }): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const at = (level: Level) => (message: string, fields: Record<string, unknown> = {}) => {
    if (order[level] < order[options.level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level, message, ...clean(fields) }));
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
