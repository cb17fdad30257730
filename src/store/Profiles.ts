import type { Database } from './Database.js';
import * as Ids from './Ids.js';
import { ServiceError } from '../errors/ServiceError.js';

export type Visibility = 'public' | 'unlisted' | 'private';

export type Profile = {
  id: string;
  slug: string;
  name: string;
  description: string;
  visibility: Visibility;
  directory: boolean;
  ownerAccountId: string | null;
  createdAt: number;
};

/** Lowercase words joined by single hyphens, 1 to 64 characters: safe in a path and in an `@handle` mention. */
export const handlePattern = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

/** Path words the service itself uses at `/{slug}/...` and in scopes, so no profile may take them. */
export const reservedHandles = new Set(['api', 'mcp', 'health', 'openapi', 'skill', 'global', 'i', 'admin', 'static', 'well-known']);

type Row = Omit<Profile, 'directory'> & { directory: 0 | 1 };

const columns = `p.id, p.slug, p.name, p.description, p.visibility, p.directory_opt_in AS directory,
  p.owner_account_id AS ownerAccountId, p.created_at AS createdAt`;

const toProfile = (row: Row | undefined): Profile | undefined => row && { ...row, directory: row.directory === 1 };

function checkHandle(db: Database, handle: string): void {
  if (!handlePattern.test(handle) || handle.includes('--')) {
    throw new ServiceError('invalid_request', `"${handle}" is not a valid handle: use lowercase letters, digits and single hyphens`);
  }
  if (reservedHandles.has(handle)) throw new ServiceError('invalid_request', `"${handle}" is reserved`);
  if (db.prepare('SELECT 1 FROM handles WHERE handle = ?').get(handle)) {
    throw new ServiceError('conflict', `handle "${handle}" is taken`);
  }
}

/** Creates a profile; its slug becomes its first handle. */
export function create(
  db: Database,
  input: { slug: string; name: string; description?: string; visibility: Visibility; directory?: boolean; ownerAccountId?: string | null },
): Profile {
  if (input.name.trim() === '') throw new ServiceError('invalid_request', 'a profile needs a name');
  if (input.directory && input.visibility !== 'public') throw new ServiceError('invalid_request', 'only public profiles can be listed in the directory');
  const id = Ids.random('prof');
  db.transaction(() => {
    checkHandle(db, input.slug);
    db.prepare(
      `INSERT INTO profiles (id, slug, name, description, visibility, directory_opt_in, owner_account_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(id, input.slug, input.name.trim(), input.description ?? '', input.visibility, input.directory ? 1 : 0, input.ownerAccountId ?? null, Date.now());
    db.prepare('INSERT INTO handles (handle, profile_id) VALUES (?, ?)').run(input.slug, id);
  })();
  return byId(db, id)!;
}

/** Adds an alias handle that resolves to the profile. */
export function addAlias(db: Database, profileId: string, handle: string): void {
  db.transaction(() => {
    checkHandle(db, handle);
    db.prepare('INSERT INTO handles (handle, profile_id) VALUES (?, ?)').run(handle, profileId);
  })();
}

export function byId(db: Database, id: string): Profile | undefined {
  return toProfile(db.prepare(`SELECT ${columns} FROM profiles p WHERE p.id = ?`).get(id) as Row | undefined);
}

/** A profile by its slug or any alias handle (case-insensitive); no access check. */
export function byHandle(db: Database, handle: string): Profile | undefined {
  // One row whether the handle names a profile or not (its columns null when not), read and built the same way:
  // how long a lookup takes does not tell which handles exist.
  const row = db
    .prepare(`SELECT ${columns} FROM (SELECT ? AS handle) q LEFT JOIN handles h ON h.handle = q.handle LEFT JOIN profiles p ON p.id = h.profile_id`)
    .get(handle.length > 64 ? '' : handle.toLowerCase()) as Row | { id: null };
  const profile = toProfile(row as Row);
  return row.id === null ? undefined : profile;
}

/** A profile that must exist, for operator commands. */
export function get(db: Database, handle: string): Profile {
  const profile = byHandle(db, handle) ?? byId(db, handle);
  if (!profile) throw new ServiceError('not_found', `no profile "${handle}"`);
  return profile;
}

export function aliases(db: Database, profileId: string): string[] {
  return db.prepare('SELECT handle FROM handles WHERE profile_id = ? AND handle <> (SELECT slug FROM profiles WHERE id = ?) ORDER BY handle')
    .pluck()
    .all(profileId, profileId) as string[];
}

/** One page of public, opted-in profiles in slug order. */
export function directoryPage(db: Database, page: { offset: number; limit: number }): { profiles: Profile[]; more: boolean } {
  const rows = db
    .prepare(`SELECT ${columns} FROM profiles p WHERE p.visibility = 'public' AND p.directory_opt_in = 1 ORDER BY p.slug LIMIT ? OFFSET ?`)
    .all(page.limit + 1, page.offset) as Row[];
  return { profiles: rows.slice(0, page.limit).map((r) => toProfile(r)!), more: rows.length > page.limit };
}

export function list(db: Database): Profile[] {
  return (db.prepare(`SELECT ${columns} FROM profiles p ORDER BY p.slug`).all() as Row[]).map((r) => toProfile(r)!);
}

/** Changes who may see a profile and whether it is listed. */
export function update(
  db: Database,
  profileId: string,
  changes: { name?: string; description?: string; visibility?: Visibility; directory?: boolean; ownerAccountId?: string | null },
): Profile {
  const current = byId(db, profileId);
  if (!current) throw new ServiceError('not_found', `no profile "${profileId}"`);
  const next = { ...current, ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) };
  if (next.directory && next.visibility !== 'public') throw new ServiceError('invalid_request', 'only public profiles can be listed in the directory');
  db.prepare(
    'UPDATE profiles SET name = ?, description = ?, visibility = ?, directory_opt_in = ?, owner_account_id = ? WHERE id = ?',
  ).run(next.name, next.description, next.visibility, next.directory ? 1 : 0, next.ownerAccountId, profileId);
  return byId(db, profileId)!;
}

/** Adds a team member: their bearer tokens and API keys may read the profile when it is private. */
export function addMember(db: Database, profileId: string, accountId: string): void {
  db.prepare('INSERT OR IGNORE INTO profile_members (profile_id, account_id, created_at) VALUES (?, ?, ?)').run(profileId, accountId, Date.now());
}

export function removeMember(db: Database, profileId: string, accountId: string): boolean {
  return db.prepare('DELETE FROM profile_members WHERE profile_id = ? AND account_id = ?').run(profileId, accountId).changes > 0;
}

export function members(db: Database, profileId: string): string[] {
  return db.prepare('SELECT account_id FROM profile_members WHERE profile_id = ? ORDER BY created_at').pluck().all(profileId) as string[];
}

/** Authorizes another account's API keys to read the profile. */
export function grantAccess(db: Database, profileId: string, accountId: string): void {
  db.prepare('INSERT OR IGNORE INTO profile_grants (profile_id, account_id, created_at) VALUES (?, ?, ?)').run(profileId, accountId, Date.now());
}

export function revokeAccess(db: Database, profileId: string, accountId: string): boolean {
  return db.prepare('DELETE FROM profile_grants WHERE profile_id = ? AND account_id = ?').run(profileId, accountId).changes > 0;
}

export function grants(db: Database, profileId: string): string[] {
  return db.prepare('SELECT account_id FROM profile_grants WHERE profile_id = ? ORDER BY created_at').pluck().all(profileId) as string[];
}

/** True when the account is the profile's owner or a team member. */
export function isTeam(db: Database, profile: Profile, accountId: string): boolean {
  if (profile.ownerAccountId === accountId) return true;
  return db.prepare('SELECT 1 FROM profile_members WHERE profile_id = ? AND account_id = ?').get(profile.id, accountId) !== undefined;
}

/** True when the owner authorized the account's API keys. */
export function isGranted(db: Database, profile: Profile, accountId: string): boolean {
  return db.prepare('SELECT 1 FROM profile_grants WHERE profile_id = ? AND account_id = ?').get(profile.id, accountId) !== undefined;
}
