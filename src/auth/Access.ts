import type { Store } from '../store/Store.js';
import type { StoredChannel } from '../store/Channels.js';
import type { Profile } from '../store/Profiles.js';
import { ServiceError } from '../errors/ServiceError.js';
import type { Caller } from './Caller.js';

/**
 * True when the caller speaks for the profile: its owner's or a team member's bearer token, or an API key of the
 * owner, a team member, or an account the owner authorized.
 */
export async function isAuthorized(store: Store, profile: Profile, caller: Caller): Promise<boolean> {
  if (caller.bearer && (await store.profiles.isTeam(profile, caller.bearer.accountId))) return true;
  if (caller.apiKey) {
    const account = caller.apiKey.accountId;
    if ((await store.profiles.isTeam(profile, account)) || (await store.profiles.isGranted(profile, account))) return true;
  }
  return false;
}

/** Public and unlisted profiles are readable by anyone; private ones only by authorized callers. */
export async function canRead(store: Store, profile: Profile, caller: Caller): Promise<boolean> {
  return profile.visibility !== 'private' || isAuthorized(store, profile, caller);
}

/** Stands in for the profile an unknown handle does not name: private, with an id no row has. */
const nobody: Profile = { id: '', slug: '', name: '', description: '', visibility: 'private', directory: false, ownerAccountId: null, createdAt: 0 };

/**
 * The profile a handle names, when the caller may read it; otherwise 404, exactly as for an unknown profile, and
 * after the same work: an unknown handle is checked as a private profile would be, so the time a refusal takes does
 * not tell a private profile from none.
 */
export async function readableProfile(store: Store, handle: string, caller: Caller): Promise<Profile> {
  const profile = await store.profiles.byHandle(handle);
  const readable = await canRead(store, profile ?? nobody, caller);
  if (!profile || !readable) throw new ServiceError('not_found', `no profile "${handle}"`);
  return profile;
}

/** The channels a caller may see: private channels only when the caller is authorized for the profile. */
export async function visibleChannels(store: Store, profile: Profile, caller: Caller): Promise<StoredChannel[]> {
  const channels = await store.channels.byProfile(profile.id);
  if (channels.every((c) => c.accessLevel === 'public') || (await isAuthorized(store, profile, caller))) return channels;
  return channels.filter((c) => c.accessLevel === 'public');
}
