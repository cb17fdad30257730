import { Busy } from '../Sql.js';

/** Which line a caller waits in: `urgent` (an instance's lease, a health check) is served before any `normal` one. */
export type Lane = 'urgent' | 'normal';

/** Gives back a turn; calling it again does nothing. */
export type Release = () => void;

export type Turns = {
  /** Waits for a free turn, in order within its lane; rejects with `Busy` after `waitMs` (or the default) without one. */
  take(lane: Lane, waitMs?: number): Promise<Release>;
  /** Callers waiting now, in both lanes. */
  waiting(): number;
};

type Waiter = { grant: (release: Release) => void; timer: NodeJS.Timeout };

/**
 * Turns at a connection pool: at most `size` callers hold a connection at once, and the rest wait here in arrival
 * order, so the pool itself never queues. Waiting for a turn (bounded by `waitMs`) is then told apart from reaching
 * the server (bounded by the pool's connect timeout): a burst larger than the pool is a wait, or `Busy`, never a
 * database reported lost. Urgent callers go first, so an instance's lease is renewed however long the line of
 * requests is.
 */
export function create(options: { size: number; waitMs: number }): Turns {
  let free = options.size;
  const lines: Record<Lane, Waiter[]> = { urgent: [], normal: [] };
  const release = (): Release => {
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = lines.urgent.shift() ?? lines.normal.shift();
      if (!next) {
        free += 1;
        return;
      }
      clearTimeout(next.timer);
      next.grant(release());
    };
  };
  return {
    take(lane, waitMs = options.waitMs) {
      if (free > 0) {
        free -= 1;
        return Promise.resolve(release());
      }
      const started = Date.now();
      return new Promise<Release>((resolve, reject) => {
        const waiter: Waiter = {
          grant: resolve,
          timer: setTimeout(() => {
            const line = lines[lane];
            line.splice(line.indexOf(waiter), 1);
            reject(new Busy(Date.now() - started));
          }, waitMs),
        };
        lines[lane].push(waiter);
      });
    },
    waiting: () => lines.urgent.length + lines.normal.length,
  };
}
