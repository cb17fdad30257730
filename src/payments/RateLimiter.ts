/** The verdict on one request: allowed, or how long to wait. */
export type Verdict = { ok: true } | { ok: false; retryAfterSeconds: number; resetAt: Date };

export type RateLimiter = {
  take(key: string): Verdict;
  /** How many callers are being tracked. */
  size(): number;
};

/**
 * A token bucket per key: `perMinute` requests in a burst, refilled evenly over a minute. Idle buckets are dropped so
 * the map stays bounded by the number of recently active callers.
 */
export function create(options: { perMinute: number; now?: () => number }): RateLimiter {
  const now = options.now ?? Date.now;
  const capacity = options.perMinute;
  const refillPerMs = options.perMinute / 60_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  let lastSweep = now();
  return {
    take(key) {
      const t = now();
      if (t - lastSweep > 60_000) {
        for (const [k, b] of buckets) if (b.tokens + (t - b.at) * refillPerMs >= capacity) buckets.delete(k);
        lastSweep = t;
      }
      const bucket = buckets.get(key) ?? { tokens: capacity, at: t };
      bucket.tokens = Math.min(capacity, bucket.tokens + (t - bucket.at) * refillPerMs);
      bucket.at = t;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { ok: true };
      }
      const waitMs = (1 - bucket.tokens) / refillPerMs;
      const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
      return { ok: false, retryAfterSeconds, resetAt: new Date(t + retryAfterSeconds * 1000) };
    },
    size: () => buckets.size,
  };
}
