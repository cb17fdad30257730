import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { projectRoot } from '../config/Config.js';
import { AccessLevel, ChannelKind } from '../contract/Channel.js';
import * as Upload from '../ingest/Upload.js';
import * as Jobs from '../health/Jobs.js';
import * as TermModel from '../retrieval/terms/TermModel.js';
import type { Store } from '../store/Store.js';

/** Where the demo dataset lives: source files plus a manifest of who owns what. */
export const defaultDirectory = path.join(projectRoot, 'data', 'demo');

const Manifest = z
  .object({
    accounts: z.array(z.object({ name: z.string(), email: z.string().optional() }).strict()),
    profiles: z.array(
      z
        .object({
          slug: z.string(),
          name: z.string(),
          description: z.string(),
          visibility: z.enum(['public', 'unlisted', 'private']),
          directory: z.boolean(),
          owner: z.string().nullable(),
          members: z.array(z.string()),
          aliases: z.array(z.string()).optional(),
          channels: z.array(
            z
              .object({
                id: z.string(),
                kind: ChannelKind,
                label: z.string(),
                accessLevel: AccessLevel,
                ratePerMillionTokens: z.number(),
                status: z.enum(['live', 'paused']),
                items: z.array(
                  z
                    .object({
                      externalId: z.string(),
                      file: z.string(),
                      title: z.string(),
                      sourceUrl: z.string().optional(),
                      publishedAt: z.string(),
                      author: z.string().optional(),
                    })
                    .strict(),
                ),
              })
              .strict(),
          ),
        })
        .strict(),
    ),
    collections: z.array(
      z.object({ creator: z.string(), slug: z.string(), name: z.string(), description: z.string(), channels: z.array(z.string()) }).strict(),
    ),
  })
  .strict();
export type Manifest = z.infer<typeof Manifest>;

export type Progress = (event: { done: number; total: number; file: string }) => void;

export type LoadResult = { profiles: number; channels: number; items: number; created: number; updated: number; unchanged: number; chunks: number };

/** Reads and validates a demo manifest. */
export async function readManifest(directory: string): Promise<Manifest> {
  const raw = await fs.readFile(path.join(directory, 'manifest.json'), 'utf8');
  return Manifest.parse(JSON.parse(raw));
}

/**
 * Loads the demo dataset through the same upload ingestion an operator uses. Idempotent: what exists is kept, and
 * unchanged files change nothing.
 */
export async function load(handles: { store: Store }, options: { directory?: string; chunkTargetTokens: number; onProgress?: Progress }): Promise<LoadResult> {
  const directory = options.directory ?? defaultDirectory;
  const manifest = await readManifest(directory);
  const { store } = handles;
  for (const account of manifest.accounts) {
    if (!(await store.accounts.find(account.name))) await store.accounts.create(account);
  }
  for (const p of manifest.profiles) {
    const owner = p.owner === null ? null : (await store.accounts.get(p.owner)).id;
    const profile =
      (await store.profiles.byHandle(p.slug)) ??
      (await store.profiles.create({ slug: p.slug, name: p.name, description: p.description, visibility: p.visibility, directory: p.directory, ownerAccountId: owner }));
    for (const alias of p.aliases ?? []) if (!(await store.profiles.byHandle(alias))) await store.profiles.addAlias(profile.id, alias);
    for (const member of p.members) await store.profiles.addMember(profile.id, (await store.accounts.get(member)).id);
    for (const c of p.channels) {
      if (!(await store.channels.find(c.id))) {
        await store.channels.create({ id: c.id, profileId: profile.id, kind: c.kind, label: c.label, accessLevel: c.accessLevel, ratePerMillionTokens: c.ratePerMillionTokens, status: c.status });
      }
    }
  }
  for (const c of manifest.collections) {
    const creator = await store.profiles.get(c.creator);
    if (!(await store.collections.find(creator.id, c.slug))) {
      await store.collections.create({ profileId: creator.id, slug: c.slug, name: c.name, description: c.description, channelIds: c.channels });
    }
  }

  const items = manifest.profiles.flatMap((p) => p.channels.flatMap((c) => c.items.map((item) => ({ channelId: c.id, item }))));
  const result: LoadResult = { profiles: manifest.profiles.length, channels: 0, items: items.length, created: 0, updated: 0, unchanged: 0, chunks: 0 };
  result.channels = manifest.profiles.reduce((n, p) => n + p.channels.length, 0);
  let done = 0;
  for (const { channelId, item } of items) {
    const stored = await Upload.ingest(handles, {
      channelId,
      file: path.join(directory, item.file),
      metadata: { externalId: item.externalId, title: item.title, sourceUrl: item.sourceUrl, publishedAt: item.publishedAt, author: item.author },
      chunkTargetTokens: options.chunkTargetTokens,
    });
    result[stored.outcome] += 1;
    result.chunks += stored.chunkCount;
    options.onProgress?.({ done: ++done, total: items.length, file: item.file });
  }
  // The demo is small: its term model takes well under a second.
  if (result.created + result.updated > 0 || (await store.termModel.info()) === undefined) await Jobs.oneAtATime(store, 'term_model', () => TermModel.build(store));
  return result;
}

const loadedKey = 'demo_loaded_at';
const claimKey = 'demo_claimed_by';

/**
 * Loads the demo on a store's first start only: an operator who removes demo rows does not get them back. Of several
 * instances starting together on one new database, the one that claims the load does it; the others start without.
 */
export async function loadOnFirstStart(handles: { store: Store }, options: { chunkTargetTokens: number; directory?: string }): Promise<LoadResult | undefined> {
  if ((await handles.store.meta.get(loadedKey)) !== undefined) return undefined;
  const claim = crypto.randomUUID();
  if ((await handles.store.meta.claim(claimKey, claim)) !== claim) return undefined;
  const result = await load(handles, options);
  await handles.store.meta.set(loadedKey, new Date().toISOString());
  return result;
}
