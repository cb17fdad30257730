/**
 * Positions of a log found empty below ones already applied, and when: on PostgreSQL an entry is numbered when it is
 * written, not when its transaction commits, so a write still in flight leaves a hole that fills when it commits (or
 * never, when it rolls back). Each is looked at again at every catch-up until it fills or `holeWaitMs` passes. The
 * search index and the vector codes follow their logs with these.
 */
export class Holes {
  private readonly since = new Map<number, number>();
  /** The log's first position when it was last looked at. */
  private floor = 0;

  constructor(private readonly now: () => number = () => Date.now()) {}

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

  /**
   * The holes to look at now: every one, those past their wait included, and what to tell once the look is read
   * (`found`: the holes it found filled, applied next). A hole past its wait gets this one last look before it is
   * forgotten: one taken from a snapshot written long ago, or on an index no question read for a while, was never
   * looked at since its write could have committed.
   */
  look(): { seqs: number[]; done(found: Iterable<number>): void } {
    const horizon = this.now() - holeWaitMs;
    const expired = [...this.since].filter(([, at]) => at < horizon).map(([seq]) => seq);
    return {
      seqs: [...this.since.keys()],
      done: (found) => {
        const filled = new Set(found);
        for (const seq of expired) if (!filled.has(seq)) this.since.delete(seq);
      },
    };
  }

  /** The holes still worth a look (older ones are forgotten: their writes rolled back). */
  open(): number[] {
    const horizon = this.now() - holeWaitMs;
    for (const [seq, at] of this.since) if (at < horizon) this.since.delete(seq);
    return [...this.since.keys()];
  }

  /** The holes still worth a look, each with when it was noted: what a snapshot carries. */
  carry(): Carried[] {
    this.open();
    return [...this.since].map(([seq, since]) => ({ seq, since }));
  }

  /**
   * Takes the holes a snapshot carried, each looked at until its wait runs out from when it was noted, not from now
   * (and once more, `look`): an instance started from the snapshot does not wait 5 minutes more for writes that
   * rolled back long ago. From now where the snapshot does not say (written before it did), or says a time still to
   * come (its writer's clock was ahead).
   */
  adopt(carried: Carried[]): void {
    const now = this.now();
    for (const { seq, since } of carried) if (!this.since.has(seq)) this.since.set(seq, since === undefined ? now : Math.min(since, now));
  }

  /**
   * Whether the log was pruned past a hole since it was last looked at (`first` is its first position now): a write
   * that committed late into it is gone with it, and what follows the log must read the rows again. A hole already
   * below the log's start when noted (positions pruned before, or a write in flight that outlived the pruning) does not
   * count: it stays open, for a late write that still comes. Notes `first` for the next look.
   */
  prunedPast(first: number | null): boolean {
    if (first === null) return false;
    let lost = false;
    for (const seq of this.since.keys()) if (seq >= this.floor && seq < first) lost = true;
    this.floor = Math.max(this.floor, first);
    return lost;
  }

  /**
   * The log's first position when it was last looked at: a hole below it was below the log's start when noted. A
   * snapshot carries it beside its holes (`holesFloor`), and its reader starts from it (`prunedPast`).
   */
  logStart(): number {
    return this.floor;
  }

  /** Forgets every hole: the index was built afresh. */
  clear(): void {
    this.since.clear();
    this.floor = 0;
  }
}

/** How long a hole is looked at: longer than any transaction that writes chunks stays open (each statement is cut at 30 s). */
export const holeWaitMs = 5 * 60_000;
/** Holes noted at once at most: a wider jump is a rolled-back batch or a reset, not writes in flight. */
const maxHoles = 100_000;
/** Positions below a loaded index's own that are checked for writes in flight when it loads. */
export const loadWindow = 1_000;

/**
 * Holes a snapshot's header may carry: writes in flight when it was written are a handful; a header (which its CRC
 * does not cover) naming more is damaged, and only the nearest below its position are kept.
 */
export const maxCarried = 10_000;

/**
 * The log's first position a snapshot's header says its holes were noted against (0 when it says none, as snapshots
 * written before it was kept): a hole below it was below the log's start then, and a log pruned past it since lost
 * nothing of it.
 */
export function carriedFloor(floor: unknown, position: number): number {
  return Number.isSafeInteger(floor) && (floor as number) > 0 && (floor as number) <= position + 1 ? (floor as number) : 0;
}

/** A hole as a snapshot carries it: its position, and when it was noted (ms since the epoch), where it says. */
export type Carried = { seq: number; since: number | undefined };

/**
 * The holes a snapshot's header says it left open below `position`: whole, positive, below it, each once, nearest
 * first; each with when it was noted, from `since` beside them (positive whole numbers, in the same order), where the
 * header has it.
 */
export function carried(holes: unknown, since: unknown, position: number): Carried[] {
  if (!Array.isArray(holes)) return [];
  const times: unknown[] = Array.isArray(since) && since.length === holes.length ? since : [];
  const seen = new Set<number>();
  const out: Carried[] = [];
  holes.forEach((seq: unknown, i) => {
    if (!Number.isSafeInteger(seq) || (seq as number) <= 0 || (seq as number) >= position || seen.has(seq as number)) return;
    seen.add(seq as number);
    const at = times[i];
    out.push({ seq: seq as number, since: Number.isSafeInteger(at) && (at as number) > 0 ? (at as number) : undefined });
  });
  return out.sort((a, b) => b.seq - a.seq).slice(0, maxCarried);
}

/** A header's hole fields for the holes it carries: their positions, and when each was noted, side by side. */
export function header(holes: Carried[]): { holes: number[]; holesSince: number[] } {
  return { holes: holes.map((h) => h.seq), holesSince: holes.map((h) => h.since ?? 0) };
}
