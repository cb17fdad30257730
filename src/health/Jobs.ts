import type { Store } from '../store/Store.js';
import type { JobLease } from '../store/JobLeases.js';
import * as Ids from '../store/Ids.js';
import { leaseExpired, processHost } from './Leases.js';

/** The jobs one process at a time runs on a store: each reads the whole corpus and replaces what queries read. */
export type JobName = 'term_model' | 'vector_index';

/**
 * How long a holder on another machine may be silent before its job is taken over. A rebuild's heaviest steps are
 * synchronous and miss heartbeats for their length, so this is long; a holder on this machine that is gone is known
 * at once.
 */
export const defaultStaleMs = 5 * 60_000;

/**
 * Runs `work` while holding the store-wide lease on `name`: several instances (or `serve` and a CLI command) that
 * would rebuild at once take turns, the later waiting for the earlier to finish (`onWait` is told once, with who
 * holds it). The lease is renewed while `work` runs and ended after it, however it ends; a holder killed part-way
 * leaves a lease that ends when its process is found gone (this machine) or silent for `staleMs` (another).
 */
export async function oneAtATime<T>(
  store: Store,
  name: JobName,
  work: () => Promise<T>,
  options: { onWait?: (holder: JobLease) => void; pollMs?: number; staleMs?: number; now?: () => number } = {},
): Promise<T> {
  const now = options.now ?? Date.now;
  const staleMs = options.staleMs ?? defaultStaleMs;
  const holder = Ids.random('job');
  let told = false;
  for (;;) {
    const at = now();
    const claimed = await store.jobs.claim({ name, holder, host: processHost, pid: process.pid, now: at, expired: (lease) => leaseExpired(lease, { now: at, staleMs }) });
    if (claimed.claimed) break;
    if (!told) options.onWait?.(claimed.lease);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1_000));
  }
  const timer = setInterval(() => void store.jobs.beat(name, holder, now()).catch(() => undefined), Math.max(1_000, staleMs / 4));
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
    // A release the database missed ends when the lease is found stale.
    await store.jobs.release(name, holder).catch(() => undefined);
  }
}

/** Who holds a job, for a message: the process and its machine, and since when. */
export function holderOf(lease: JobLease): string {
  return `process ${lease.pid} on ${lease.host.split('/')[0]}, since ${new Date(lease.startedAt).toISOString()}`;
}
