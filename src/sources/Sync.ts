import * as Chunker from '../ingest/Chunker.js';
import type { Logger } from '../log/Logger.js';
import type { Metrics } from '../health/Metrics.js';
import type { Embedder } from '../retrieval/embedders/Embedder.js';
import type { StoredChannel } from '../store/Channels.js';
import { leaseExpired, processHost } from '../health/Leases.js';
import type { Store } from '../store/Store.js';
import * as Ids from '../store/Ids.js';
import * as Items from '../store/Items.js';
import * as SearchTerms from '../retrieval/index/SearchTerms.js';
import type { Connector, Coverage, Entry, Listing } from './Connector.js';
import type { Fetcher } from './Fetcher.js';

export type { Listing };

/** How long a sync elsewhere may be silent before another takes its channel: four missed heartbeats, 5 s apart. */
export const defaultStaleMs = 20_000;

export { leaseExpired, processHost } from '../health/Leases.js';

export type SyncDependencies = {
  store: Store;
  fetcher: Fetcher;
  connectors: Partial<Record<Connector['kind'], Connector>>;
  chunkTargetTokens: number;
  embedder?: Embedder | undefined;
  logger: Logger;
  /**
   * How long a sync elsewhere may be silent before another takes its channel over (see `leaseExpired`); heartbeats
   * come every quarter of it.
   */
  staleMs?: number;
  /** Items fetched, parsed and embedded ahead of the one being written (writes stay one at a time, in order). */
  prefetch?: number;
  /** When an item's real text is tried again after it failed for a passing reason (see `Retry`). */
  retry?: Retry;
  now?: () => number;
  /** Counts each sync, its items and errors, by channel kind. */
  metrics?: Metrics | undefined;
};

/**
 * How an item whose real text failed for a passing reason is tried again: after `firstMs`, then twice as long each
 * time up to `maxMs`, until the text arrives, the link is answered as gone, or `giveUpMs` after the first failure,
 * when the stand-in text is kept for good and the item says why.
 */
export type Retry = { firstMs: number; maxMs: number; giveUpMs: number };

export const defaultRetry: Retry = { firstMs: 15 * 60_000, maxMs: 24 * 3_600_000, giveUpMs: 30 * 24 * 3_600_000 };

/** An item's record of its real text failing: why, how often, since when, and when it is tried next. */
export type Pending = { reason: string; attempts: number; since: number; next: number };


export type SyncReport = {
  channelId: string;
  /** synced: the source was read; unchanged: it answered 304; skipped: nothing to do here; failed: nothing was read. */
  outcome: 'synced' | 'unchanged' | 'skipped' | 'failed';
  reason?: string;
  created: number;
  updated: number;
  unchanged: number;
  removed: number;
  failed: number;
  /** New items indexed from stand-in text (notes, a description) while their real text failed for a passing reason. */
  provisional: number;
  /** Entries found with no text to index (as an empty upload is refused): not stored, and not read again until they change. */
  empty: number;
  chunks: number;
  /** Items whose real text was given up on this sync (failing since `Retry.giveUpMs`): their stand-in text stays for good. */
  gaveUp: number;
  /** Why items failed, a few of them. */
  errors: string[];
};

export type Progress = (event: { channelId: string; done: number; total: number; externalId?: string }) => void;

const emptyReport = (channelId: string, outcome: SyncReport['outcome'], reason?: string): SyncReport => ({
  channelId, outcome, reason, created: 0, updated: 0, unchanged: 0, removed: 0, failed: 0, provisional: 0, empty: 0, gaveUp: 0, chunks: 0, errors: [],
});

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Syncs one channel with its source. Each item is written in its own transaction (chunks and vectors together), so
 * a sync killed half-way leaves every item either old or new, and the next sync resumes: unchanged items are skipped
 * by version. Items gone from the source are removed. A failure is recorded on the channel and loses nothing.
 */
export async function syncChannel(deps: SyncDependencies, channelId: string, options: SyncOptions = {}): Promise<SyncReport> {
  const found = await deps.store.channels.get(channelId);
  let report: SyncReport | undefined;
  try {
    report = await syncFound(deps, found, options);
    return report;
  } finally {
    // A sync that threw (the database went away) counts as failed.
    deps.metrics?.sync({
      kind: found.kind,
      result: report?.outcome ?? 'failed',
      items: report ? report.created + report.updated + report.removed : 0,
      errors: report ? report.failed + (report.outcome === 'failed' ? 1 : 0) : 1,
    });
  }
}

type SyncOptions = {
  onProgress?: Progress;
  /** An export file's listing, instead of the channel's source (an import). */
  listing?: Listing;
  /** Stops the sync after the item in progress (Ctrl-C): the channel is released, with the reason recorded. */
  signal?: AbortSignal;
  /** Syncs only if this still holds of the channel when it is claimed (a scheduler: still due). */
  due?: (channel: StoredChannel) => boolean;
};

async function syncFound(deps: SyncDependencies, found: StoredChannel, options: SyncOptions): Promise<SyncReport> {
  const channelId = found.id;
  const now = deps.now ?? Date.now;
  if (found.status === 'paused') return emptyReport(channelId, 'skipped', 'paused');
  const connector = deps.connectors[found.kind];
  const isImport = options.listing !== undefined;
  if (!isImport) {
    if (!connector) return emptyReport(channelId, 'skipped', `${found.kind} channels are filled by upload`);
    if (!found.sourceUrl) return emptyReport(channelId, 'skipped', 'no source configured (set one with channels update --source-url)');
  }
  const staleMs = deps.staleMs ?? defaultStaleMs;
  const started = now();
  const hold = await deps.store.channels.claimSync(channelId, {
    now: started,
    expired: (lease) => leaseExpired(lease, { now: started, staleMs }),
    process: { host: processHost, pid: process.pid },
    due: options.due,
  });
  if (!hold) {
    const held = !options.due || (await deps.store.channels.get(channelId)).status === 'syncing';
    return emptyReport(channelId, 'skipped', held ? 'another sync is running' : 'synced elsewhere since it was due');
  }
  const { channel, holder } = hold;

  // The heartbeat runs on a timer for the whole sync, listing included, so a slow source never looks dead. A busy
  // database (another process writing) only delays a beat; the hold is lost only when another sync took it.
  let lost = false;
  const beat = async (): Promise<void> => {
    try {
      if (!(await deps.store.channels.heartbeat(channelId, holder, now()))) lost = true;
    } catch (error) {
      deps.logger.warn('sync heartbeat delayed', { channelId, error: message(error) });
    }
  };
  const timer = setInterval(() => void beat(), Math.max(1_000, staleMs / 4));
  timer.unref();
  try {
    return await run({ deps, channel, holder, isImport, connector, listing: options.listing, onProgress: options.onProgress, signal: options.signal, beat, isLost: () => lost });
  } catch (error) {
    // Whatever went wrong (a database error, a bug), the channel is released with the reason, not left syncing.
    const reason = `sync stopped: ${message(error)}`;
    deps.logger.error('sync crashed', { channelId, error: message(error) });
    try {
      await deps.store.channels.finishSync(channelId, holder, { now: now(), error: reason, import: isImport });
    } catch {
      // The stale hold is taken over after `staleMs`.
    }
    return emptyReport(channelId, 'failed', reason);
  } finally {
    clearInterval(timer);
  }
}

async function run(ctx: {
  deps: SyncDependencies;
  channel: StoredChannel;
  holder: string;
  isImport: boolean;
  connector: Connector | undefined;
  listing: Listing | undefined;
  onProgress: Progress | undefined;
  signal: AbortSignal | undefined;
  beat(): Promise<void>;
  isLost(): boolean;
}): Promise<SyncReport> {
  const { deps, channel, holder } = ctx;
  const channelId = channel.id;
  const now = deps.now ?? Date.now;
  const log = deps.logger;
  const finish = async (outcome: { source?: Record<string, unknown>; listed?: string[]; error?: string; warning?: string; empty?: Record<string, string> }) =>
    await deps.store.channels.finishSync(channelId, holder, { now: now(), import: ctx.isImport, ...outcome });
  log.info(ctx.isImport ? 'import started' : 'sync started', { channelId, kind: channel.kind });
  const sourceState = (channel.syncState.source as Record<string, unknown>) ?? {};
  let listing: Listing;
  try {
    // What the stored items record of themselves, read once: connectors ask while they list.
    const kept = ctx.listing ? new Map<string, string>() : await deps.store.items.metadataByChannel(channelId);
    const stored = (externalId: string) => {
      const raw = kept.get(externalId);
      return raw === undefined ? undefined : { metadata: JSON.parse(raw) as Record<string, unknown> };
    };
    // An import leaves the source's own state (validators) as it was.
    listing = ctx.listing
      ? { ...ctx.listing, state: sourceState }
      : await ctx.connector!.list({ channel, source: channel.sourceUrl!, fetcher: deps.fetcher, state: sourceState, logger: log, stored });
  } catch (error) {
    const reason = message(error);
    await finish({ error: reason });
    log.warn('sync failed', { channelId, error: reason });
    return emptyReport(channelId, 'failed', reason);
  }
  if (listing.unchanged) {
    await finish({ source: listing.state });
    log.info('sync finished: source unchanged', { channelId });
    return emptyReport(channelId, 'unchanged');
  }

  const report = emptyReport(channelId, 'synced');
  const { entries, dropped } = dedupe(listing.entries);
  // Entries known to have no text, by the version they had then: skipped until they change.
  // Keyed by a source's own ids: a Map, and own keys only, so an entry whose id is `__proto__` or `constructor` is kept.
  const emptyBefore = new Map(Object.entries((channel.syncState.empty as Record<string, string> | undefined) ?? {}));
  const emptyNow = new Map<string, string>();
  const emptyNames: string[] = [];
  const gaveUp: string[] = [];
  const target = deps.chunkTargetTokens;
  let done = 0;
  // Fetching, parsing and embedding run a few items ahead (network-bound); writing stays in order, one transaction each.
  const ahead = Math.max(1, deps.prefetch ?? 4);
  const pending: (Promise<Prepared> | undefined)[] = [];
  const start = (i: number) => {
    const p = prepare(deps, channelId, entries[i]!, target, emptyBefore, now());
    p.catch(() => undefined); // observed below, in order
    pending[i] = p;
  };
  for (let i = 0; i < entries.length; i++) {
    if (ctx.isLost() || ctx.signal?.aborted) break;
    for (let j = pending.length; j < Math.min(entries.length, i + ahead); j++) start(j);
    const entry = entries[i]!;
    ctx.onProgress?.({ channelId, done, total: entries.length, externalId: entry.externalId });
    try {
      const prepared = await pending[i]!;
      if ('empty' in prepared) {
        emptyNow.set(entry.externalId, prepared.empty);
        if (!prepared.known) {
          report.empty += 1;
          emptyNames.push(entry.externalId);
          // Its text is gone at the source: what was indexed for it goes too.
          const id = Items.itemId(channelId, entry.externalId);
          if ((await deps.store.items.contentHash(channelId, entry.externalId)) !== undefined) {
            await deps.store.items.remove(id);
            report.removed += 1;
          }
        }
        pending[i] = undefined;
        await ctx.beat();
        done += 1;
        continue;
      }
      const outcome = 'draft' in prepared ? await deps.store.items.put(prepared.draft) : { outcome: 'unchanged' as const, chunkCount: 0 };
      report[outcome.outcome] += 1;
      report.chunks += outcome.chunkCount;
      if ('waiting' in prepared || ('draft' in prepared && prepared.provisional)) {
        const pendingText = 'waiting' in prepared ? prepared.waiting : prepared.provisional!;
        report.provisional += 1;
        if (report.errors.length < 5) report.errors.push(`${entry.externalId}: ${pendingText.reason} (tried ${pendingText.attempts} times; next after ${new Date(pendingText.next).toISOString()})`);
      }
      if ('draft' in prepared && prepared.gaveUp) {
        report.gaveUp += 1;
        gaveUp.push(`${entry.externalId}: ${prepared.gaveUp}`);
      }
    } catch (error) {
      report.failed += 1;
      if (report.errors.length < 5) report.errors.push(`${entry.externalId}: ${message(error)}`);
      log.warn('item failed', { channelId, externalId: entry.externalId, error: message(error) });
    }
    pending[i] = undefined;
    await ctx.beat();
    done += 1;
  }
  if (ctx.isLost()) {
    // Paused by an operator mid-sync: the items written so far stay, and the channel stays paused.
    if ((await deps.store.channels.get(channelId)).status === 'paused') {
      await finish({});
      log.info('sync stopped: the channel was paused', { channelId });
      return { ...report, outcome: 'skipped', reason: 'paused during the sync' };
    }
    // Another process took the channel over (this one looked dead): it finishes the sync; this one stops writing.
    log.warn('sync stopped: another sync took the channel over', { channelId });
    return { ...report, outcome: 'failed', reason: 'another sync took the channel over' };
  }
  if (ctx.signal?.aborted) {
    // Stopped by the operator: what was written stays; nothing is removed, and the next sync resumes.
    const reason = `stopped after ${done} of ${entries.length} items`;
    await finish({ error: reason });
    log.info('sync stopped by the operator', { channelId, done, total: entries.length });
    return { ...report, outcome: 'failed', reason };
  }
  ctx.onProgress?.({ channelId, done, total: entries.length });
  const origin = ctx.isImport ? 'import' : 'source';
  const previous = await deps.store.channels.lastListed(channelId, origin);
  report.removed += await removeGone(deps.store, channelId, { entries, coverage: listing.coverage, previous }, log);

  // With failed items the listing's validators are not kept, so the next sync lists again and retries them. A
  // partial or empty listing is not remembered: it would hide deletions from the next comparison.
  const partial = listing.coverage.kind === 'partial' ? `partial listing, nothing removed: ${listing.coverage.reason}` : undefined;
  const empties = emptyNames.length > 0 ? `${emptyNames.length} entries have no text to index and are not indexed until they change; first: ${emptyNames[0]}` : undefined;
  const twice = dropped.length > 0 ? `${dropped.length} entries listed more than once with different content; the first listing of each was synced; first: ${dropped[0]}` : undefined;
  const givenUp = gaveUp.length > 0 ? `${gaveUp.length} items keep their stand-in text for good; first: ${gaveUp[0]}` : undefined;
  const warning = [partial, empties, twice, givenUp, ...(listing.warnings ?? [])].filter(Boolean).join('; ') || undefined;
  for (const note of listing.warnings ?? []) log.warn('source read with a guess', { channelId, note });
  const failures = report.failed > 0 ? `${report.failed} of ${entries.length} items failed; first: ${report.errors[0]}` : undefined;
  const listed = listing.coverage.kind === 'partial' || entries.length === 0 ? undefined : entries.map((e) => e.externalId);
  // Stand-in text is kept until the real text can be read: like failures, it keeps the listing's validators from
  // being saved, so the next sync lists again and retries those items.
  const standIns = report.provisional > 0 ? `${report.provisional} new items indexed from stand-in text for now, their real text retried with backoff; first: ${report.errors[0]}` : undefined;
  const empty = Object.fromEntries(emptyNow);
  if (failures) await finish({ error: [failures, warning].filter(Boolean).join('; '), listed, empty });
  else if (standIns) await finish({ listed, warning: [standIns, warning].filter(Boolean).join('; '), empty });
  else await finish({ source: listing.state, listed, empty, ...(warning && { warning }) });
  log.info('sync finished', { channelId, created: report.created, updated: report.updated, unchanged: report.unchanged, removed: report.removed, failed: report.failed });
  return report;
}

/**
 * The same item listed twice (feeds do this) is synced once: the first listing wins. Listings of one id that differ
 * are named in `dropped`, so the operator hears of them.
 */
function dedupe(entries: Entry[]): { entries: Entry[]; dropped: string[] } {
  const seen = new Map<string, string>();
  const dropped = new Set<string>();
  const kept = entries.filter((e) => {
    const version = seen.get(e.externalId);
    if (version === undefined) return seen.set(e.externalId, e.version);
    if (version !== e.version) dropped.add(e.externalId);
    return false;
  });
  return { entries: kept, dropped: [...dropped] };
}

/**
 * An item ready to write (provisional: from stand-in text, with why), nothing to do for it, or an entry with no text
 * (`empty`: the version it has; `known`: it had none at that version already).
 */
type Prepared =
  | { unchanged: true }
  | { draft: Items.IndexedDraft; provisional?: Pending | undefined; gaveUp?: string | undefined }
  | { empty: string; known: boolean }
  | { waiting: Pending };

/** Loads, chunks and embeds an item whose version changed; everything but the write, so it can run ahead. */
async function prepare(deps: SyncDependencies, channelId: string, entry: Entry, target: number, emptyBefore: Map<string, string>, now: number): Promise<Prepared> {
  const contentHash = Ids.fingerprint(JSON.stringify({ version: entry.version, target }));
  const existing = await deps.store.items.contentHash(channelId, entry.externalId);
  if (existing === contentHash || (entry.keep && existing !== undefined)) return { unchanged: true };
  if (emptyBefore.get(entry.externalId) === contentHash && existing === undefined) return { empty: contentHash, known: true };
  // An item standing on stand-in text records when its real text is tried next; until then it is left as it is.
  const standingIn = Ids.fingerprint(JSON.stringify({ version: entry.version, target, provisional: true }));
  const before = existing !== undefined ? pendingOf(await deps.store.items.metadata(channelId, entry.externalId)) : undefined;
  // An edited entry is read at once; its failures keep counting from the first.
  if (before && before.next > now && existing === standingIn) return { waiting: before };
  const item = await entry.load();
  const retry = deps.retry ?? defaultRetry;
  let pending: Pending | undefined;
  let gaveUp: string | undefined;
  if (item.provisional) {
    const attempts = (before?.attempts ?? 0) + 1;
    const since = before?.since ?? now;
    if (now - since >= retry.giveUpMs) gaveUp = `${item.provisional}; gave up after ${attempts} tries since ${new Date(since).toISOString()}`;
    else pending = { reason: item.provisional, attempts, since, next: now + Math.min(retry.maxMs, retry.firstMs * 2 ** (attempts - 1)) };
  }
  // Stand-in text is stored under a version that never matches, so a later sync loads the item again; given up on,
  // it is stored under the entry's version like any text, and loaded again only when the entry changes.
  const stored = pending ? standingIn : contentHash;
  // An entry with no text (a video with no captions and no description) is not stored, as an empty upload is refused;
  // the channel remembers its version, so it is not fetched again until it changes, and it never fails the sync.
  const chunks = Chunker.chunk(item.document, Chunker.sizes(target));
  if (chunks.length === 0 && !pending) return { empty: contentHash, known: false };
  const vectors = chunks.length > 0 && deps.embedder && (await deps.store.vectors.info()) ? await deps.embedder.embed(chunks.map((c) => `${item.title}\n${c.text}`), 'document') : undefined;
  return {
    // Analyzed here too: the write is left with nothing but writing.
    draft: SearchTerms.indexed({
      channelId,
      externalId: entry.externalId,
      title: item.title,
      sourceUrl: item.sourceUrl,
      publishedAt: item.publishedAt,
      author: item.author,
      metadata: { ...item.metadata, ...(pending && { pendingText: pending }), ...(gaveUp && { textUnavailable: gaveUp }) },
      contentHash: stored,
      chunks,
      vectors,
    }),
    provisional: pending,
    gaveUp,
  };
}

/** The retry record of a stored item standing on stand-in text, if it has one. */
function pendingOf(raw: string | undefined): Pending | undefined {
  const pending = raw ? (JSON.parse(raw) as { pendingText?: Pending }).pendingText : undefined;
  return pending && typeof pending.next === 'number' ? pending : undefined;
}

/**
 * Removes the channel's items the source no longer has (see Coverage). A listing with no entries at all removes
 * nothing: an empty feed is far more often a broken one than a creator deleting everything.
 */
async function removeGone(store: Store, channelId: string, listing: { entries: Entry[]; coverage: Coverage; previous: string[] | undefined }, log: Logger): Promise<number> {
  const listed = new Set(listing.entries.map((e) => e.externalId));
  const stored = await store.items.byChannel(channelId);
  if (listing.entries.length === 0) {
    if (stored.length > 0) log.warn('source listed no items; keeping what is indexed', { channelId, items: stored.length });
    return 0;
  }
  let gone: Items.StoredItem[];
  switch (listing.coverage.kind) {
    case 'partial':
      return 0;
    case 'complete':
      gone = stored.filter((item) => !listed.has(item.externalId));
      break;
    case 'window': {
      const dates = new Map(stored.map((i) => [i.externalId, i.publishedAt]));
      const deleted = new Set(deletedFromWindow(listing.previous ?? [], listed, dates));
      gone = stored.filter((item) => deleted.has(item.externalId));
      break;
    }
  }
  for (const item of gone) await store.items.remove(item.id);
  return gone.length;
}

/**
 * The ids of a window's previous listing that were deleted rather than scrolled off. A run of missing ids counts as
 * deleted when it is short (at most 2, or a tenth of the listing) and listed entries still stand on both sides of
 * it, or on its older side when it is at the newest end. Runs at the oldest end scrolled off; a long gap is taken for
 * a change in what the feed shows (a pinned entry, a re-dated one), not for deletions.
 */
export function deletedFromWindow(previous: string[], listed: Set<string>, dates: Map<string, number | null>): string[] {
  if (previous.length === 0) return [];
  const maxRun = Math.max(2, Math.floor(previous.length / 10));
  // Which end is the newest: feeds list newest first, a few oldest first. Most neighbouring pairs decide, so one
  // pinned old entry at the top does not turn the order around.
  let descending = 0;
  for (let i = 1; i < previous.length; i++) {
    const [a, b] = [dates.get(previous[i - 1]!) ?? null, dates.get(previous[i]!) ?? null];
    if (a !== null && b !== null && a !== b) descending += a > b ? 1 : -1;
  }
  const newestFirst = descending >= 0;
  const deleted: string[] = [];
  for (let i = 0; i < previous.length; ) {
    if (listed.has(previous[i]!)) {
      i += 1;
      continue;
    }
    let end = i;
    while (end < previous.length && !listed.has(previous[end]!)) end += 1;
    const before = i > 0;
    const after = end < previous.length;
    const atNewestEnd = newestFirst ? !before && after : before && !after;
    if (end - i <= maxRun && ((before && after) || atNewestEnd)) deleted.push(...previous.slice(i, end));
    i = end;
  }
  return deleted;
}
