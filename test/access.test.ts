import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Access from '../src/auth/Access.js';
import * as Caller from '../src/auth/Caller.js';
import type * as Stores from '../src/store/Store.js';
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

/** The statements a check ran on the store, in order, with how many rows each read or changed. */
async function statementsOf(run: (store: Stores.Store) => Promise<unknown>): Promise<string[]> {
  const ran: string[] = [];
  const watched = environment.services.store.observed(({ text, rows }) => ran.push(`${text.replace(/\s+/g, ' ')}: ${rows}`));
  try {
    await run(watched);
  } catch {
    // The refusal itself is compared below.
  }
  return ran;
}

describe('a private profile and an unknown one', () => {
  const cases: [string, (k: Keys) => Caller.Presented][] = [
    ['no credentials', () => ({ origin: 'test' })],
    ['an unrelated API key', (k) => ({ apiKey: k.callerKey, origin: 'test' })],
    ['an unrelated bearer token', (k) => ({ bearerToken: k.outsiderBearer, origin: 'test' })],
  ];

  test.each(cases)('behavior: with %s, both are the same 404 after the same statements', async (_name, presented) => {
    const { store } = environment.services;
    const caller = await Caller.resolve(store, presented(environment.keys));
    const refusal = async (slug: string) => {
      try {
        await Access.readableProfile(store, slug, caller);
      } catch (error) {
        return (error as Error).message.replace(slug, 'SLUG');
      }
      return 'readable';
    };
    expect(await refusal('sunniva-bratt')).toBe(await refusal('sunniva-brett'));
    const privately = await statementsOf((watched) => Access.readableProfile(watched, 'sunniva-bratt', caller));
    const unknown = await statementsOf((watched) => Access.readableProfile(watched, 'sunniva-brett', caller));
    expect(privately.length).toBeGreaterThan(0);
    expect(unknown).toEqual(privately);
  });

  test('behavior: the owner still reads the private profile, and an unknown handle is still unknown to them', async () => {
    const { store } = environment.services;
    const owner = await Caller.resolve(store, { bearerToken: environment.keys.sunnivaBearer, origin: 'test' });
    expect((await Access.readableProfile(store, 'sunniva-bratt', owner)).slug).toBe('sunniva-bratt');
    await expect(Access.readableProfile(store, 'sunniva-brett', owner)).rejects.toThrow(/no profile "sunniva-brett"/);
  });
});
