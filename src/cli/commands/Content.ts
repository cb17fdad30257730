import { lazy } from '../../errors/Lazy.js';
import fs from 'node:fs';
import path from 'node:path';
import { AccessLevel, ChannelKind, ChannelStatus } from '../../contract/Channel.js';
import { formats } from '../../ingest/Formats.js';
import { dateMs, httpUrl as asHttpUrl } from '../../ingest/Values.js';
import { type Command, UsageError, type Values, jsonOption, number, oneOf, required, text } from '../Command.js';

const loadDemo = lazy('The demo dataset loader', () => import('../../demo/Demo.js'));
const loadUpload = lazy('The upload reader', () => import('../../ingest/Upload.js'));

/** An http(s) URL option, checked. */
function httpUrl(value: string, option: string): string {
  const url = asHttpUrl(value);
  if (url === undefined) throw new UsageError(`${option} must be an http(s) URL, got "${value}"`);
  return url;
}

/** Channel settings an operator may set, each checked: what connectors read from `settings`, by channel kind. */
const settingRules: Record<string, { kind: string; pattern: RegExp; meaning: string }> = {
  // Only NOTION_TOKEN variables: a channel must not be able to read any other secret of the environment.
  tokenVariable: { kind: 'notion', pattern: /^NOTION_TOKEN(_[A-Z0-9_]+)?$/, meaning: 'the environment variable with the Notion integration token (NOTION_TOKEN or NOTION_TOKEN_<NAME>)' },
  language: { kind: 'youtube', pattern: /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, meaning: 'a language code for captions, e.g. en or pt-BR' },
};

/** A source URL for a channel kind that syncs from one; upload channels have none. */
function sourceFor(kind: string, value: string): string {
  if (kind === 'user_upload') throw new UsageError('user_upload channels have no source to sync from; fill them with upload');
  return httpUrl(value, '--source-url');
}

/** `--setting KEY=VALUE` options as changes (an empty value removes a setting), checked against the rules. */
function settingChanges(raw: Values[string], kind: string): Record<string, string> | undefined {
  const list = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).map(String);
  if (list.length === 0) return undefined;
  const changes: Record<string, string> = {};
  for (const item of list) {
    const [key, ...rest] = item.split('=');
    const value = rest.join('=').trim();
    const rule = settingRules[key!];
    if (!rule || rest.length === 0) throw new UsageError(`--setting takes KEY=VALUE with KEY one of: ${Object.entries(settingRules).map(([k, r]) => `${k} (${r.kind}: ${r.meaning})`).join('; ')}`);
    if (rule.kind !== kind) throw new UsageError(`--setting ${key} applies to ${rule.kind} channels, not ${kind}`);
    if (value !== '' && !rule.pattern.test(value)) throw new UsageError(`--setting ${key}: "${value}" is not ${rule.meaning}`);
    changes[key!] = value;
  }
  return changes;
}

export const channelsCreate: Command = {
  name: 'channels create',
  summary: 'Add a channel (a source of content) to a profile.',
  usage: 'channels create --profile SLUG --kind KIND --label LABEL [--access public|private] [--rate DOLLARS_PER_MILLION_TOKENS] [--id ch_...] [--source-url URL]',
  options: {
    profile: { type: 'string' },
    kind: { type: 'string' },
    label: { type: 'string' },
    access: { type: 'string' },
    rate: { type: 'string' },
    id: { type: 'string' },
    'source-url': { type: 'string' },
    ...jsonOption,
  },
  async run({ services, out }, { values }) {
    const { store } = await services();
    const profile = await store.profiles.get(required(values, 'profile'));
    const kind = oneOf(values, 'kind', ChannelKind.options);
    if (!kind) throw new UsageError(`--kind is required: ${ChannelKind.options.join(', ')}`);
    const channel = await store.channels.create({
      id: text(values, 'id'),
      profileId: profile.id,
      kind,
      label: required(values, 'label'),
      accessLevel: oneOf(values, 'access', AccessLevel.options) ?? 'public',
      ratePerMillionTokens: number(values, 'rate', { min: 0 }) ?? 0,
      sourceUrl: values['source-url'] === undefined ? undefined : sourceFor(kind, text(values, 'source-url')!),
    });
    if (values.json) out.json(channel);
    else out.line(`created ${channel.accessLevel} ${channel.kind} channel ${channel.id} on ${profile.slug}`);
  },
};

export const channelsUpdate: Command = {
  name: 'channels update',
  summary: "Change a channel's label, access level, price, status (paused channels neither sync nor answer) or source.",
  usage: 'channels update ID [--label LABEL] [--access public|private] [--rate N] [--status live|paused] [--source-url URL|none] [--setting KEY=VALUE]...',
  options: {
    label: { type: 'string' },
    access: { type: 'string' },
    rate: { type: 'string' },
    status: { type: 'string' },
    'source-url': { type: 'string' },
    setting: { type: 'string', multiple: true },
    ...jsonOption,
  },
  positionals: { min: 1, max: 1 },
  async run({ services, out }, { values, positionals }) {
    const status = oneOf(values, 'status', ChannelStatus.options);
    if (status === 'syncing') throw new UsageError('syncing is set by a running sync; use live or paused');
    const source = text(values, 'source-url');
    const { store } = await services();
    const kind = (await store.channels.get(positionals[0]!)).kind;
    const sourceUrl = source === undefined ? undefined : source === 'none' ? null : sourceFor(kind, source);
    const changes = {
      label: text(values, 'label'),
      accessLevel: oneOf(values, 'access', AccessLevel.options),
      ratePerMillionTokens: number(values, 'rate', { min: 0 }),
      status,
    };
    const settings = settingChanges(values.setting, kind);
    // All changes or none: a bad value for one leaves the channel as it was.
    const channel = await store.transaction(async (tx) => {
      if (sourceUrl !== undefined) await tx.channels.setSource(positionals[0]!, { sourceUrl });
      if (settings) {
        const current = (await tx.channels.get(positionals[0]!)).settings;
        const next = Object.fromEntries(Object.entries({ ...current, ...settings }).filter(([, v]) => v !== ''));
        await tx.channels.setSource(positionals[0]!, { settings: next });
      }
      return tx.channels.update(positionals[0]!, changes);
    });
    if (values.json) out.json(channel);
    else {
      const source = channel.sourceUrl ? `, source ${channel.sourceUrl}` : '';
      const settingsText = Object.keys(channel.settings).length > 0 ? `, settings ${JSON.stringify(channel.settings)}` : '';
      out.line(`updated ${channel.id}: ${channel.status}, ${channel.accessLevel}, $${channel.ratePerMillionTokens}/M tokens${source}${settingsText}`);
    }
  },
};

export const channelsList: Command = {
  name: 'channels list',
  summary: 'List channels with their item and chunk counts, sync state and last error.',
  usage: 'channels list [--profile SLUG] [--json]',
  options: { profile: { type: 'string' }, ...jsonOption },
  async run({ services, out }, { values }) {
    const { store } = await services();
    const slug = text(values, 'profile');
    const profiles = slug === undefined ? await store.profiles.list() : [await store.profiles.get(slug)];
    const rows = [];
    for (const p of profiles) {
      for (const c of await store.channels.byProfile(p.id)) rows.push({ profile: p.slug, ...c, ...(await store.items.counts(c.id)) });
    }
    if (values.json) out.json(rows);
    else
      out.table(
        rows.map((c) => ({
          id: c.id,
          profile: c.profile,
          kind: c.kind,
          label: c.label,
          access: c.accessLevel,
          status: c.status,
          rate: c.ratePerMillionTokens,
          items: c.items,
          chunks: c.chunks,
          source: c.sourceUrl,
          lastSynced: c.lastSyncedAt === null ? null : new Date(c.lastSyncedAt).toISOString(),
          lastError: c.lastError === null ? null : `${new Date(c.lastErrorAt!).toISOString()} ${c.lastError}`,
        })),
      );
  },
};

export const upload: Command = {
  name: 'upload',
  summary: `Upload files (${Object.keys(formats).join(' ')}) into a channel; unchanged files change nothing.`,
  usage: 'upload --channel ID FILE... [--title T] [--source-url URL] [--published-at DATE] [--author NAME] [--external-id ID]',
  options: {
    channel: { type: 'string' },
    title: { type: 'string' },
    'source-url': { type: 'string' },
    'published-at': { type: 'string' },
    author: { type: 'string' },
    'external-id': { type: 'string' },
    ...jsonOption,
  },
  positionals: { min: 1, max: 10_000 },
  async run({ services, config, out }, { values, positionals }) {
    const [{ store }, Upload] = await Promise.all([services(), loadUpload()]);
    const channel = await store.channels.get(required(values, 'channel'));
    const perFile = ['title', 'source-url', 'external-id'].filter((k) => values[k] !== undefined);
    if (positionals.length > 1 && perFile.length > 0) throw new UsageError(`--${perFile[0]} applies to one file; upload files one at a time to set it`);
    // Everything that would fail every file is checked before any work: a usage error, nothing written.
    for (const file of positionals) {
      Upload.formatOf(file);
      if (!fs.existsSync(file)) throw new UsageError(`no such file: ${file}`);
    }
    const sourceUrl = values['source-url'] === undefined ? undefined : httpUrl(text(values, 'source-url')!, '--source-url');
    const publishedAt = text(values, 'published-at');
    if (publishedAt !== undefined && dateMs(publishedAt) === undefined) throw new UsageError(`--published-at must be a date (ISO 8601, e.g. 2025-03-14), got "${publishedAt}"`);
    const progress = out.progress(positionals.length, `upload ${channel.id}`);
    const results = [];
    let failed = 0;
    for (const file of positionals) {
      try {
        const result = await Upload.ingest((await services()), {
          channelId: channel.id,
          file,
          metadata: {
            title: text(values, 'title'),
            sourceUrl,
            publishedAt,
            author: text(values, 'author'),
            externalId: text(values, 'external-id'),
          },
          chunkTargetTokens: config.chunkTargetTokens,
          embedder: (await services()).embedder,
        });
        results.push({ file, ...result });
        progress.tick(`${path.basename(file)}: ${result.outcome}`);
        for (const warning of result.warnings) out.warn(`${path.basename(file)}: ${warning}`);
      } catch (error) {
        failed += 1;
        progress.tick(`${path.basename(file)}: failed`);
        out.error((error as Error).message.includes(path.basename(file)) ? (error as Error).message : `${file}: ${(error as Error).message}`);
      }
    }
    progress.stop();
    if (values.json) out.json(results);
    else out.table(results.map((r) => ({ file: r.file, item: r.itemId, outcome: r.outcome, chunks: r.chunkCount, title: r.title })));
    return failed > 0 ? 1 : 0;
  },
};

export const itemsList: Command = {
  name: 'items list',
  summary: 'List the items of a channel with their chunk counts.',
  usage: 'items list --channel ID [--json]',
  options: { channel: { type: 'string' }, ...jsonOption },
  async run({ services, out }, { values }) {
    const { store } = await services();
    const channelId = (await store.channels.get(required(values, 'channel'))).id;
    const items = await store.items.byChannel(channelId);
    // Items standing on stand-in text say so, with why and when their real text is tried next.
    const notes = await store.items.textNotes(channelId);
    if (values.json) out.json(items.map((i) => (notes.has(i.id) ? { ...i, text: notes.get(i.id) } : i)));
    else
      out.table(
        items.map((i) => ({
          id: i.id,
          title: i.title,
          published: i.publishedAt && new Date(i.publishedAt).toISOString().slice(0, 10),
          chunks: i.chunkCount,
          source: i.sourceUrl,
          ...(notes.size > 0 && { text: notes.get(i.id) ?? '' }),
        })),
      );
  },
};

export const demoLoad: Command = {
  name: 'demo load',
  summary: 'Load (or refresh) the demo dataset from data/demo through the upload ingestion.',
  usage: 'demo load [--dir DIRECTORY]',
  options: { dir: { type: 'string' }, ...jsonOption },
  async run({ services, config, out }, { values }) {
    const Demo = await loadDemo();
    const directory = text(values, 'dir') ?? Demo.defaultDirectory;
    const manifest = await Demo.readManifest(directory);
    const total = manifest.profiles.reduce((n, p) => n + p.channels.reduce((m, c) => m + c.items.length, 0), 0);
    const progress = out.progress(total, 'demo');
    const result = await Demo.load((await services()), { directory, chunkTargetTokens: config.chunkTargetTokens, onProgress: (e) => progress.tick(e.file) });
    progress.stop();
    if (values.json) out.json(result);
    else out.line(`demo: ${result.profiles} profiles, ${result.channels} channels, ${result.items} items (${result.created} new, ${result.updated} updated, ${result.unchanged} unchanged), ${result.chunks} chunks`);
  },
};
