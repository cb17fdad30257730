import type { Database } from './Database.js';
import * as Ids from './Ids.js';
import { ServiceError } from '../errors/ServiceError.js';
import type { AccessLevel, ChannelKind, ChannelStatus } from '../contract/Channel.js';

/** A channel as stored: the contract's Channel plus its owner, source settings and sync state. */
export type StoredChannel = {
  id: string;
  profileId: string;
  kind: ChannelKind;
  label: string;
  accessLevel: AccessLevel;
  ratePerMillionTokens: number;
  status: ChannelStatus;
  sourceUrl: string | null;
  settings: Record<string, unknown>;
  syncState: Record<string, unknown>;
  lastSyncedAt: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  createdAt: number;
};

export const idPattern = /^ch_[a-z0-9_]{1,60}$/;

const columns = `id, profile_id AS profileId, kind, label, access_level AS accessLevel, rate_per_million_tokens AS ratePerMillionTokens,
  status, source_url AS sourceUrl, settings, sync_state AS syncState, last_synced_at AS lastSyncedAt, last_error AS lastError,
  last_error_at AS lastErrorAt, created_at AS createdAt`;

type Row = Omit<StoredChannel, 'settings' | 'syncState'> & { settings: string; syncState: string };

const toChannel = (row: Row): StoredChannel => ({ ...row, settings: JSON.parse(row.settings), syncState: JSON.parse(row.syncState) });

export type NewChannel = {
  id?: string | undefined;
  profileId: string;
  kind: ChannelKind;
  label: string;
  accessLevel: AccessLevel;
  ratePerMillionTokens: number;
  status?: ChannelStatus | undefined;
  sourceUrl?: string | undefined;
  settings?: Record<string, unknown> | undefined;
};

/** Creates a channel on a profile. */
export function create(db: Database, input: NewChannel): StoredChannel {
  const id = input.id ?? Ids.random('ch');
  if (!idPattern.test(id)) throw new ServiceError('invalid_request', `channel id "${id}" must match ${idPattern}`);
  if (find(db, id)) throw new ServiceError('conflict', `channel "${id}" already exists`);
  if (input.label.trim() === '') throw new ServiceError('invalid_request', 'a channel needs a label');
  if (!Number.isFinite(input.ratePerMillionTokens) || input.ratePerMillionTokens < 0) {
    throw new ServiceError('invalid_request', 'ratePerMillionTokens must be a number >= 0');
  }
  db.prepare(
    `INSERT INTO channels (id, profile_id, kind, label, access_level, rate_per_million_tokens, status, source_url, settings, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    id,
    input.profileId,
    input.kind,
    input.label.trim(),
    input.accessLevel,
    input.ratePerMillionTokens,
    input.status ?? 'live',
    input.sourceUrl ?? null,
    JSON.stringify(input.settings ?? {}),
    Date.now(),
  );
  return find(db, id)!;
}

export function find(db: Database, id: string): StoredChannel | undefined {
  const row = db.prepare(`SELECT ${columns} FROM channels WHERE id = ?`).get(id) as Row | undefined;
  return row && toChannel(row);
}

export function get(db: Database, id: string): StoredChannel {
  const channel = find(db, id);
  if (!channel) throw new ServiceError('not_found', `no channel "${id}"`);
  return channel;
}

/** The channels of a profile in creation order. */
export function byProfile(db: Database, profileId: string): StoredChannel[] {
  return (db.prepare(`SELECT ${columns} FROM channels WHERE profile_id = ? ORDER BY created_at, id`).all(profileId) as Row[]).map(toChannel);
}

/** Every channel, grouped by profile id: one query for scopes that span many profiles. */
export function byProfiles(db: Database): Map<string, StoredChannel[]> {
  const grouped = new Map<string, StoredChannel[]>();
  for (const row of db.prepare(`SELECT ${columns} FROM channels ORDER BY created_at, id`).all() as Row[]) {
    const channel = toChannel(row);
    grouped.set(channel.profileId, [...(grouped.get(channel.profileId) ?? []), channel]);
  }
  return grouped;
}

/** How many channels exist. */
export function count(db: Database): number {
  return db.prepare('SELECT count(*) FROM channels').pluck().get() as number;
}

/** Changes what an operator may change about a channel. */
export function update(
  db: Database,
  id: string,
  changes: { label?: string; accessLevel?: AccessLevel; ratePerMillionTokens?: number; status?: ChannelStatus },
): StoredChannel {
  const current = get(db, id);
  const next = { ...current, ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) };
  if (!Number.isFinite(next.ratePerMillionTokens) || next.ratePerMillionTokens < 0) {
    throw new ServiceError('invalid_request', 'ratePerMillionTokens must be a number >= 0');
  }
  db.prepare('UPDATE channels SET label = ?, access_level = ?, rate_per_million_tokens = ?, status = ? WHERE id = ?').run(
    next.label,
    next.accessLevel,
    next.ratePerMillionTokens,
    next.status,
    id,
  );
  return get(db, id);
}
