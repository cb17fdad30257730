import type { Logger } from '../log/Logger.js';
import type { QueryDay } from '../store/QueryDays.js';
import type { Store } from '../store/Store.js';

/**
 * Queries counted per day, profile, outcome and payment, for `profile-edge stats`: kept in memory and added to the
 * store every few seconds (and when the process stops), so a query costs no write of its own and several instances
 * add up. A process killed outright loses at most the last few seconds' counts; the ledger keeps every payment anyway.
 */
export type Tally = {
  count(input: { profileId: string; outcome: string; pay: string; usdMicros?: number; units?: number }): void;
  /** Adds what was counted to the store now. */
  flush(): Promise<void>;
  /** Flushes and stops the timer. */
  stop(): Promise<void>;
};

export function create(options: { store: Store; logger: Logger; everyMs?: number; now?: () => number }): Tally {
  const now = options.now ?? Date.now;
  let counted = new Map<string, QueryDay>();
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const flush = () => {
    flushing = flushing.then(async () => {
      if (counted.size === 0) return;
      const rows = [...counted.values()];
      counted = new Map();
      try {
        await options.store.queryDays.add(rows);
      } catch (error) {
        // Kept for the next flush: a database away for a while delays the counts, never loses them.
        for (const r of rows) merge(r);
        options.logger.warn('query counts not saved; tried again shortly', { error });
      }
    });
    return flushing;
  };
  const merge = (row: QueryDay) => {
    const key = `${row.day}\u0000${row.profileId}\u0000${row.outcome}\u0000${row.pay}`;
    const found = counted.get(key);
    if (!found) counted.set(key, { ...row });
    else {
      found.queries += row.queries;
      found.usdMicros += row.usdMicros;
      found.units += row.units;
    }
  };
  return {
    count(input) {
      merge({ day: new Date(now()).toISOString().slice(0, 10), profileId: input.profileId, outcome: input.outcome, pay: input.pay, queries: 1, usdMicros: input.usdMicros ?? 0, units: input.units ?? 0 });
      if (!timer) {
        timer = setInterval(() => void flush(), options.everyMs ?? 5_000);
        timer.unref();
      }
    },
    flush,
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await flush();
    },
  };
}
