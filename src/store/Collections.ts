import * as Ids from './Ids.js';
import { ServiceError } from '../errors/ServiceError.js';
import { handlePattern } from './Profiles.js';
import { bytewise, Conflict, type Sql } from './Sql.js';

/** A public collection `@creator/collection`: a named set of the creator profile's channels. */
export type Collection = {
  id: string;
  profileId: string;
  slug: string;
  name: string;
  description: string;
  channelIds: string[];
};

type Row = Omit<Collection, 'channelIds'>;

const columns = 'id, profile_id AS profileId, slug, name, description';

async function withChannels(sql: Sql, row: Row): Promise<Collection> {
  const channels = await sql.all<{ channelId: string }>(`SELECT channel_id AS channelId FROM collection_channels WHERE collection_id = ? ORDER BY ${bytewise(sql, 'channel_id')}`, [row.id]);
  return { ...row, channelIds: channels.map((c) => c.channelId) };
}

/** Creates a collection on a profile from some of that profile's channels. */
export async function create(
  sql: Sql,
  input: { profileId: string; slug: string; name: string; description?: string; channelIds: string[] },
): Promise<Collection> {
  if (!handlePattern.test(input.slug)) {
    throw new ServiceError('invalid_request', `"${input.slug}" is not a valid collection slug: use lowercase letters, digits and hyphens`);
  }
  const id = Ids.random('coll');
  await sql.transaction(async (tx) => {
    try {
      await tx.run('INSERT INTO collections (id, profile_id, slug, name, description, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
        id,
        input.profileId,
        input.slug,
        input.name,
        input.description ?? '',
        Date.now(),
      ]);
    } catch (error) {
      if (error instanceof Conflict) throw new ServiceError('conflict', `collection "${input.slug}" already exists`);
      throw error;
    }
    for (const channelId of input.channelIds) await addChannel(tx, id, channelId);
  });
  return withChannels(sql, (await sql.get<Row>(`SELECT ${columns} FROM collections WHERE id = ?`, [id]))!);
}

/** Adds one of the creator's own channels to a collection. */
export async function addChannel(sql: Sql, collectionId: string, channelId: string): Promise<void> {
  const ok = await sql.get('SELECT 1 AS ok FROM collections c JOIN channels ch ON ch.profile_id = c.profile_id WHERE c.id = ? AND ch.id = ?', [collectionId, channelId]);
  if (!ok) throw new ServiceError('invalid_request', `channel "${channelId}" is not a channel of the collection's profile`);
  await sql.run('INSERT INTO collection_channels (collection_id, channel_id) VALUES (?, ?) ON CONFLICT DO NOTHING', [collectionId, channelId]);
}

export async function find(sql: Sql, profileId: string, slug: string): Promise<Collection | undefined> {
  const row = await sql.get<Row>(`SELECT ${columns} FROM collections WHERE profile_id = ? AND slug = ?`, [profileId, slug.toLowerCase()]);
  return row && withChannels(sql, row);
}

export async function byProfile(sql: Sql, profileId: string): Promise<Collection[]> {
  const rows = await sql.all<Row>(`SELECT ${columns} FROM collections WHERE profile_id = ? ORDER BY ${bytewise(sql, 'slug')}`, [profileId]);
  return Promise.all(rows.map((r) => withChannels(sql, r)));
}
