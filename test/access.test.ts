import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Access from '../src/auth/Access.js';
import * as Caller from '../src/auth/Caller.js';
import * as Environment from './support/Environment.js';
import type { Keys } from './support/Environment.js';

/**
 * A refusal must not tell a private profile from one that does not exist: the same 404, after the same statements.
 * (How long each takes is measured by `npm run bench:access`; tests assert the work, not the time.)
 */

let environment: Environment.Environment;
beforeAll(async () => {
  environment = await Environment.create();
});
afterAll(async () => environment?.close());

/** The statements a check runs, in order, with how many rows each returned. */
function statementsOf(run: () => unknown): string[] {
  const db = environment.services.db;
  const prepare = db.prepare.bind(db);
  const ran: string[] = [];
  db.prepare = ((sql: string) => {
    const statement = prepare(sql);
    return new Proxy(statement, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function' || !['get', 'all', 'run', 'iterate'].includes(String(name))) return typeof value === 'function' ? value.bind(target) : value;
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          ran.push(`${String(name)} ${sql.replace(/\s+/g, ' ')}: ${Array.isArray(result) ? result.length : result === undefined ? 0 : 1}`);
          return result;
        };
      },
    });
  }) as typeof db.prepare;
  try {
    run();
  } catch {
    // The refusal itself is compared below.
  } finally {
    db.prepare = prepare;
  }
  return ran;
}

describe('a private profile and an unknown one', () => {
  const cases: [string, (k: Keys) => Caller.Presented][] = [
    ['no credentials', () => ({ origin: 'test' })],
    ['an unrelated API key', (k) => ({ apiKey: k.callerKey, origin: 'test' })],
    ['an unrelated bearer token', (k) => ({ bearerToken: k.outsiderBearer, origin: 'test' })],
  ];

  test.each(cases)('behavior: with %s, both are the same 404 after the same statements', (_name, presented) => {
    const caller = Caller.resolve(environment.services.db, presented(environment.keys));
    const refusal = (slug: string) => {
      try {
        Access.readableProfile(environment.services.db, slug, caller);
      } catch (error) {
        return (error as Error).message.replace(slug, 'SLUG');
      }
      return 'readable';
    };
    expect(refusal('sunniva-bratt')).toBe(refusal('sunniva-brett'));
    const privately = statementsOf(() => Access.readableProfile(environment.services.db, 'sunniva-bratt', caller));
    const unknown = statementsOf(() => Access.readableProfile(environment.services.db, 'sunniva-brett', caller));
    expect(privately.length).toBeGreaterThan(0);
    expect(unknown).toEqual(privately);
  });

  test('behavior: the owner still reads the private profile, and an unknown handle is still unknown to them', () => {
    const owner = Caller.resolve(environment.services.db, { bearerToken: environment.keys.sunnivaBearer, origin: 'test' });
    expect(Access.readableProfile(environment.services.db, 'sunniva-bratt', owner).slug).toBe('sunniva-bratt');
    expect(() => Access.readableProfile(environment.services.db, 'sunniva-brett', owner)).toThrow(/no profile "sunniva-brett"/);
  });
});
