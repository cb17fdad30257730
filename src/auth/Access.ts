import type { Database } from '../store/Database.js';
import * as Channels from '../store/Channels.js';
import * as Profiles from '../store/Profiles.js';
import type { Profile } from '../store/Profiles.js';
import { ServiceError } from '../errors/ServiceError.js';
import type { Caller } from './Caller.js';

/**
 * True when the caller speaks for the profile: its owner's or a team member's bearer token, or an API key of the
 * owner, a team member, or an account the owner authorized.
 */
export function isAuthorized(db: Database, profile: Profile, caller: Caller): boolean {
  if (caller.bearer && Profiles.isTeam(db, profile, caller.bearer.accountId)) return true;
  if (caller.apiKey) {
    const account = caller.apiKey.accountId;
    if (Profiles.isTeam(db, profile, account) || Profiles.isGranted(db, profile, account)) return true;
  }
  return false;
}

/** Public and unlisted profiles are readable by anyone; private ones only by authorized callers. */
export function canRead(db: Database, profile: Profile, caller: Caller): boolean {
  return profile.visibility !== 'private' || isAuthorized(db, profile, caller);
}

/** Stands in for the profile an unknown handle does not name: private, with an id no row has. */
const nobody: Profile = { id: '', slug: '', name: '', description: '', visibility: 'private', directory: false, ownerAccountId: null, createdAt: 0 };

/**
 * The profile a handle names, when the caller may read it; otherwise 404, exactly as for an unknown profile, and
 * after the same work: an unknown handle is checked as a private profile would be, so the time a refusal takes does
 * not tell a private profile from none.
 */
export function readableProfile(db: Database, handle: string, caller: Caller): Profile {
  const profile = Profiles.byHandle(db, handle);
  const readable = canRead(db, profile ?? nobody, caller);
  if (!profile || !readable) throw new ServiceError('not_found', `no profile "${handle}"`);
  return profile;
}

/** The channels a caller may see: private channels only when the caller is authorized for the profile. */
export function visibleChannels(db: Database, profile: Profile, caller: Caller): Channels.StoredChannel[] {
  const channels = Channels.byProfile(db, profile.id);
  if (channels.every((c) => c.accessLevel === 'public') || isAuthorized(db, profile, caller)) return channels;
  return channels.filter((c) => c.accessLevel === 'public');
}
