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

/** Points a channel at its source (a feed, a channel page, a workspace) or clears it. */
export function setSource(db: Database, id: string, source: { sourceUrl?: string | null; settings?: Record<string, unknown> }): StoredChannel {
  const current = get(db, id);
  const sourceUrl = source.sourceUrl === undefined ? current.sourceUrl : source.sourceUrl;
  // A new source starts afresh: the old one's validators and listing say nothing about it.
  const { source: _old, ...kept } = current.syncState;
  const changed = sourceUrl !== current.sourceUrl;
  db.transaction(() => {
    db.prepare('UPDATE channels SET source_url = ?, settings = ?, sync_state = ? WHERE id = ?').run(
      sourceUrl, JSON.stringify(source.settings ?? current.settings), JSON.stringify(changed ? kept : current.syncState), id);
    if (changed) db.prepare(`DELETE FROM channel_listings WHERE channel_id = ? AND origin = 'source'`).run(id);
  })();
  return get(db, id);
}

/** What a sync keeps between runs beside the connector's own state: who holds the channel, and its last listing. */
type SyncHold = { holder?: string; syncingSince?: number; heartbeatAt?: number; host?: string; pid?: number };

/** A sync's lease on a channel as another sync sees it: its last heartbeat, and where its process runs. */
export type Lease = { heartbeatAt: number; host?: string; pid?: number };

/** Where a listing came from: the channel's source, or an imported file. Each keeps its own last listing. */
export type ListingOrigin = 'source' | 'import';

/** A sync's hold on a channel: the token that heartbeats and the finish must show. */
export type Hold = { channel: StoredChannel; holder: string };

/**
 * Marks a live channel as syncing and returns the hold, or undefined: paused, or held by another sync. A hold is a
 * lease, taken over (and the sync resumed) once `expired` says so of it; the new one records where this process runs.
 */
export function claimSync(
  db: Database,
  id: string,
  options: { now: number; expired: (lease: Lease) => boolean; process?: { host: string; pid: number } },
): Hold | undefined {
  return db.transaction(() => {
    const channel = get(db, id);
    const { host, pid, heartbeatAt, ...kept } = channel.syncState as SyncHold & Record<string, unknown>;
    const stale = channel.status === 'syncing' && options.expired({ heartbeatAt: heartbeatAt ?? 0, host, pid });
    if (channel.status !== 'live' && !stale) return undefined;
    const holder = Ids.random('sync');
    const state = { ...kept, holder, syncingSince: options.now, heartbeatAt: options.now, ...options.process };
    db.prepare(`UPDATE channels SET status = 'syncing', sync_state = ? WHERE id = ?`).run(JSON.stringify(state), id);
    return { channel: get(db, id), holder };
  }).immediate();
}

/** Tells other processes the sync holding a channel is alive; false when the hold was taken over. */
export function heartbeat(db: Database, id: string, holder: string, now: number): boolean {
  return (
    db
      .prepare(`UPDATE channels SET sync_state = json_set(sync_state, '$.heartbeatAt', ?) WHERE id = ? AND status = 'syncing' AND json_extract(sync_state, '$.holder') = ?`)
      .run(now, id, holder).changes > 0
  );
}

/**
 * Ends a sync, if this sync still holds the channel: it is live again (unless an operator paused it meanwhile) and
 * keeps the connector's state and the ids it listed.
 * - A success clears the last error; a success with a `warning` (a partial listing) records it but still counts as a
 *   sync.
 * - A failure records its reason with its time, and keeps the previous state and content.
 * - An import (a file, not the source) leaves the sync record alone; its listing is kept apart from the source's.
 */
export function finishSync(
  db: Database,
  id: string,
  holder: string,
  outcome: { now: number; source?: Record<string, unknown>; listed?: string[]; error?: string; warning?: string; import?: boolean; empty?: Record<string, string> },
): StoredChannel {
  db.transaction(() => {
    const channel = get(db, id);
    const { holder: current, syncingSince: _since, heartbeatAt: _beat, host: _host, pid: _pid, ...rest } = channel.syncState as SyncHold & Record<string, unknown>;
    if (current !== holder) return;
    const state = { ...rest, ...(outcome.source !== undefined && { source: outcome.source }), ...(outcome.empty !== undefined && { empty: outcome.empty }) };
    const status = channel.status === 'syncing' ? 'live' : channel.status;
    if (outcome.listed !== undefined) {
      db.prepare(
        `INSERT INTO channel_listings (channel_id, origin, ids, listed_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (channel_id, origin) DO UPDATE SET ids = excluded.ids, listed_at = excluded.listed_at`,
      ).run(id, outcome.import ? 'import' : 'source', JSON.stringify(outcome.listed), outcome.now);
    }
    if (outcome.import) {
      db.prepare('UPDATE channels SET status = ?, sync_state = ? WHERE id = ?').run(status, JSON.stringify(state), id);
    } else if (outcome.error === undefined) {
      db.prepare('UPDATE channels SET status = ?, sync_state = ?, last_synced_at = ?, last_error = ?, last_error_at = ? WHERE id = ?').run(
        status, JSON.stringify(state), outcome.now, outcome.warning ?? null, outcome.warning === undefined ? null : outcome.now, id);
    } else {
      db.prepare('UPDATE channels SET status = ?, sync_state = ?, last_error = ?, last_error_at = ? WHERE id = ?').run(
        status, JSON.stringify(state), outcome.error, outcome.now, id);
    }
  }).immediate();
  return get(db, id);
}

/** The ids a channel's last listing of this origin gave, in its order. */
export function lastListed(db: Database, id: string, origin: ListingOrigin): string[] | undefined {
  const raw = db.prepare('SELECT ids FROM channel_listings WHERE channel_id = ? AND origin = ?').pluck().get(id, origin) as string | undefined;
  return raw === undefined ? undefined : (JSON.parse(raw) as string[]);
}
