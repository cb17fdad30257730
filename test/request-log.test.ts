import { describe, expect, test } from 'vitest';
import type { Logger } from '../src/log/Logger.js';
import * as RequestLog from '../src/log/RequestLog.js';

/** Each request's one log line, and the level it is written at. */

const lines = () => {
  const said: [string, Record<string, unknown> | undefined][] = [];
  const at = (level: string) => (_message: string, fields?: Record<string, unknown>) => void said.push([level, fields]);
  return { said, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } satisfies Logger };
};

const write = (route: string, status: number) => {
  const { said, logger } = lines();
  RequestLog.write(logger, { id: 'r1', transport: 'rest', route, started: performance.now() }, { status, method: 'GET', questions: false });
  return said[0]!;
};

describe('request log lines', () => {
  test('behavior: failures are errors; refusals, and /ready reporting an instance not ready (loading, draining), are not', () => {
    expect(write('/api/ask/query', 500)[0]).toBe('error');
    expect(write('/api/ask/query', 503)[0]).toBe('error');
    expect(write('/health', 503)[0]).toBe('error');
    expect(write('/api/ask/query', 402)[0]).toBe('info');
    expect(write('/ready', 503)).toEqual(['info', expect.objectContaining({ route: '/ready', status: 503 })]);
    expect(write('/ready', 200)[0]).toBe('info');
  });
});
