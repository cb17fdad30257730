import { ServiceError } from '../errors/ServiceError.js';
import type { Store } from '../store/Store.js';
import type { JobLease } from '../store/JobLeases.js';
import * as Ids from '../store/Ids.js';
import { leaseExpired, processHost } from './Leases.js';

/** The jobs one process at a time runs on a store: each reads the whole corpus and replaces what queries read. */
export type JobName = 'term_model' | 'vector_index' | 'search_snapshot' | 'vector_snapshot';

/**
 * How long a holder on another machine may be silent before its job is taken over. A rebuild's heaviest steps are
 * synchronous and miss heartbeats for their length, so this is long; a holder on this machine that is gone is known
 * at once.
 */
export const defaultStaleMs = 5 * 60_000;

/** The holders this process runs now: a lease of this process under any other holder was left by a finished job. */
const ours = new Set<string>();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A database that is away or busy for a moment: the wait for a lease asks again rather than give up. */
const passing = (error: unknown) => error instanceof ServiceError && error.code === 'service_unavailable';

export type Options = {
  /** Told once, with who holds it, when the job must wait. */
  onWait?: (holder: JobLease) => void;
  /** Do not wait: when another holds the job, return undefined at once (its holder is doing the work). */
  skipIfHeld?: boolean;
  pollMs?: number;
  staleMs?: number;
  now?: () => number;
};

/**
 * Runs `work` while holding the store-wide lease on `name`: several instances (or `serve` and a CLI command) that
 * would rebuild at once take turns, the later waiting for the earlier to finish (`onWait` is told once, with who
 * holds it), or, with `skipIfHeld`, leaving it to the holder. The lease is renewed while `work` runs and ended after
 * it, however it ends; a holder killed part-way leaves a lease that ends when its process is found gone (this
 * machine) or silent for `staleMs` (another).
 */
export async function oneAtATime<T>(store: Store, name: JobName, work: () => Promise<T>, options: Options & { skipIfHeld: true }): Promise<T | undefined>;
export async function oneAtATime<T>(store: Store, name: JobName, work: () => Promise<T>, options?: Options): Promise<T>;
export async function oneAtATime<T>(store: Store, name: JobName, work: () => Promise<T>, options: Options = {}): Promise<T | undefined> {
  const now = options.now ?? Date.now;
  const staleMs = options.staleMs ?? defaultStaleMs;
  const pollMs = options.pollMs ?? 1_000;
  const holder = Ids.random('job');
  const expired = (lease: JobLease, at: number) =>
    (lease.host === processHost && lease.pid === process.pid && !ours.has(lease.holder)) || leaseExpired(lease, { now: at, staleMs });
  let told = false;
  // Counted as running from its first claim: a claim it wins is this process's as soon as it commits.
  ours.add(holder);
  for (;;) {
    const at = now();
    let claimed: Awaited<ReturnType<Store['jobs']['claim']>>;
    try {
      claimed = await store.jobs.claim({ name, holder, host: processHost, pid: process.pid, now: at, expired: (lease) => expired(lease, at) });
    } catch (error) {
      if (!passing(error)) {
        ours.delete(holder);
        throw error;
      }
      await sleep(pollMs);
      continue;
    }
    if (claimed.claimed) break;
    if (options.skipIfHeld) {
      ours.delete(holder);
      return undefined;
    }
    if (!told) options.onWait?.(claimed.lease);
    told = true;
    await sleep(pollMs);
  }
  const timer = setInterval(() => void store.jobs.beat(name, holder, now()).catch(() => undefined), Math.max(1_000, staleMs / 4));
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
    ours.delete(holder);
    // A release the database missed a few times is found later: this process's lease under a holder it no longer
    // runs is free to it at once, and to others once stale.
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        await store.jobs.release(name, holder);
        break;
      } catch {
        if (attempt < 3) await sleep(pollMs);
      }
    }
  }
}

/** Who holds a job, for a message: the process and its machine, and since when. */
export function holderOf(lease: JobLease): string {
  return `process ${lease.pid} on ${lease.host.split('/')[0]}, since ${new Date(lease.startedAt).toISOString()}`;
}
