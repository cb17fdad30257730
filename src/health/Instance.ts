import crypto from 'node:crypto';
import os from 'node:os';
import type { Worker } from 'node:worker_threads';
import type { Logger } from '../log/Logger.js';
import type { Store, Target } from '../store/Store.js';
import * as LeaseKeeper from './LeaseKeeper.js';
import type * as LeaseThread from './LeaseThread.js';
import * as Threads from './Threads.js';

/**
 * This process as one of the instances serving a database: a row with a lease it renews every few seconds while it
 * runs, removed when it stops. Charges and payments it takes carry its id, so a process whose lease ran out (killed,
 * frozen, cut off) can be told from one still answering: what the first left part-way is anyone's to settle, what the
 * second has in flight is its own.
 *
 * The lease is renewed from a thread of its own, on a connection of its own (`LeaseThread`), so a live process keeps
 * it however busy it is. Beside it, on this thread and never in the renewal's way, `claimGone` runs as often: it claims
 * the leases that ran out and settles what their holders left (see Reconciliation.settleGone).
 */
export type Instance = {
  /** This process's id while it holds a lease; undefined before `start` and after `stop`. */
  id(): string | undefined;
  /** Registers and renews until `stop`. */
  start(): Promise<void>;
  /** Stops renewing and removes the row: what it left part-way is anyone's at once. */
  stop(): Promise<void>;
};

/**
 * How long a lease lasts unrenewed, unless configured (INSTANCE_LEASE_SECONDS): renewed every quarter of it. The
 * renewing thread waits on nothing the requests wait on, so this bounds how long a process may be frozen or cut off.
 */
export const leaseMs = 20_000;

/**
 * How long the serving thread may not answer before its process counts as stuck and its lease is left to run out: far
 * beyond any request's synchronous step (a term model rebuild of a small store, a search index's load).
 */
export const stallMs = 120_000;

/** How often the serving thread tells the lease thread it answers. */
const beatMs = 1_000;

export function create(input: {
  store: Store;
  logger: Logger;
  /**
   * The database the store is on, for the lease thread's own connection. Without it (or on a database only this
   * process sees, SQLite's `:memory:`), the lease is renewed on this thread.
   */
  target?: Target | undefined;
  /** Claims the leases that ran out and settles what they left: run beside renewals, one at a time. */
  claimGone?: () => Promise<void>;
  now?: () => number;
  leaseMs?: number;
  renewEveryMs?: number;
  /** How long this thread may not answer before the lease is left to run out (`stallMs` unless given). */
  stallMs?: number;
}): Instance {
  const { store, logger } = input;
  const now = input.now ?? Date.now;
  const name = `${os.hostname()}:${process.pid}`;
  const lease = input.leaseMs ?? leaseMs;
  const everyMs = input.renewEveryMs ?? lease / 4;
  let id: string | undefined;
  let renewing: { stop(): Promise<void> } | undefined;
  let claiming: NodeJS.Timeout | undefined;
  let claim: Promise<void> | undefined;

  const heard = (report: LeaseKeeper.Report): void => {
    if (report.kind === 'failed') return logger.warn('instance lease not renewed', { instance: id, error: report.error });
    if (report.kind === 'stalled') return logger.error('this process has not answered its lease thread: its lease is left to run out', { instance: id, stalledMs: report.stalledMs });
    // Found gone by another process (this one stood still past its lease): what it had in flight was settled by them,
    // each step only where this process had not moved it on. It serves on under the same id, live again from here.
    if (!report.held) logger.warn('this instance was taken for gone (its lease ran out) and has registered again', { instance: id, sinceRenewedMs: report.gapMs });
    else if (report.gapMs > lease / 2) logger.warn('instance lease renewed late', { instance: id, sinceRenewedMs: report.gapMs, leaseMs: lease });
  };

  const claimGone = (): void => {
    claim ??= (input.claimGone?.() ?? Promise.resolve())
      .catch((error: unknown) => logger.error('claiming instances whose lease ran out', { error }))
      .finally(() => (claim = undefined));
  };

  return {
    id: () => id,
    async start() {
      if (id !== undefined) return;
      const mine = `i_${crypto.randomBytes(8).toString('hex')}`;
      // Registered here first: what this process charges from its first request on is its own.
      await store.instances.renew({ id: mine, name, now: now() });
      id = mine;
      logger.info('instance registered', { instance: id, name });
      const shared = input.target && !('path' in input.target && input.target.path === ':memory:');
      const here = (registered: string) => LeaseKeeper.keep({ store: async () => store, id: registered, name, everyMs, now, alive: () => undefined, tell: heard });
      renewing = shared ? onThread({ target: input.target!, id, name, everyMs, stallMs: input.stallMs ?? stallMs, heard, logger, here }) : here(id);
      claiming = setInterval(claimGone, everyMs);
      claiming.unref();
      claimGone();
      await claim;
    },
    async stop() {
      if (id === undefined) return;
      clearInterval(claiming);
      await Promise.all([renewing?.stop(), claim]);
      const leaving = id;
      id = undefined;
      await store.instances.leave(leaving).catch((error: unknown) => logger.warn('instance lease not given up (it runs out by itself)', { instance: leaving, error }));
    },
  };
}

/** How long a stop waits for the lease thread to finish its renewal and close its connection. */
const threadStopMs = 5_000;

/**
 * Renews from the lease thread, this thread stamping a shared clock every second to show it answers. A thread that
 * cannot start leaves the renewals to this thread, and says so.
 */
function onThread(input: {
  target: Target;
  id: string;
  name: string;
  everyMs: number;
  stallMs: number;
  heard: (report: LeaseKeeper.Report) => void;
  logger: Logger;
  /** Renews on this thread instead. */
  here: (id: string) => LeaseKeeper.Keeper;
}): LeaseKeeper.Keeper {
  const beat = new SharedArrayBuffer(8);
  const clock = new BigInt64Array(beat);
  const stamp = () => Atomics.store(clock, 0, BigInt(Date.now()));
  stamp();
  const beating = setInterval(stamp, beatMs);
  beating.unref();
  const data: LeaseThread.Data = { target: input.target, id: input.id, name: input.name, everyMs: input.everyMs, stallMs: input.stallMs, beat };
  const worker: Worker = Threads.start(Threads.sibling(import.meta.url, 'LeaseThread'), data);
  const ended = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.on('message', input.heard);
  let fallback: LeaseKeeper.Keeper | undefined;
  let stopping = false;
  worker.on('error', (error) => {
    if (stopping) return input.logger.warn('the instance lease thread failed while stopping', { instance: input.id, error });
    input.logger.error('the instance lease thread failed: the lease is renewed by the serving thread from here on', { instance: input.id, error });
    fallback ??= input.here(input.id);
  });
  // The process may end without stopping it (a command that exits): the thread never holds it open. After the
  // listeners: adding a 'message' listener refs the thread again, for good.
  worker.unref();
  return {
    async stop() {
      stopping = true;
      clearInterval(beating);
      await fallback?.stop();
      // Held open until the thread has ended: a process with nothing else left to do waits for it here.
      worker.ref();
      worker.postMessage('stop');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), threadStopMs)));
      if ((await Promise.race([ended, late])) === 'late') await worker.terminate();
      clearTimeout(timer);
    },
  };
}
