import type { Store } from '../store/Store.js';

/** The verdict on one request: allowed, or how long to wait. */
export type Verdict = { ok: true } | { ok: false; retryAfterSeconds: number; resetAt: Date };

export type RateLimiter = {
  take(key: string): Promise<Verdict>;
};

/**
 * A token bucket per key: `perMinute` requests in a burst, refilled evenly over a minute. The buckets are kept in the
 * store, so every process on one database (several instances behind a load balancer, or `serve` beside a stdio `mcp`)
 * gives a caller one limit between them. Buckets idle for a minute are full again, and are forgotten.
 */
export function create(options: { store: Store; perMinute: number; now?: () => number }): RateLimiter {
  const { store } = options;
  const now = options.now ?? Date.now;
  const capacity = options.perMinute;
  const perMs = options.perMinute / 60_000;
  let lastSweep = now();
  return {
    async take(key) {
      const t = now();
      if (t - lastSweep > 60_000) {
        lastSweep = t;
        await store.rateLimits.forget(t - 60_000);
      }
      const { granted, tokens } = await store.rateLimits.take({ key, capacity, perMs, now: t });
      if (granted) return { ok: true };
      const waitMs = (1 - tokens) / perMs;
      const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
      return { ok: false, retryAfterSeconds, resetAt: new Date(t + retryAfterSeconds * 1000) };
    },
  };
}
