import type { Store } from '../store/Store.js';

/** What a keeper tells its owner after each attempt: renewed (`held` false: the row was gone and is back), or why not. */
export type Report =
  | { kind: 'renewed'; held: boolean; /** Since the last renewal that landed. */ gapMs: number }
  | { kind: 'failed'; error: string }
  | { kind: 'stalled'; /** How long the serving thread has not answered. */ stalledMs: number };

export type Keeper = {
  /** Stops renewing, after the renewal under way (if any) lands or fails. */
  stop(): Promise<void>;
};

/**
 * Renews an instance's lease every `everyMs`, one renewal at a time, for as long as `alive` says the process still
 * serves (undefined when it does): a process whose serving thread is stuck lets its lease run out, so another settles
 * what it holds. Each attempt is told to `tell`. The store is asked for again after a failure to reach it.
 */
export function keep(input: {
  store: () => Promise<Store>;
  id: string;
  name: string;
  everyMs: number;
  now: () => number;
  alive: () => number | undefined;
  tell: (report: Report) => void;
}): Keeper {
  const { id, name, now, tell } = input;
  let last = now();
  let running: Promise<void> | undefined;
  let stalled = false;
  const renew = async (): Promise<void> => {
    const stalledMs = input.alive();
    if (stalledMs !== undefined) {
      // Told once when it begins, not at every tick of a stall.
      if (!stalled) tell({ kind: 'stalled', stalledMs });
      stalled = true;
      return;
    }
    stalled = false;
    try {
      const held = await (await input.store()).instances.renew({ id, name, now: now() });
      const at = now();
      tell({ kind: 'renewed', held, gapMs: at - last });
      last = at;
    } catch (error) {
      tell({ kind: 'failed', error: error instanceof Error ? error.message : String(error) });
    }
  };
  const timer = setInterval(() => {
    running ??= renew().finally(() => (running = undefined));
  }, input.everyMs);
  // Renewing never holds a process open by itself: one with nothing else to do stops, and its lease runs out.
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
