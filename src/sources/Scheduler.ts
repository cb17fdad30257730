import type { SyncedKind } from '../config/Config.js';
import type { Store } from '../store/Store.js';
import type { SyncDependencies, SyncReport } from './Sync.js';
import * as Sync from './Sync.js';

export type Scheduler = { stop(): Promise<void> };

/** Whether a channel last synced (or failed) then is due again by now. */
const isDue = (kind: string, last: { syncedAt: number | null; failedAt: number | null }, options: { now: number; intervalMinutes: Record<SyncedKind, number> }) =>
  Math.max(last.syncedAt ?? 0, last.failedAt ?? 0) + options.intervalMinutes[kind as SyncedKind] * 60_000 <= options.now;

/**
 * The channels due for a sync: live (or held by a sync that may have died), with a source and a connector, and whose last sync or last failure is older
 * than their kind's interval. A failing source is retried at the same pace, not hammered.
 */
export async function due(store: Store, options: { now: number; intervalMinutes: Record<SyncedKind, number>; kinds: string[] }): Promise<string[]> {
  const rows = await store.channels.syncable();
  return rows
    .filter((r) => options.kinds.includes(r.kind))
    .filter((r) => isDue(r.kind, r, options))
    .map((r) => r.id);
}

/**
 * Runs due syncs one channel at a time, checking every `tickMs`. Every instance on a database may run one: a channel is
 * claimed under a lock and only while still due, so each sync runs once, on whichever instance claims it first.
 * Stopping waits for the channel in progress, so a shutdown never leaves a half-written item (each item is one
 * transaction anyway).
 */
export function start(
  deps: SyncDependencies,
  options: {
    intervalMinutes: Record<SyncedKind, number>;
    tickMs?: number;
    onReport?: (report: SyncReport) => void;
    /** Keep the process alive for the schedule (`sync --watch`); inside `serve`, the server does that. */
    keepAlive?: boolean;
    /** Only these channels (`sync --watch --channel`/`--profile`); all that are due otherwise. */
    only?: ReadonlySet<string>;
  },
): Scheduler {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    const ids = (await due(deps.store, { now: (deps.now ?? Date.now)(), intervalMinutes: options.intervalMinutes, kinds: Object.keys(deps.connectors) })).filter(
      (id) => !options.only || options.only.has(id),
    );
    for (const id of ids) {
      if (stopped) return;
      try {
        const now = (deps.now ?? Date.now)();
        const stillDue = (c: { kind: string; lastSyncedAt: number | null; lastErrorAt: number | null }) =>
          isDue(c.kind, { syncedAt: c.lastSyncedAt, failedAt: c.lastErrorAt }, { now, intervalMinutes: options.intervalMinutes });
        options.onReport?.(await Sync.syncChannel(deps, id, { due: stillDue }));
      } catch (error) {
        deps.logger.error('scheduled sync crashed', { channelId: id, error: error instanceof Error ? error.message : String(error) });
      }
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().finally(schedule);
    }, options.tickMs ?? 30_000);
    if (!options.keepAlive) timer.unref();
  };
  running = tick().finally(schedule);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
