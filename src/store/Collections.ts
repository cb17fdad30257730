import type { Database } from './Database.js';
import * as Ids from './Ids.js';
import { ServiceError } from '../errors/ServiceError.js';
import { handlePattern } from './Profiles.js';

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

function withChannels(db: Database, row: Row): Collection {
  const channelIds = db.prepare('SELECT channel_id FROM collection_channels WHERE collection_id = ? ORDER BY channel_id').pluck().all(row.id) as string[];
  return { ...row, channelIds };
}

/** Creates a collection on a profile from some of that profile's channels. */
export function create(
  db: Database,
  input: { profileId: string; slug: string; name: string; description?: string; channelIds: string[] },
): Collection {
  if (!handlePattern.test(input.slug)) {
    throw new ServiceError('invalid_request', `"${input.slug}" is not a valid collection slug: use lowercase letters, digits and hyphens`);
  }
  if (find(db, input.profileId, input.slug)) throw new ServiceError('conflict', `collection "${input.slug}" already exists`);
  const id = Ids.random('coll');
  db.transaction(() => {
    db.prepare('INSERT INTO collections (id, profile_id, slug, name, description, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
      id,
      input.profileId,
      input.slug,
      input.name,
      input.description ?? '',
      Date.now(),
    );
    for (const channelId of input.channelIds) addChannel(db, id, channelId);
  })();
  return withChannels(db, db.prepare(`SELECT ${columns} FROM collections WHERE id = ?`).get(id) as Row);
}

/** Adds one of the creator's own channels to a collection. */
export function addChannel(db: Database, collectionId: string, channelId: string): void {
  const ok = db
    .prepare(
      `SELECT 1 FROM collections c JOIN channels ch ON ch.profile_id = c.profile_id WHERE c.id = ? AND ch.id = ?`,
    )
    .get(collectionId, channelId);
  if (!ok) throw new ServiceError('invalid_request', `channel "${channelId}" is not a channel of the collection's profile`);
  db.prepare('INSERT OR IGNORE INTO collection_channels (collection_id, channel_id) VALUES (?, ?)').run(collectionId, channelId);
}

export function find(db: Database, profileId: string, slug: string): Collection | undefined {
  const row = db.prepare(`SELECT ${columns} FROM collections WHERE profile_id = ? AND slug = ?`).get(profileId, slug.toLowerCase()) as Row | undefined;
  return row && withChannels(db, row);
}

export function byProfile(db: Database, profileId: string): Collection[] {
  return (db.prepare(`SELECT ${columns} FROM collections WHERE profile_id = ? ORDER BY slug`).all(profileId) as Row[]).map((r) => withChannels(db, r));
}
