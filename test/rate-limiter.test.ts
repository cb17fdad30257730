import { beforeAll, describe, expect, test } from 'vitest';
import * as RateLimiter from '../src/payments/RateLimiter.js';
import type * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';

describe.each(Engines.engines)('RateLimiter on %s', (engine) => {
  // A second connection of its own: another process on the same database.
  const processes = Engines.twoProcesses(engine, 'limits');
  let store: Stores.OpenStore;
  let other: Stores.OpenStore;
  beforeAll(() => void ({ a: store, b: other } = processes));

  test('behavior: allows a burst of perMinute, then refills evenly', async () => {
    let now = 0;
    const limiter = RateLimiter.create({ store, perMinute: 6, now: () => now });
    for (let i = 0; i < 6; i += 1) expect((await limiter.take('burst')).ok).toBe(true);
    expect(await limiter.take('burst')).toMatchObject({ ok: false, retryAfterSeconds: 10 });
    now += 10_000;
    expect((await limiter.take('burst')).ok).toBe(true);
    expect((await limiter.take('burst')).ok).toBe(false);
  });

  test('behavior: Retry-After is an integer of at least one second and resetAt lies that far ahead', async () => {
    const now = 1_000_000;
    const limiter = RateLimiter.create({ store, perMinute: 1000, now: () => now });
    for (let i = 0; i < 1000; i += 1) await limiter.take('retry');
    const verdict = await limiter.take('retry');
    if (verdict.ok) throw new Error('expected a refusal');
    expect(verdict.retryAfterSeconds).toBe(1);
    expect(verdict.resetAt.getTime()).toBe(now + 1000);
  });

  test('behavior: keys are independent, and buckets idle for a minute are forgotten', async () => {
    let now = 5_000_000;
    const limiter = RateLimiter.create({ store, perMinute: 1, now: () => now });
    expect((await limiter.take('idle-a')).ok).toBe(true);
    expect((await limiter.take('idle-b')).ok).toBe(true);
    expect((await limiter.take('idle-a')).ok).toBe(false);
    now += 120_000;
    expect((await limiter.take('idle-a')).ok).toBe(true);
    // The sweep forgot idle-b, idle-a before it was taken from afresh, and the earlier cases' buckets.
    expect(await store.rateLimits.count()).toBe(1);
  });

  test('behavior: two processes on one database give a caller one limit between them, not one each', async () => {
    let now = 9_000_000;
    const here = RateLimiter.create({ store, perMinute: 4, now: () => now });
    const there = RateLimiter.create({ store: other, perMinute: 4, now: () => now });
    const verdicts = [await here.take('shared'), await there.take('shared'), await here.take('shared'), await there.take('shared'), await there.take('shared')];
    expect(verdicts.map((v) => v.ok)).toEqual([true, true, true, true, false]);
    expect((await here.take('shared')).ok).toBe(false);
    now += 15_000;
    expect((await there.take('shared')).ok).toBe(true);
  });

  test('behavior: requests at the same moment from several connections take no more than the bucket holds', async () => {
    const now = 12_000_000;
    const limiters = [store, other].map((s) => RateLimiter.create({ store: s, perMinute: 10, now: () => now }));
    const verdicts = await Promise.all(Array.from({ length: 40 }, (_, i) => limiters[i % 2]!.take('burst-together')));
    expect(verdicts.filter((v) => v.ok)).toHaveLength(10);
  });
});
