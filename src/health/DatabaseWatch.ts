import type { Logger } from '../log/Logger.js';
import { type OpenStore, Unavailable } from '../store/Store.js';

/**
 * The database as this process finds it. Says in the log when it is lost (which database, and why) and when it is
 * back (after how long); asks it every few seconds while it is away, so it is found back even when no request comes;
 * and runs what had to wait for it (a payment's release that could not be written) once it answers.
 */
export type DatabaseWatch = {
  /** True from a statement that found the database unreachable until one is answered again. */
  readonly down: boolean;
  /** Runs `work` once the database answers again (soon, if it already does); `what` names it in the log. */
  whenBack(what: string, work: () => Promise<void>): void;
  close(): void;
};

export function create(input: { store: OpenStore; logger: Logger; pollMs?: number }): DatabaseWatch {
  const { store, logger } = input;
  const pollMs = input.pollMs ?? 2_000;
  const waiting: { what: string; work: () => Promise<void> }[] = [];
  let down = false;
  let polling: NodeJS.Timeout | undefined;
  let draining: NodeJS.Timeout | undefined;

  const drain = async (): Promise<void> => {
    for (const job of waiting.splice(0)) {
      try {
        await job.work();
        logger.info(`${job.what}: done now that the database answers`);
      } catch (error) {
        // Lost again: it waits for the next time the database is back.
        if (error instanceof Unavailable) waiting.push(job);
        else logger.error(`${job.what} failed`, { error });
      }
    }
  };
  const stopWatching = store.watch((event) => {
    if (event.state === 'lost') {
      down = true;
      logger.warn('database unreachable: requests that need it get 503 until it answers', { database: event.detail });
      polling ??= setInterval(() => void store.ping().catch(() => undefined), pollMs).unref();
    } else {
      down = false;
      clearInterval(polling);
      polling = undefined;
      logger.info('database reachable again', { downSeconds: Math.round(event.downMs / 100) / 10 });
      void drain();
    }
  });
  return {
    get down() {
      return down;
    },
    whenBack(what, work) {
      waiting.push({ what, work });
      // Not known to be down (the failure was found elsewhere): try again shortly rather than wait for an event.
      if (!down) draining ??= setTimeout(() => ((draining = undefined), void drain()), pollMs).unref();
    },
    close() {
      stopWatching();
      clearInterval(polling);
      clearTimeout(draining);
    },
  };
}
