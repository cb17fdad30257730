/**
 * Work a request started that outlives its response: a paid answer's payment is captured once the answer has left,
 * after the response. A process shutting down waits for it, so no payment is left half-way by a clean stop.
 */
export type Pending = {
  /** Tracks `work` until it settles; returns it. */
  track<T>(work: Promise<T>): Promise<T>;
  /** Resolves once nothing tracked is left (at once when nothing is). */
  idle(): Promise<void>;
  /** How many are in flight. */
  readonly size: number;
};

export function create(): Pending {
  const running = new Set<Promise<unknown>>();
  return {
    track(work) {
      const tracked = work.finally(() => running.delete(tracked));
      running.add(tracked);
      return work;
    },
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
    get size() {
      return running.size;
    },
  };
}
