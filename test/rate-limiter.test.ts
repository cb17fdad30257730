import { describe, expect, test } from 'vitest';
import * as RateLimiter from '../src/payments/RateLimiter.js';

describe('RateLimiter', () => {
  test('behavior: allows a burst of perMinute, then refills evenly', () => {
    let now = 0;
    const limiter = RateLimiter.create({ perMinute: 6, now: () => now });
    for (let i = 0; i < 6; i += 1) expect(limiter.take('a').ok).toBe(true);
    const verdict = limiter.take('a');
    expect(verdict).toMatchObject({ ok: false, retryAfterSeconds: 10 });
    now += 10_000;
    expect(limiter.take('a').ok).toBe(true);
    expect(limiter.take('a').ok).toBe(false);
  });

  test('behavior: Retry-After is an integer of at least one second and resetAt lies that far ahead', () => {
    let now = 1_000_000;
    const limiter = RateLimiter.create({ perMinute: 1000, now: () => now });
    for (let i = 0; i < 1000; i += 1) limiter.take('a');
    const verdict = limiter.take('a');
    if (verdict.ok) throw new Error('expected a refusal');
    expect(verdict.retryAfterSeconds).toBe(1);
    expect(verdict.resetAt.getTime()).toBe(now + 1000);
    now += 1;
  });

  test('behavior: keys are independent and idle buckets are forgotten', () => {
    let now = 0;
    const limiter = RateLimiter.create({ perMinute: 1, now: () => now });
    expect(limiter.take('a').ok).toBe(true);
    expect(limiter.take('b').ok).toBe(true);
    expect(limiter.take('a').ok).toBe(false);
    expect(limiter.size()).toBe(2);
    now += 120_000;
    expect(limiter.take('a').ok).toBe(true);
    expect(limiter.size()).toBe(1);
  });
});
