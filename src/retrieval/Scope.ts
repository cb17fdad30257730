import * as Access from '../auth/Access.js';
import type { Caller } from '../auth/Caller.js';
import type { QueryScope } from '../contract/Query.js';
import { ServiceError } from '../errors/ServiceError.js';
import * as Channels from '../store/Channels.js';
import type { StoredChannel } from '../store/Channels.js';
import * as Collections from '../store/Collections.js';
import type { Database } from '../store/Database.js';
import * as Profiles from '../store/Profiles.js';
import type { Profile } from '../store/Profiles.js';

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
function liveChannels(db: Database, profile: Profile, caller: Caller): ScopedChannel[] {
  return Access.visibleChannels(db, profile, caller)
    .filter((c) => c.status !== 'paused')
    .map((channel) => ({ channel, profile }));
}

function readable(db: Database, handle: string, caller: Caller): Profile {
  return Access.readableProfile(db, handle, caller);
}

function collectionChannels(db: Database, creator: string, slug: string, caller: Caller): ScopedChannel[] {
  const profile = readable(db, creator, caller);
  const collection = Collections.find(db, profile.id, slug);
  if (!collection) throw new ServiceError('not_found', `no collection "@${creator}/${slug}"`);
  const members = new Set(collection.channelIds);
  return liveChannels(db, profile, caller).filter((c) => members.has(c.channel.id));
}

/** Every public profile's live channels: global scope never includes unlisted or private profiles. */
function globalChannels(db: Database, caller: Caller): ScopedChannel[] {
  // Two queries for any number of profiles; authorization is checked only where a private channel needs it.
  const channels = Channels.byProfiles(db);
  return Profiles.list(db)
    .filter((p) => p.visibility === 'public')
    .flatMap((profile) => {
      const own = (channels.get(profile.id) ?? []).filter((c) => c.status !== 'paused');
      const visible = own.some((c) => c.accessLevel === 'private') && !Access.isAuthorized(db, profile, caller) ? own.filter((c) => c.accessLevel === 'public') : own;
      return visible.map((channel) => ({ channel, profile }));
    });
}

/** Reads `@handle` and `@creator/collection` mentions; resolved ones narrow the scope and leave the text. */
function fromMentions(db: Database, question: string, caller: Caller): Omit<ResolvedScope, 'channels'> & { channels: ScopedChannel[] } | undefined {
  const notes: string[] = [];
  const handles: string[] = [];
  const collections: { creator: string; collection: string }[] = [];
  const channels: ScopedChannel[] = [];
  const retrievalText = question.replace(mentionPattern, (whole, lead: string, handle: string, collection: string | undefined) => {
    // A scope names at most 20 handles; further mentions stay text.
    if (new Set([...handles, ...collections.map((c) => c.creator)]).size >= 20) return whole;
    try {
      if (collection) {
        channels.push(...collectionChannels(db, handle, collection, caller));
        const found = { creator: handle.toLowerCase(), collection: collection.toLowerCase() };
        if (!collections.some((c) => c.creator === found.creator && c.collection === found.collection)) collections.push(found);
      } else {
        const profile = readable(db, handle, caller);
        channels.push(...liveChannels(db, profile, caller));
        if (!handles.includes(profile.slug)) handles.push(profile.slug);
      }
      return lead;
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'not_found') throw error;
      const note = `The mention ${whole.trim()} matched no readable profile or collection; it was kept as text.`;
      if (!notes.includes(note) && notes.length < 10) notes.push(note);
      return whole;
    }
  });
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

/**
 * Resolves what a query may draw on. An explicit scope naming an unknown or unreadable profile, collection or handle
 * is a 404; without a scope, `@mentions` narrow the global scope. `channelIds` narrow further; ids outside the scope
 * are dropped with a note. Paused channels never answer; private channels only for authorized callers.
 */
export function resolve(
  db: Database,
  input: { question: string; scope: QueryScope | undefined; boundSlug: string | undefined; channelIds: string[] | undefined; caller: Caller },
): ResolvedScope {
  const { caller, question } = input;
  let resolved: Omit<ResolvedScope, 'channels'> & { channels: ScopedChannel[] };
  if (input.boundSlug !== undefined) {
    const profile = readable(db, input.boundSlug, caller);
    resolved = { scope: { kind: 'profile', slug: profile.slug }, kind: 'profile', channels: liveChannels(db, profile, caller), retrievalText: question, notes: [] };
  } else if (input.scope) {
    const scope = input.scope;
    const channels =
      scope.kind === 'global'
        ? globalChannels(db, caller)
        : scope.kind === 'profile'
          ? liveChannels(db, readable(db, scope.slug, caller), caller)
          : scope.kind === 'collection'
            ? collectionChannels(db, scope.creator, scope.collection, caller)
            : [...new Set(scope.handles.map((h) => readable(db, h, caller).id))].flatMap((id) => liveChannels(db, Profiles.byId(db, id)!, caller));
    resolved = { scope, kind: scope.kind, channels, retrievalText: question, notes: [] };
  } else {
    const mentioned = fromMentions(db, question, caller);
    resolved =
      mentioned && mentioned.kind === 'mentions'
        ? mentioned
        : { scope: { kind: 'global' }, kind: 'global', channels: globalChannels(db, caller), retrievalText: question, notes: mentioned?.notes ?? [] };
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
