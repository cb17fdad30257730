import * as Ids from './Ids.js';
import { ServiceError } from '../errors/ServiceError.js';
import { bytewise, Conflict, type Sql } from './Sql.js';
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
export async function create(sql: Sql, input: NewChannel): Promise<StoredChannel> {
  const id = input.id ?? Ids.random('ch');
  if (!idPattern.test(id)) throw new ServiceError('invalid_request', `channel id "${id}" must match ${idPattern}`);
  if (input.label.trim() === '') throw new ServiceError('invalid_request', 'a channel needs a label');
  if (!Number.isFinite(input.ratePerMillionTokens) || input.ratePerMillionTokens < 0) {
    throw new ServiceError('invalid_request', 'ratePerMillionTokens must be a number >= 0');
  }
  try {
    await sql.run(
      `INSERT INTO channels (id, profile_id, kind, label, access_level, rate_per_million_tokens, status, source_url, settings, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
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
      ],
    );
  } catch (error) {
    if (error instanceof Conflict) throw new ServiceError('conflict', `channel "${id}" already exists`);
    throw error;
  }
  return (await find(sql, id))!;
}

export async function find(sql: Sql, id: string): Promise<StoredChannel | undefined> {
  const row = await sql.get<Row>(`SELECT ${columns} FROM channels WHERE id = ?`, [id]);
  return row && toChannel(row);
}

export async function get(sql: Sql, id: string): Promise<StoredChannel> {
  const channel = await find(sql, id);
  if (!channel) throw new ServiceError('not_found', `no channel "${id}"`);
  return channel;
}

/** A channel read inside a transaction that will write it: on PostgreSQL the row stays locked until the end. */
async function locked(tx: Sql, id: string): Promise<StoredChannel> {
  const row = await tx.get<Row>(`SELECT ${columns} FROM channels WHERE id = ?${tx.dialect === 'postgres' ? ' FOR UPDATE' : ''}`, [id]);
  if (!row) throw new ServiceError('not_found', `no channel "${id}"`);
  return toChannel(row);
}

/** The channels of a profile in creation order. */
export async function byProfile(sql: Sql, profileId: string): Promise<StoredChannel[]> {
  return (await sql.all<Row>(`SELECT ${columns} FROM channels WHERE profile_id = ? ORDER BY created_at, ${bytewise(sql, 'id')}`, [profileId])).map(toChannel);
}

/** Every channel, grouped by profile id: one query for scopes that span many profiles. */
export async function byProfiles(sql: Sql): Promise<Map<string, StoredChannel[]>> {
  const grouped = new Map<string, StoredChannel[]>();
  for (const row of await sql.all<Row>(`SELECT ${columns} FROM channels ORDER BY created_at, ${bytewise(sql, 'id')}`)) {
    const channel = toChannel(row);
    grouped.set(channel.profileId, [...(grouped.get(channel.profileId) ?? []), channel]);
  }
  return grouped;
}

/** Who may read each channel's chunks, as the search index counts them: its status and access, its profile's visibility. */
export async function audiences(sql: Sql): Promise<{ id: string; profileId: string; status: string; accessLevel: string; visibility: string }[]> {
  return sql.all(
    `SELECT ch.id, ch.profile_id AS profileId, ch.status, ch.access_level AS accessLevel, p.visibility
     FROM channels ch JOIN profiles p ON p.id = ch.profile_id ORDER BY ch.id`,
  );
}

/** Channels that sync from a source and are live (or held by a sync that may have died), with when they last synced or failed. */
export async function syncable(sql: Sql): Promise<{ id: string; kind: ChannelKind; syncedAt: number | null; failedAt: number | null }[]> {
  return sql.all(
    `SELECT id, kind, last_synced_at AS syncedAt, last_error_at AS failedAt FROM channels WHERE status IN ('live', 'syncing') AND source_url IS NOT NULL ORDER BY id`,
  );
}

/** How many channels exist. */
export async function count(sql: Sql): Promise<number> {
  return (await sql.get<{ n: number }>('SELECT count(*) AS n FROM channels'))!.n;
}

/** Changes what an operator may change about a channel. */
export async function update(
  sql: Sql,
  id: string,
  changes: { label?: string; accessLevel?: AccessLevel; ratePerMillionTokens?: number; status?: ChannelStatus },
): Promise<StoredChannel> {
  return sql.transaction(async (tx) => {
    const current = await locked(tx, id);
    const next = { ...current, ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) };
    if (!Number.isFinite(next.ratePerMillionTokens) || next.ratePerMillionTokens < 0) {
      throw new ServiceError('invalid_request', 'ratePerMillionTokens must be a number >= 0');
    }
    await tx.run('UPDATE channels SET label = ?, access_level = ?, rate_per_million_tokens = ?, status = ? WHERE id = ?', [
      next.label,
      next.accessLevel,
      next.ratePerMillionTokens,
      next.status,
      id,
    ]);
    return get(tx, id);
  });
}

/** Points a channel at its source (a feed, a channel page, a workspace) or clears it. */
export async function setSource(sql: Sql, id: string, source: { sourceUrl?: string | null; settings?: Record<string, unknown> }): Promise<StoredChannel> {
  return sql.transaction(async (tx) => {
    const current = await locked(tx, id);
    const sourceUrl = source.sourceUrl === undefined ? current.sourceUrl : source.sourceUrl;
    // A new source starts afresh: the old one's validators and listing say nothing about it.
    const { source: _old, ...kept } = current.syncState;
    const changed = sourceUrl !== current.sourceUrl;
    await tx.run('UPDATE channels SET source_url = ?, settings = ?, sync_state = ? WHERE id = ?', [
      sourceUrl,
      JSON.stringify(source.settings ?? current.settings),
      JSON.stringify(changed ? kept : current.syncState),
      id,
    ]);
    if (changed) await tx.run(`DELETE FROM channel_listings WHERE channel_id = ? AND origin = 'source'`, [id]);
    return get(tx, id);
  });
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
 * Marks a live channel as syncing and returns the hold, or undefined: paused, held by another sync, or (with `due`) no
 * longer due, read under the claim's lock (a scheduler on another instance synced it since this one listed what is
 * due). A hold is a lease, taken over (and the sync resumed) once `expired` says so of it; the new one records where
 * this process runs.
 */
export async function claimSync(
  sql: Sql,
  id: string,
  options: { now: number; expired: (lease: Lease) => boolean; process?: { host: string; pid: number }; due?: (channel: StoredChannel) => boolean },
): Promise<Hold | undefined> {
  return sql.transaction(async (tx) => {
    const channel = await locked(tx, id);
    const { host, pid, heartbeatAt, ...kept } = channel.syncState as SyncHold & Record<string, unknown>;
    const stale = channel.status === 'syncing' && options.expired({ heartbeatAt: heartbeatAt ?? 0, host, pid });
    if (channel.status !== 'live' && !stale) return undefined;
    if (options.due && !stale && !options.due(channel)) return undefined;
    const holder = Ids.random('sync');
    const state = { ...kept, holder, syncingSince: options.now, heartbeatAt: options.now, ...options.process };
    await tx.run(`UPDATE channels SET status = 'syncing', sync_state = ? WHERE id = ?`, [JSON.stringify(state), id]);
    return { channel: await get(tx, id), holder };
  });
}

const heartbeats = {
  sqlite: `UPDATE channels SET sync_state = json_set(sync_state, '$.heartbeatAt', ?) WHERE id = ? AND status = 'syncing' AND json_extract(sync_state, '$.holder') = ?`,
  postgres: `UPDATE channels SET sync_state = (sync_state::jsonb || jsonb_build_object('heartbeatAt', CAST(? AS BIGINT)))::text
    WHERE id = ? AND status = 'syncing' AND sync_state::jsonb ->> 'holder' = ?`,
};

/** Tells other processes the sync holding a channel is alive; false when the hold was taken over. */
export async function heartbeat(sql: Sql, id: string, holder: string, now: number): Promise<boolean> {
  return (await sql.run(heartbeats[sql.dialect], [now, id, holder])) > 0;
}

/**
 * Ends a sync, if this sync still holds the channel: it is live again (unless an operator paused it meanwhile) and
 * keeps the connector's state and the ids it listed.
 * - A success clears the last error; a success with a `warning` (a partial listing) records it but still counts as a
 *   sync.
 * - A failure records its reason with its time, and keeps the previous state and content.
 * - An import (a file, not the source) leaves the sync record alone; its listing is kept apart from the source's.
 */
export async function finishSync(
  sql: Sql,
  id: string,
  holder: string,
  outcome: { now: number; source?: Record<string, unknown>; listed?: string[]; error?: string; warning?: string; import?: boolean; empty?: Record<string, string> },
): Promise<StoredChannel> {
  return sql.transaction(async (tx) => {
    const channel = await locked(tx, id);
    const { holder: current, syncingSince: _since, heartbeatAt: _beat, host: _host, pid: _pid, ...rest } = channel.syncState as SyncHold & Record<string, unknown>;
    if (current !== holder) return channel;
    const state = { ...rest, ...(outcome.source !== undefined && { source: outcome.source }), ...(outcome.empty !== undefined && { empty: outcome.empty }) };
    const status = channel.status === 'syncing' ? 'live' : channel.status;
    if (outcome.listed !== undefined) {
      await tx.run(
        `INSERT INTO channel_listings (channel_id, origin, ids, listed_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (channel_id, origin) DO UPDATE SET ids = excluded.ids, listed_at = excluded.listed_at`,
        [id, outcome.import ? 'import' : 'source', JSON.stringify(outcome.listed), outcome.now],
      );
    }
    if (outcome.import) {
      await tx.run('UPDATE channels SET status = ?, sync_state = ? WHERE id = ?', [status, JSON.stringify(state), id]);
    } else if (outcome.error === undefined) {
      await tx.run('UPDATE channels SET status = ?, sync_state = ?, last_synced_at = ?, last_error = ?, last_error_at = ? WHERE id = ?', [
        status,
        JSON.stringify(state),
        outcome.now,
        outcome.warning ?? null,
        outcome.warning === undefined ? null : outcome.now,
        id,
      ]);
    } else {
      await tx.run('UPDATE channels SET status = ?, sync_state = ?, last_error = ?, last_error_at = ? WHERE id = ?', [status, JSON.stringify(state), outcome.error, outcome.now, id]);
    }
    return get(tx, id);
  });
}

/** The ids a channel's last listing of this origin gave, in its order. */
export async function lastListed(sql: Sql, id: string, origin: ListingOrigin): Promise<string[] | undefined> {
  const row = await sql.get<{ ids: string }>('SELECT ids FROM channel_listings WHERE channel_id = ? AND origin = ?', [id, origin]);
  return row === undefined ? undefined : (JSON.parse(row.ids) as string[]);
}
