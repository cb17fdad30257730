/**
 * A circuit breaker for one outside party (the embedder, the model, a rail's facilitator or RPC): after `failures`
 * failures in a row it opens, and calls are skipped for `coolMs`; then one call is let through as a probe, which
 * closes it on success or opens it for another cooling period on failure. A small state machine rather than a
 * library: each caller already has its own timeout and fallback, and needs only "may I call now?".
 */
export type BreakerState = 'closed' | 'open' | 'half_open';

export type Breaker = {
  readonly name: string;
  /** True when a call may go out now. In `half_open`, only the first caller gets true: the probe. */
  allow(): boolean;
  succeeded(): void;
  failed(): void;
  /** A call that ended without saying anything of the party's health (this side failed first): a probe slot is freed. */
  inconclusive(): void;
  state(): BreakerState;
  /** Seconds until an open breaker lets a probe through (0 when it would now). */
  retryAfterSeconds(): number;
};

export type Options = { failures: number; coolMs: number; now?: () => number; onChange?: (name: string, state: BreakerState) => void };

export function create(name: string, options: Options): Breaker {
  const now = options.now ?? Date.now;
  let state: BreakerState = 'closed';
  let failuresInRow = 0;
  let openedAt = 0;
  let probing = false;
  const become = (next: BreakerState) => {
    if (next === state) return;
    state = next;
    options.onChange?.(name, next);
  };
  const cooled = () => now() - openedAt >= options.coolMs;
  return {
    name,
    allow() {
      if (state === 'closed') return true;
      if (state === 'open') {
        if (!cooled()) return false;
        become('half_open');
      }
      // Half open: one probe at a time.
      if (probing) return false;
      probing = true;
      return true;
    },
    succeeded() {
      failuresInRow = 0;
      probing = false;
      become('closed');
    },
    inconclusive() {
      probing = false;
    },
    failed() {
      probing = false;
      failuresInRow += 1;
      if (state === 'half_open' || failuresInRow >= options.failures) {
        openedAt = now();
        become('open');
      }
    },
    state() {
      // An open breaker whose cooling period is over is ready for its probe: said as half open.
      return state === 'open' && cooled() ? 'half_open' : state;
    },
    retryAfterSeconds() {
      return state === 'open' ? Math.max(0, Math.ceil((options.coolMs - (now() - openedAt)) / 1000)) : 0;
    },
  };
}

/** The outside parties a process calls, each with its breaker. */
export type Dependency = 'embedder' | 'synthesizer' | 'tempo' | 'x402_base';

export const dependencies: readonly Dependency[] = ['embedder', 'synthesizer', 'tempo', 'x402_base'];

export type Breakers = Record<Dependency, Breaker>;

export function forAll(options: Options): Breakers {
  return Object.fromEntries(dependencies.map((d) => [d, create(d, options)])) as Breakers;
}
