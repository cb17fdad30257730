import crypto from 'node:crypto';
import os from 'node:os';
import type { Logger } from '../log/Logger.js';
import type { Store } from '../store/Store.js';

/**
 * This process as one of the instances serving a database: a row with a lease it renews every few seconds while it
 * runs, removed when it stops. Charges and payments it takes carry its id, so a process whose lease ran out (killed,
 * frozen, cut off) can be told from one still answering: what the first left part-way is anyone's to settle, what the
 * second has in flight is its own. After each renewal `afterRenew` runs (reconciliation claims leases that ran out).
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
 * How long a lease lasts unrenewed, unless configured (INSTANCE_LEASE_SECONDS): renewed every quarter of it, so a busy
 * moment or a slow statement does not lose it.
 */
export const leaseMs = 20_000;

export function create(input: { store: Store; logger: Logger; afterRenew?: () => Promise<void>; now?: () => number; leaseMs?: number; renewEveryMs?: number }): Instance {
  const { store, logger } = input;
  const now = input.now ?? Date.now;
  const name = `${os.hostname()}:${process.pid}`;
  let id: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<void> | undefined;

  const renew = async (): Promise<void> => {
    if (id === undefined) return;
    try {
      const held = await store.instances.renew({ id, name, now: now() });
      // Found gone by another process (this one stood still past its lease): what it had in flight was settled by
      // them. It serves on under the same id, which counts as live again from here.
      if (!held) logger.warn('this instance was taken for gone (its lease ran out) and has registered again', { instance: id });
    } catch (error) {
      // The database away, or busy: the next renewal tries again (the lease outlasts several).
      return logger.warn('instance lease not renewed', { instance: id, error });
    }
    await input.afterRenew?.().catch((error: unknown) => logger.error('after renewing the instance lease', { error }));
  };
  return {
    id: () => id,
    async start() {
      if (id !== undefined) return;
      id = `i_${crypto.randomBytes(8).toString('hex')}`;
      await store.instances.renew({ id, name, now: now() });
      logger.info('instance registered', { instance: id, name });
      timer = setInterval(() => {
        renewing ??= renew().finally(() => (renewing = undefined));
      }, input.renewEveryMs ?? (input.leaseMs ?? leaseMs) / 4);
      timer.unref();
      await input.afterRenew?.().catch((error: unknown) => logger.error('after registering', { error }));
    },
    async stop() {
      if (id === undefined) return;
      clearInterval(timer);
      await renewing;
      const leaving = id;
      id = undefined;
      await store.instances.leave(leaving).catch((error: unknown) => logger.warn('instance lease not given up (it runs out by itself)', { instance: leaving, error }));
    },
  };
}
