import * as Jobs from '../../health/Jobs.js';
import type { Logger } from '../../log/Logger.js';
import type { Store } from '../../store/Store.js';
import type { LexicalIndex } from './LexicalIndex.js';

/**
 * Keeps the store's snapshot of the search index close enough to the write log that an instance starting from it
 * has little to follow: a serving instance looks after its index loads, after syncs, and every few minutes, and when
 * the snapshot is missing, refused, or behind by more than `lagLimit` entries, writes its own, under the store-wide
 * `search_snapshot` lease, so one instance writes while the others read.
 */

/** Log entries a snapshot may fall behind before it is made again: well inside the 200,000 the log keeps. */
export function lagLimit(chunks: number): number {
  return Math.min(100_000, Math.max(10_000, Math.round(chunks * 0.05)));
}

export type Keeper = {
  /** Writes a snapshot if one is due; what it did. */
  check(): Promise<'written' | 'not due' | 'left to another' | 'small store' | 'not loaded'>;
  stop(): void;
};

export function start(deps: {
  store: Store;
  /** The index, once loaded (undefined while it loads). */
  index: () => LexicalIndex | undefined;
  logger: Logger;
  /** Stores with fewer chunks keep no snapshot. */
  minChunks: number;
  everyMs?: number;
}): Keeper {
  const { store, logger } = deps;
  let running: ReturnType<Keeper['check']> | undefined;
  const due = async (index: LexicalIndex): Promise<boolean> => {
    const [row, { last }] = await Promise.all([store.snapshots.current('search'), store.search.logBounds()]);
    if (!row || row.id === index.origin().refused) return true;
    return (last ?? 0) - row.position >= lagLimit(index.size().chunks);
  };
  const check = async (): ReturnType<Keeper['check']> => {
    const index = deps.index();
    if (!index) return 'not loaded';
    if (index.size().chunks < deps.minChunks) return 'small store';
    if (!(await due(index))) return 'not due';
    const written = await Jobs.oneAtATime(
      store,
      'search_snapshot',
      async () => {
        // Another instance may have written one while this one waited for the lease.
        if (!(await due(index))) return 'not due' as const;
        const started = performance.now();
        const result = await index.writeSnapshot();
        logger.info('search index: snapshot written', { ...result, ms: Math.round(performance.now() - started) });
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
        logger.error('search index: snapshot not written', { error });
        return 'not due' as const;
      })
      .finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => void once(), deps.everyMs ?? 5 * 60_000);
  timer.unref();
  return { check: once, stop: () => clearInterval(timer) };
}
