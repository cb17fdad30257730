import * as Jobs from '../health/Jobs.js';
import type { Logger } from '../log/Logger.js';
import type { Kind, SnapshotRow } from '../store/Snapshots.js';
import type { Store } from '../store/Store.js';

/**
 * Keeps a store's snapshot of derived state (the search index, the vector codes) close enough to its log that an
 * instance starting from it has little to follow: a serving instance looks after its state loads, after syncs, and
 * every few minutes, and when the snapshot is missing, does not fit what it holds, or is behind by more than
 * `lagLimit` entries, writes its own under a store-wide lease, so one instance writes while the others read.
 */

/** What is kept: the state one instance holds, and where its snapshot and log are. */
export type Subject = {
  kind: Kind;
  /** The lease it is written under. */
  job: Jobs.JobName;
  /** What logs call it. */
  name: string;
  /** Chunks held, once loaded; undefined before (or when there is nothing to keep). */
  chunks(): number | undefined;
  /** Whether the store's snapshot could be started from: not one this instance refused, not of other state. */
  fits(row: SnapshotRow): boolean | Promise<boolean>;
  /** The log the snapshot follows. */
  logBounds(): Promise<{ first: number | null; last: number | null }>;
  /** Entries the log keeps: a snapshot is made again well before it falls that far behind. */
  logKept: number;
  /** Writes the snapshot of what is held now: its size and the log position it covers. */
  write(): Promise<{ bytes: number; position: number }>;
};

/** Log entries a snapshot may fall behind before it is made again: well inside what the log keeps. */
export function lagLimit(chunks: number, logKept = 200_000): number {
  return Math.min(logKept / 2, Math.max(10_000, Math.round(chunks * 0.05)));
}

export type Keeper = {
  /** Writes a snapshot if one is due; what it did. */
  check(): Promise<'written' | 'not due' | 'left to another' | 'small store' | 'not loaded'>;
  stop(): void;
};

export function start(deps: {
  store: Store;
  subject: Subject;
  logger: Logger;
  /** Stores with fewer chunks keep no snapshot. */
  minChunks: number;
  everyMs?: number;
}): Keeper {
  const { store, subject, logger } = deps;
  let running: ReturnType<Keeper['check']> | undefined;
  const due = async (chunks: number): Promise<boolean> => {
    const [row, { last }] = await Promise.all([store.snapshots.current(subject.kind), subject.logBounds()]);
    if (!row || !(await subject.fits(row))) return true;
    return (last ?? 0) - row.position >= lagLimit(chunks, subject.logKept);
  };
  const check = async (): ReturnType<Keeper['check']> => {
    const chunks = subject.chunks();
    if (chunks === undefined) return 'not loaded';
    if (chunks < deps.minChunks) return 'small store';
    if (!(await due(chunks))) return 'not due';
    const written = await Jobs.oneAtATime(
      store,
      subject.job,
      async () => {
        // Another instance may have written one while this one waited for the lease.
        if (!(await due(chunks))) return 'not due' as const;
        const started = performance.now();
        const result = await subject.write();
        logger.info(`${subject.name}: snapshot written`, { ...result, ms: Math.round(performance.now() - started) });
        return 'written' as const;
      },
      { skipIfHeld: true },
    );
    return written ?? 'left to another';
  };
  const once = () => {
    // One check at a time; a failure (the database away) waits for the next.
    running ??= check()
      .catch((error: unknown) => {
        logger.error(`${subject.name}: snapshot not written`, { error });
        return 'not due' as const;
      })
      .finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => void once(), deps.everyMs ?? 5 * 60_000);
  timer.unref();
  return { check: once, stop: () => clearInterval(timer) };
}
