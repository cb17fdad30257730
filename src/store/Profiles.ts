import * as Ids from './Ids.js';
import { ServiceError } from '../errors/ServiceError.js';
import { bytewise, Conflict, type Sql } from './Sql.js';

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

function checkHandle(handle: string): void {
  if (!handlePattern.test(handle) || handle.includes('--')) {
    throw new ServiceError('invalid_request', `"${handle}" is not a valid handle: use lowercase letters, digits and single hyphens`);
  }
  if (reservedHandles.has(handle)) throw new ServiceError('invalid_request', `"${handle}" is reserved`);
}

/** Inserts a handle; one already taken, by any profile, is a conflict. */
async function claimHandle(sql: Sql, handle: string, profileId: string): Promise<void> {
  try {
    await sql.run('INSERT INTO handles (handle, profile_id) VALUES (?, ?)', [handle, profileId]);
  } catch (error) {
    if (error instanceof Conflict) throw new ServiceError('conflict', `handle "${handle}" is taken`);
    throw error;
  }
}

/** Creates a profile; its slug becomes its first handle. */
export async function create(
  sql: Sql,
  input: { slug: string; name: string; description?: string; visibility: Visibility; directory?: boolean; ownerAccountId?: string | null },
): Promise<Profile> {
  if (input.name.trim() === '') throw new ServiceError('invalid_request', 'a profile needs a name');
  if (input.directory && input.visibility !== 'public') throw new ServiceError('invalid_request', 'only public profiles can be listed in the directory');
  checkHandle(input.slug);
  const id = Ids.random('prof');
  await sql.transaction(async (tx) => {
    // The handle first: a slug taken as another profile's alias is refused before the profile exists.
    if (await tx.get('SELECT 1 AS taken FROM handles WHERE handle = ?', [input.slug])) throw new ServiceError('conflict', `handle "${input.slug}" is taken`);
    try {
      await tx.run(
        `INSERT INTO profiles (id, slug, name, description, visibility, directory_opt_in, owner_account_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        [id, input.slug, input.name.trim(), input.description ?? '', input.visibility, input.directory ? 1 : 0, input.ownerAccountId ?? null, Date.now()],
      );
    } catch (error) {
      if (error instanceof Conflict) throw new ServiceError('conflict', `handle "${input.slug}" is taken`);
      throw error;
    }
    await claimHandle(tx, input.slug, id);
  });
  return (await byId(sql, id))!;
}

/** Adds an alias handle that resolves to the profile. */
export async function addAlias(sql: Sql, profileId: string, handle: string): Promise<void> {
  checkHandle(handle);
  await claimHandle(sql, handle, profileId);
}

export async function byId(sql: Sql, id: string): Promise<Profile | undefined> {
  return toProfile(await sql.get<Row>(`SELECT ${columns} FROM profiles p WHERE p.id = ?`, [id]));
}

/** A profile by its slug or any alias handle (case-insensitive); no access check. */
export async function byHandle(sql: Sql, handle: string): Promise<Profile | undefined> {
  // One row whether the handle names a profile or not (its columns null when not), read and built the same way:
  // how long a lookup takes does not tell which handles exist.
  const row = (await sql.get<Row | { id: null }>(
    `SELECT ${columns} FROM (SELECT CAST(? AS TEXT) AS handle) q LEFT JOIN handles h ON h.handle = q.handle LEFT JOIN profiles p ON p.id = h.profile_id`,
    [handle.length > 64 ? '' : handle.toLowerCase()],
  ))!;
  const profile = toProfile(row as Row);
  return row.id === null ? undefined : profile;
}

/** A profile that must exist, for operator commands. */
export async function get(sql: Sql, handle: string): Promise<Profile> {
  const profile = (await byHandle(sql, handle)) ?? (await byId(sql, handle));
  if (!profile) throw new ServiceError('not_found', `no profile "${handle}"`);
  return profile;
}

export async function aliases(sql: Sql, profileId: string): Promise<string[]> {
  const rows = await sql.all<{ handle: string }>(
    `SELECT handle FROM handles WHERE profile_id = ? AND handle <> (SELECT slug FROM profiles WHERE id = ?) ORDER BY ${bytewise(sql, 'handle')}`,
    [profileId, profileId],
  );
  return rows.map((r) => r.handle);
}

/** One page of public, opted-in profiles in slug order. */
export async function directoryPage(sql: Sql, page: { offset: number; limit: number }): Promise<{ profiles: Profile[]; more: boolean }> {
  const rows = await sql.all<Row>(
    `SELECT ${columns} FROM profiles p WHERE p.visibility = 'public' AND p.directory_opt_in = 1 ORDER BY ${bytewise(sql, 'p.slug')} LIMIT ? OFFSET ?`,
    [page.limit + 1, page.offset],
  );
  return { profiles: rows.slice(0, page.limit).map((r) => toProfile(r)!), more: rows.length > page.limit };
}

export async function list(sql: Sql): Promise<Profile[]> {
  return (await sql.all<Row>(`SELECT ${columns} FROM profiles p ORDER BY ${bytewise(sql, 'p.slug')}`)).map((r) => toProfile(r)!);
}

/** Changes who may see a profile and whether it is listed. */
export async function update(
  sql: Sql,
  profileId: string,
  changes: { name?: string; description?: string; visibility?: Visibility; directory?: boolean; ownerAccountId?: string | null },
): Promise<Profile> {
  return sql.transaction(async (tx) => {
    const current = await byId(tx, profileId);
    if (!current) throw new ServiceError('not_found', `no profile "${profileId}"`);
    const next = { ...current, ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) };
    if (next.directory && next.visibility !== 'public') throw new ServiceError('invalid_request', 'only public profiles can be listed in the directory');
    await tx.run('UPDATE profiles SET name = ?, description = ?, visibility = ?, directory_opt_in = ?, owner_account_id = ? WHERE id = ?', [
      next.name,
      next.description,
      next.visibility,
      next.directory ? 1 : 0,
      next.ownerAccountId,
      profileId,
    ]);
    return (await byId(tx, profileId))!;
  });
}

/** Adds a team member: their bearer tokens and API keys may read the profile when it is private. */
export async function addMember(sql: Sql, profileId: string, accountId: string): Promise<void> {
  await sql.run('INSERT INTO profile_members (profile_id, account_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', [profileId, accountId, Date.now()]);
}

export async function removeMember(sql: Sql, profileId: string, accountId: string): Promise<boolean> {
  return (await sql.run('DELETE FROM profile_members WHERE profile_id = ? AND account_id = ?', [profileId, accountId])) > 0;
}

export async function members(sql: Sql, profileId: string): Promise<string[]> {
  const rows = await sql.all<{ accountId: string }>('SELECT account_id AS accountId FROM profile_members WHERE profile_id = ? ORDER BY created_at, account_id', [profileId]);
  return rows.map((r) => r.accountId);
}

/** Authorizes another account's API keys to read the profile. */
export async function grantAccess(sql: Sql, profileId: string, accountId: string): Promise<void> {
  await sql.run('INSERT INTO profile_grants (profile_id, account_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', [profileId, accountId, Date.now()]);
}

export async function revokeAccess(sql: Sql, profileId: string, accountId: string): Promise<boolean> {
  return (await sql.run('DELETE FROM profile_grants WHERE profile_id = ? AND account_id = ?', [profileId, accountId])) > 0;
}

export async function grants(sql: Sql, profileId: string): Promise<string[]> {
  const rows = await sql.all<{ accountId: string }>('SELECT account_id AS accountId FROM profile_grants WHERE profile_id = ? ORDER BY created_at, account_id', [profileId]);
  return rows.map((r) => r.accountId);
}

/** True when the account is the profile's owner or a team member. */
export async function isTeam(sql: Sql, profile: Profile, accountId: string): Promise<boolean> {
  if (profile.ownerAccountId === accountId) return true;
  return (await sql.get('SELECT 1 AS member FROM profile_members WHERE profile_id = ? AND account_id = ?', [profile.id, accountId])) !== undefined;
}

/** True when the owner authorized the account's API keys. */
export async function isGranted(sql: Sql, profile: Profile, accountId: string): Promise<boolean> {
  return (await sql.get('SELECT 1 AS granted FROM profile_grants WHERE profile_id = ? AND account_id = ?', [profile.id, accountId])) !== undefined;
}
