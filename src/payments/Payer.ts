import type { Caller } from '../auth/Caller.js';
import type { Store } from '../store/Store.js';
import type { Profile } from '../store/Profiles.js';

/**
 * The account a query is charged to: the API key's owner; without a key, on a profile's own endpoint, the bearer
 * token's account when it owns the profile or is on its team (their own profile, charged to them). Undefined when
 * nobody with an account pays.
 */
export async function accountOf(store: Store, caller: Caller, profile: Profile | undefined): Promise<string | undefined> {
  if (caller.apiKey) return caller.apiKey.accountId;
  if (caller.bearer && profile && (await store.profiles.isTeam(profile, caller.bearer.accountId))) return caller.bearer.accountId;
  return undefined;
}
