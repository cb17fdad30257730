import type { Sql } from './Sql.js';

/**
 * The serving processes on this database and their leases: each renews its row while it lives, and one whose row was
 * not renewed in time is gone. What such a process left part-way (a charge, a payment) is then anyone's to settle.
 */

export type Instance = { id: string; name: string; startedAt: number; seenAt: number };

/** Registers a process, or renews it: true when its row was there (false: it was new, or another found it gone). */
export async function renew(sql: Sql, instance: { id: string; name: string; now: number }): Promise<boolean> {
  const renewed = await sql.run('UPDATE instances SET seen_at = ? WHERE id = ?', [instance.now, instance.id]);
  if (renewed === 1) return true;
  await sql.run('INSERT INTO instances (id, name, started_at, seen_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at', [
    instance.id,
    instance.name,
    instance.now,
    instance.now,
  ]);
  return false;
}

/** Removes a process that is leaving: what it leaves part-way is anyone's at once. */
export async function leave(sql: Sql, id: string): Promise<void> {
  await sql.run('DELETE FROM instances WHERE id = ?', [id]);
}

/**
 * Claims the processes last seen before `before`, `except` the caller's own: their rows are removed and their ids
 * returned, to the one caller whose statement removed them (two processes claiming at once claim each once). Run it in
 * the transaction that settles what they left, so the claim and the settling land together.
 */
export async function expire(sql: Sql, before: number, options: { except?: string | undefined } = {}): Promise<string[]> {
  return (await sql.all<{ id: string }>('DELETE FROM instances WHERE seen_at < ? AND id <> ? RETURNING id', [before, options.except ?? ''])).map((r) => r.id);
}

/** The processes registered now, oldest first. */
export async function list(sql: Sql): Promise<Instance[]> {
  return sql.all<Instance>('SELECT id, name, started_at AS startedAt, seen_at AS seenAt FROM instances ORDER BY started_at, id');
}
