/**
 * Positions of a log found empty below ones already applied, and when: on PostgreSQL an entry is numbered when it is
 * written, not when its transaction commits, so a write still in flight leaves a hole that fills when it commits (or
 * never, when it rolls back). Each is looked at again at every catch-up until it fills or `holeWaitMs` passes. The
 * search index and the vector codes follow their logs with these.
 */
export class Holes {
  private readonly since = new Map<number, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Notes the positions between `after` (excluded) and `before` (excluded) as holes; a jump too wide is not a write in flight. */
  between(after: number, before: number): void {
    if (before - after - 1 > maxHoles) return;
    const at = this.now();
    for (let seq = after + 1; seq < before; seq++) if (!this.since.has(seq)) this.since.set(seq, at);
  }

  /** Notes each position from `after` (excluded) to `upTo` (included) that is not in `present`. */
  missingFrom(after: number, upTo: number, present: number[]): void {
    let last = after;
    for (const seq of [...present, upTo + 1]) {
      this.between(last, seq);
      last = seq;
    }
  }

  has(seq: number): boolean {
    return this.since.has(seq);
  }

  fill(seq: number): void {
    this.since.delete(seq);
  }

  /** The holes still worth a look (older ones are forgotten: their writes rolled back). */
  open(): number[] {
    const horizon = this.now() - holeWaitMs;
    for (const [seq, at] of this.since) if (at < horizon) this.since.delete(seq);
    return [...this.since.keys()];
  }

  /** Forgets every hole: the index was built afresh. */
  clear(): void {
    this.since.clear();
  }
}

/** How long a hole is looked at: longer than any transaction that writes chunks stays open (each statement is cut at 30 s). */
export const holeWaitMs = 5 * 60_000;
/** Holes noted at once at most: a wider jump is a rolled-back batch or a reset, not writes in flight. */
const maxHoles = 100_000;
/** Positions below a loaded index's own that are checked for writes in flight when it loads. */
export const loadWindow = 1_000;
