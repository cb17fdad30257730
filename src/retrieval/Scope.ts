import * as Access from '../auth/Access.js';
import type { Caller } from '../auth/Caller.js';
import type { QueryScope } from '../contract/Query.js';
import { ServiceError } from '../errors/ServiceError.js';
import type { StoredChannel } from '../store/Channels.js';
import type { Profile } from '../store/Profiles.js';
import type { Store } from '../store/Store.js';

/** A channel a query may draw on, with the profile it belongs to. */
export type ScopedChannel = { channel: StoredChannel; profile: Profile };

/** What a query runs against, after access checks. */
export type ResolvedScope = {
  /** The scope as reported back to the caller. */
  scope: QueryScope;
  /** How the scope came about: as given, or narrowed by mentions in the question. */
  kind: 'global' | 'profile' | 'collection' | 'handles' | 'mentions';
  channels: Map<string, ScopedChannel>;
  /** The question with resolved mentions taken out, for retrieval. */
  retrievalText: string;
  /** What the caller should know about how the scope was read. */
  notes: string[];
};

const mentionPattern = /(^|[\s(["'])@([a-z0-9][a-z0-9-]{0,63})(?:\/([a-z0-9][a-z0-9-]{0,63}))?(?![\w/-])/gi;

/** The channels of a profile a caller may query: visible to them and not paused. */
async function liveChannels(store: Store, profile: Profile, caller: Caller): Promise<ScopedChannel[]> {
  return (await Access.visibleChannels(store, profile, caller)).filter((c) => c.status !== 'paused').map((channel) => ({ channel, profile }));
}

async function collectionChannels(store: Store, creator: string, slug: string, caller: Caller): Promise<ScopedChannel[]> {
  const profile = await Access.readableProfile(store, creator, caller);
  const collection = await store.collections.find(profile.id, slug);
  if (!collection) throw new ServiceError('not_found', `no collection "@${creator}/${slug}"`);
  const members = new Set(collection.channelIds);
  return (await liveChannels(store, profile, caller)).filter((c) => members.has(c.channel.id));
}

/** Every public profile's live channels: global scope never includes unlisted or private profiles. */
async function globalChannels(store: Store, caller: Caller): Promise<ScopedChannel[]> {
  // Two queries for any number of profiles, at once; authorization is checked only where a private channel needs it.
  const [channels, profiles] = await Promise.all([store.channels.byProfiles(), store.profiles.list()]);
  const scoped: ScopedChannel[] = [];
  for (const profile of profiles) {
    if (profile.visibility !== 'public') continue;
    const own = (channels.get(profile.id) ?? []).filter((c) => c.status !== 'paused');
    const visible = own.some((c) => c.accessLevel === 'private') && !(await Access.isAuthorized(store, profile, caller)) ? own.filter((c) => c.accessLevel === 'public') : own;
    scoped.push(...visible.map((channel) => ({ channel, profile })));
  }
  return scoped;
}

/** Reads `@handle` and `@creator/collection` mentions; resolved ones narrow the scope and leave the text. */
async function fromMentions(store: Store, question: string, caller: Caller): Promise<(Omit<ResolvedScope, 'channels'> & { channels: ScopedChannel[] }) | undefined> {
  const notes: string[] = [];
  const handles: string[] = [];
  const collections: { creator: string; collection: string }[] = [];
  const channels: ScopedChannel[] = [];
  let retrievalText = '';
  let from = 0;
  for (const match of question.matchAll(mentionPattern)) {
    const [whole, lead, handle, collection] = match as unknown as [string, string, string, string | undefined];
    retrievalText += question.slice(from, match.index);
    from = match.index + whole.length;
    // A scope names at most 20 handles; further mentions stay text.
    if (new Set([...handles, ...collections.map((c) => c.creator)]).size >= 20) {
      retrievalText += whole;
      continue;
    }
    try {
      if (collection) {
        channels.push(...(await collectionChannels(store, handle, collection, caller)));
        const found = { creator: handle.toLowerCase(), collection: collection.toLowerCase() };
        if (!collections.some((c) => c.creator === found.creator && c.collection === found.collection)) collections.push(found);
      } else {
        const profile = await Access.readableProfile(store, handle, caller);
        channels.push(...(await liveChannels(store, profile, caller)));
        if (!handles.includes(profile.slug)) handles.push(profile.slug);
      }
      retrievalText += lead;
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'not_found') throw error;
      const note = `The mention ${whole.trim()} matched no readable profile or collection; it was kept as text.`;
      if (!notes.includes(note) && notes.length < 10) notes.push(note);
      retrievalText += whole;
    }
  }
  retrievalText += question.slice(from);
  if (handles.length === 0 && collections.length === 0) return notes.length > 0 ? { scope: { kind: 'global' }, kind: 'global', channels: [], retrievalText: question, notes } : undefined;
  const only = collections.length === 1 && handles.length === 0 ? collections[0]! : undefined;
  const scope: QueryScope = only
    ? { kind: 'collection', creator: only.creator, collection: only.collection }
    : { kind: 'handles', handles: [...new Set([...handles, ...collections.map((c) => c.creator)])] };
  const named = [...new Set([...handles.map((h) => `@${h}`), ...collections.map((c) => `@${c.creator}/${c.collection}`)])];
  notes.push(`Scope narrowed by mention to ${named.slice(0, 20).join(', ')}.`);
  const unique = [...new Map(channels.map((c) => [c.channel.id, c])).values()];
  return { scope, kind: 'mentions', channels: unique, retrievalText: retrievalText.replace(/\s{2,}/g, ' ').trim(), notes };
}

/** The live channels of the profiles a list of handles names, each profile once. */
async function handleChannels(store: Store, handles: string[], caller: Caller): Promise<ScopedChannel[]> {
  const profiles = new Map<string, Profile>();
  for (const handle of handles) {
    const profile = await Access.readableProfile(store, handle, caller);
    if (!profiles.has(profile.id)) profiles.set(profile.id, profile);
  }
  const channels: ScopedChannel[] = [];
  for (const profile of profiles.values()) channels.push(...(await liveChannels(store, profile, caller)));
  return channels;
}

/**
 * Resolves what a query may draw on. An explicit scope naming an unknown or unreadable profile, collection or handle
 * is a 404; without a scope, `@mentions` narrow the global scope. `channelIds` narrow further; ids outside the scope
 * are dropped with a note. Paused channels never answer; private channels only for authorized callers.
 */
export async function resolve(
  store: Store,
  input: { question: string; scope: QueryScope | undefined; boundSlug: string | undefined; channelIds: string[] | undefined; caller: Caller },
): Promise<ResolvedScope> {
  const { caller, question } = input;
  let resolved: Omit<ResolvedScope, 'channels'> & { channels: ScopedChannel[] };
  if (input.boundSlug !== undefined) {
    const profile = await Access.readableProfile(store, input.boundSlug, caller);
    resolved = { scope: { kind: 'profile', slug: profile.slug }, kind: 'profile', channels: await liveChannels(store, profile, caller), retrievalText: question, notes: [] };
  } else if (input.scope) {
    const scope = input.scope;
    const channels =
      scope.kind === 'global'
        ? await globalChannels(store, caller)
        : scope.kind === 'profile'
          ? await liveChannels(store, await Access.readableProfile(store, scope.slug, caller), caller)
          : scope.kind === 'collection'
            ? await collectionChannels(store, scope.creator, scope.collection, caller)
            : await handleChannels(store, scope.handles, caller);
    resolved = { scope, kind: scope.kind, channels, retrievalText: question, notes: [] };
  } else {
    const mentioned = await fromMentions(store, question, caller);
    resolved =
      mentioned && mentioned.kind === 'mentions'
        ? mentioned
        : { scope: { kind: 'global' }, kind: 'global', channels: await globalChannels(store, caller), retrievalText: question, notes: mentioned?.notes ?? [] };
  }
  const channels = new Map(resolved.channels.map((c) => [c.channel.id, c]));
  if (input.channelIds !== undefined) {
    const wanted = new Set(input.channelIds);
    const outside = [...wanted].filter((id) => !channels.has(id));
    for (const id of channels.keys()) if (!wanted.has(id)) channels.delete(id);
    if (outside.length > 0) {
      resolved.notes.push(`Ignored ${outside.length} channel id(s) outside the scope, unknown, paused or not readable: ${outside.slice(0, 5).join(', ')}.`);
    }
  }
  return { ...resolved, channels };
}
