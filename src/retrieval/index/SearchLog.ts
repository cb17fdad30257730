import type { LogEntry } from '../../store/SearchDocs.js';
import type { Store } from '../../store/Store.js';
import * as LogHoles from '../LogHoles.js';
import * as Audiences from './Audiences.js';

/**
 * Following `search_log`, which triggers append to whenever a chunk's row comes or goes or a channel's audience
 * changes: what was logged since the index last looked, and one catch-up at a time however many searches ask.
 */

/** Rows read from the store at a time. */
export const pageSize = 8192;

/** What other writes logged since the last look: the entries, and every channel's audience when one moved. */
export type Changes = { entries: LogEntry[]; audiences?: Map<string, Audiences.Audience> };

/**
 * Reads what was logged after `applied`, and what has since filled the `holes` below it, all of it before anything is
 * applied: one cheap query when nothing changed (undefined), and 'reload' when the log cannot say (emptied, pruned
 * past `applied` or past a hole, or reset). A hole the log was pruned past may have held a write that committed late
 * and is gone; or a write that rolled back: a reload is the price of not knowing which.
 */
export async function changes(store: Store, applied: number, holes: LogHoles.Holes = new LogHoles.Holes()): Promise<Changes | 'reload' | undefined> {
  const { first, last } = await store.search.logBounds();
  const look = holes.look();
  const late = look.seqs.length > 0 ? await store.search.changesAt(look.seqs) : [];
  look.done(late.map((e) => e.seq));
  if (late.some((e) => e.kind === 'reset')) return 'reload';
  if (holes.prunedPast(first)) return 'reload';
  if ((last ?? 0) === applied && late.length === 0) return undefined;
  if (last === null || last < applied || first === null || first > applied + 1) return 'reload';
  const entries: LogEntry[] = [...late];
  for (let after = applied; ; ) {
    const page = await store.search.changes(after, pageSize);
    if (page.length === 0) break;
    for (const entry of page) {
      if (entry.kind === 'reset') return 'reload';
      entries.push(entry);
    }
    after = page.at(-1)!.seq;
  }
  return entries.some((e) => e.kind === 'audiences') ? { entries, audiences: await Audiences.read(store) } : { entries };
}

/**
 * One catch-up at a time, stamped with when it began reading the log: it answers every search asked before that
 * moment (what was committed before the question is in what it read), so a question reads the log once for its
 * statistics and all its searches; a search asked later waits for it, then reads the log again.
 */
export class CatchUp {
  private readSince = -Infinity;
  private catching: { from: number; done: Promise<void> } | undefined;

  /** `work` reads the log and applies it. */
  constructor(private readonly work: () => Promise<void>) {}

  /** Whether a catch-up that began at or after `asOf` has finished, and none is running: `asOf` would wait for nothing. */
  covers(asOf: number): boolean {
    return this.catching === undefined && this.readSince >= asOf;
  }

  /** Returns once a catch-up that began at or after `asOf` (`performance.now()`) has finished. */
  async asOf(asOf: number): Promise<void> {
    while (this.catching) {
      const { from, done } = this.catching;
      await done;
      if (from >= asOf) return;
    }
    if (this.readSince >= asOf) return;
    const from = performance.now();
    const done = this.work().then(() => void (this.readSince = from));
    this.catching = { from, done };
    try {
      await done;
    } finally {
      if (this.catching?.done === done) this.catching = undefined;
    }
  }
}
