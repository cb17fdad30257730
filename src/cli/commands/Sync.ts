import { lazy } from '../../errors/Lazy.js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ServiceError } from '../../errors/ServiceError.js';
import type * as Sync from '../../sources/Sync.js';
import type { SyncReport } from '../../sources/Sync.js';
import { type Command, UsageError, jsonOption, required, text, untilSignal } from '../Command.js';
import type { Output, Progress } from '../Output.js';

const loadCharset = lazy('The charset reader', () => import('../../ingest/Charset.js'));
const loadTranscript = lazy('The transcript reader', () => import('../../ingest/Transcript.js'));
const loadJobs = lazy('The job leases', () => import('../../health/Jobs.js'));
const loadTermModel = lazy('The term model', () => import('../../retrieval/terms/TermModel.js'));
const loadIds = lazy('Ids', () => import('../../store/Ids.js'));
const loadScheduler = lazy('The sync scheduler', () => import('../../sources/Scheduler.js'));
const loadSubtext = lazy('The subtitle reader', () => import('../../sources/Subtext.js'));
const loadYoutube = lazy('The YouTube connector', () => import('../../sources/Youtube.js'));
const loadSync = lazy('The sync', () => import('../../sources/Sync.js'));
const loadServices = lazy('The service layer', () => import('../../Services.js'));


/** One line per channel: what the sync did, or why it did nothing. */
export function describe(report: SyncReport): string {
  switch (report.outcome) {
    case 'synced': {
      const failed = report.failed > 0 ? `, ${report.failed} failed (${report.errors[0]})` : report.provisional > 0 ? `, ${report.provisional} from stand-in text for now (${report.errors[0]})` : '';
      const empty = report.empty > 0 ? `, ${report.empty} with no text (not indexed)` : '';
      return `${report.channelId}: synced, ${report.created} new, ${report.updated} updated, ${report.unchanged} unchanged, ${report.removed} removed${empty}${failed}`;
    }
    case 'unchanged':
      return `${report.channelId}: unchanged since the last sync`;
    case 'skipped':
      return `${report.channelId}: skipped, ${report.reason}`;
    case 'failed':
      return `${report.channelId}: failed, ${report.reason}`;
  }
}

const changed = (r: SyncReport) => r.created + r.updated + r.removed > 0;

/**
 * A run fails (exit 1) when a source failed, an item failed, or a channel could not be synced because another sync
 * holds it; a paused channel or one without a source is not a failure of `sync`.
 */
const failedRun = (r: SyncReport) => r.outcome === 'failed' || r.failed > 0 || r.reason === 'another sync is running';

/** Stops a one-shot sync cleanly on Ctrl-C: the item in progress is finished and the channel released. */
function stopOnSignal(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, stop);
  return { signal: controller.signal, dispose: () => ['SIGINT', 'SIGTERM'].forEach((s) => process.removeListener(s, stop)) };
}

export const sync: Command = {
  name: 'sync',
  summary: 'Sync channels with their sources (feeds, channels, workspaces): new and edited items indexed, removed ones dropped.',
  usage: 'sync [--channel ID | --profile SLUG] [--watch] [--json]   (exit 1 when a source or an item failed)',
  options: { channel: { type: 'string' }, profile: { type: 'string' }, watch: { type: 'boolean' }, ...jsonOption },
  async run({ services: open, config, out }, { values }) {
    const channelId = text(values, 'channel');
    const slug = text(values, 'profile');
    if (channelId !== undefined && slug !== undefined) throw new UsageError('give --channel or --profile, not both');
    const [services, { syncDependencies }, Scheduler] = await Promise.all([open(), loadServices(), loadScheduler()]);
    const { store } = services;
    const ids =
      channelId !== undefined
        ? [(await store.channels.get(channelId)).id]
        : slug !== undefined
          ? (await store.channels.byProfile((await store.profiles.get(slug)).id)).map((c) => c.id)
          : [...(await store.channels.byProfiles()).values()].flat().filter((c) => c.sourceUrl && services.connectors[c.kind]).map((c) => c.id);
    const deps = syncDependencies(services);
    const reports: SyncReport[] = [];
    const interrupt = stopOnSignal();
    try {
      for (const id of ids) {
        if (interrupt.signal.aborted) break;
        reports.push(await syncWithProgress(deps, id, out, { signal: interrupt.signal, quiet: Boolean(values.json) }));
      }
    } finally {
      interrupt.dispose();
    }
    if (values.json) out.json(reports);
    else if (ids.length === 0) out.line('no channel has a source to sync (set one with: channels update ID --source-url URL)');
    await refreshTermModel(services.store, reports, out);
    if (!values.watch || interrupt.signal.aborted) return reports.some(failedRun) || interrupt.signal.aborted ? 1 : 0;

    out.status(`watching: syncing channels as they fall due (${Object.entries(config.sync.intervalMinutes).map(([k, m]) => `${k} every ${m} min`).join(', ')}); Ctrl-C stops`);
    const scheduler = Scheduler.start(deps, {
      intervalMinutes: config.sync.intervalMinutes,
      keepAlive: true,
      only: channelId !== undefined || slug !== undefined ? new Set(ids) : undefined,
      onReport: (report) => {
        if (report.outcome !== 'skipped') out.line(describe(report));
        void refreshTermModel(services.store, [report], out);
      },
    });
    await untilSignal();
    await scheduler.stop();
    return 0;
  },
};

export const importExport: Command = {
  name: 'import',
  summary: 'Import into a channel what its source cannot give: a Subtext export (JSON or CSV), or YouTube captions saved by yt-dlp (.vtt).',
  usage: 'import --channel ID FILE... [--json]   (subtext: one export file; youtube: "Title [VIDEO_ID].en.vtt" files, or --video ID with one file)',
  options: { channel: { type: 'string' }, video: { type: 'string' }, ...jsonOption },
  positionals: { min: 1, max: 10_000 },
  async run({ services: open, out }, { values, positionals }) {
    const [services, { syncDependencies }] = await Promise.all([open(), loadServices()]);
    const channel = await services.store.channels.get(required(values, 'channel'));
    let listing: Sync.Listing;
    if (channel.kind === 'subtext') {
      if (positionals.length > 1) throw new UsageError('import one Subtext export at a time');
      listing = await subtextListing(positionals[0]!);
    } else if (channel.kind === 'youtube') {
      listing = await captionListing(services.store, channel.id, positionals, text(values, 'video'));
    } else {
      throw new UsageError(`import reads Subtext exports and YouTube caption files; ${channel.id} is ${channel.kind} (use upload for files)`);
    }
    const interrupt = stopOnSignal();
    let report: SyncReport;
    try {
      report = await syncWithProgress(syncDependencies(services), channel.id, out, { listing, signal: interrupt.signal, quiet: Boolean(values.json) });
    } finally {
      interrupt.dispose();
    }
    if (values.json) out.json(report);
    await refreshTermModel(services.store, [report], out);
    // Skipped (paused, or a sync holds the channel) imported nothing: that is a failure to the operator.
    return report.outcome === 'synced' && report.failed === 0 ? 0 : 1;
  },
};

/** A file's text, or a clear error naming it. */
async function readText(file: string): Promise<string> {
  const Charset = await loadCharset();
  try {
    return Charset.decode(await fs.readFile(file));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new ServiceError('invalid_request', `cannot read "${file}": ${reason}`);
  }
}

async function subtextListing(file: string): Promise<Sync.Listing> {
  const [content, Subtext] = await Promise.all([readText(file), loadSubtext()]);
  try {
    const messages = Subtext.parseExport(content, Subtext.formatOf(file, undefined, content));
    if (messages.length === 0) throw new Subtext.ExportError('no messages in it');
    return Subtext.listing(messages, {});
  } catch (error) {
    if (error instanceof Subtext.ExportError) throw new ServiceError('invalid_request', `cannot import "${path.basename(file)}": ${error.message}`);
    throw error;
  }
}

/**
 * yt-dlp caption files as items of a YouTube channel, one per video; a video the feed already brought keeps its title,
 * date and URL. Imported captions are kept by later syncs. The listing removes nothing.
 */
async function captionListing(store: Sync.SyncDependencies['store'], channelId: string, files: string[], video: string | undefined): Promise<Sync.Listing> {
  if (video !== undefined && files.length > 1) throw new UsageError('--video names the video of one file');
  const [Youtube, Transcript, Ids] = await Promise.all([loadYoutube(), loadTranscript(), loadIds()]);
  const known = new Map((await store.items.byChannel(channelId)).map((i) => [i.externalId, i]));
  const entries = await Promise.all(
    files.map(async (file) => {
      const name = path.basename(file);
      const videoId = video ?? Youtube.videoIdOfFile(name);
      if (!videoId) throw new UsageError(`no video id in "${name}": yt-dlp names files "Title [VIDEO_ID].en.vtt"; or give --video ID`);
      if (!/\.vtt$/i.test(name)) throw new UsageError(`"${name}" is not a WebVTT (.vtt) caption file`);
      const content = await readText(file);
      const document = await Transcript.fromCaptions(content, 'vtt').catch((error: unknown) => {
        if (error instanceof Transcript.TranscriptError) throw new ServiceError('invalid_request', `cannot import "${name}": ${error.message}`);
        throw error;
      });
      if (document.blocks.length === 0) throw new ServiceError('invalid_request', `cannot import "${name}": no captions in it`);
      const existing = known.get(videoId);
      return {
        externalId: videoId,
        version: Ids.fingerprint(content),
        publishedAt: existing?.publishedAt ?? undefined,
        load: async () => ({
          title: existing?.title ?? Youtube.titleOfFile(name),
          sourceUrl: existing?.sourceUrl ?? Youtube.watchUrl(videoId),
          publishedAt: existing?.publishedAt ?? undefined,
          author: existing?.author ?? undefined,
          document,
          metadata: { text: Youtube.importedCaptions, videoId, file: name },
        }),
      };
    }),
  );
  return { entries, coverage: { kind: 'partial', reason: 'caption files name only their own videos' }, state: {} };
}

async function syncWithProgress(
  deps: Sync.SyncDependencies,
  id: string,
  out: Output,
  options: { listing?: Sync.Listing; signal?: AbortSignal; quiet?: boolean } = {},
): Promise<SyncReport> {
  const Sync = await loadSync();
  let bar: Progress | undefined;
  const report = await Sync.syncChannel(deps, id, {
    listing: options.listing,
    signal: options.signal,
    onProgress: ({ done, total, externalId }) => {
      bar ??= total > 0 ? out.progress(total, `sync ${id}`) : undefined;
      bar?.update(done, externalId ?? '');
    },
  });
  bar?.stop();
  if (!options.quiet) out.line(describe(report));
  return report;
}

/** Public chunks up to which a sync rebuilds a due term model itself (well under a second); above, it folds in only. */
const syncRebuildLimit = 2_000;

/**
 * New text brings new words: they are folded into the term model, in time proportional to what the sync added, not to
 * the store. A rebuild that is due (no model yet, a fifth more public content, channels made private or paused) runs
 * here only on a small store; on a larger one it is left to `profile-edge reindex` (or a small server's refresh), and
 * said. Another process refreshing the model at the same moment is waited for, and the wait is said.
 */
async function refreshTermModel(store: Sync.SyncDependencies['store'], reports: SyncReport[], out: Output): Promise<void> {
  if (!reports.some(changed)) return;
  const [Jobs, TermModel] = await Promise.all([loadJobs(), loadTermModel()]);
  const { action, rebuildDue } = await Jobs.oneAtATime(store, 'term_model', () => TermModel.refresh(store, { rebuildLimit: syncRebuildLimit, onProgress: (stage) => out.status(`term model: ${stage}`) }), {
    onWait: (lease) => out.status(`term model: waiting for another process refreshing it (${Jobs.holderOf(lease)})`),
  });
  if (action === 'built') out.status('term model rebuilt');
  if (rebuildDue !== undefined) out.status(`term model: new words folded in; a full rebuild is due (${rebuildDue}): run \`profile-edge reindex\` when convenient`);
}
