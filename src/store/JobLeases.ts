import type { Sql } from './Sql.js';

/**
 * Leases on jobs one process at a time may run on a store. A claim reads the row under the transaction's lock and
 * takes it when it is free or its holder is gone (the caller judges, as for a sync's lease on a channel).
 */

/** Who holds a job, and since when they last said they are alive. */
export type JobLease = { name: string; holder: string; host: string; pid: number; startedAt: number; heartbeatAt: number };

/** Takes the lease on `name` for `holder` unless a live holder has it; returns that holder's lease when it does. */
export async function claim(
  sql: Sql,
  input: { name: string; holder: string; host: string; pid: number; now: number; expired: (lease: JobLease) => boolean },
): Promise<{ claimed: true } | { claimed: false; lease: JobLease }> {
  return sql.transaction(async (tx) => {
    const lease = await tx.get<JobLease>(
      `SELECT name, holder, host, pid, started_at AS startedAt, heartbeat_at AS heartbeatAt FROM job_leases WHERE name = ?${tx.dialect === 'postgres' ? ' FOR UPDATE' : ''}`,
      [input.name],
    );
    if (lease && lease.holder !== input.holder && !input.expired(lease)) return { claimed: false, lease };
    await tx.run(
      `INSERT INTO job_leases (name, holder, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, host = excluded.host, pid = excluded.pid, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
      [input.name, input.holder, input.host, input.pid, input.now, input.now],
    );
    return { claimed: true };
  });
}

/** Says the holder is alive; false when the lease was taken over. */
export async function beat(sql: Sql, name: string, holder: string, now: number): Promise<boolean> {
  return (await sql.run('UPDATE job_leases SET heartbeat_at = ? WHERE name = ? AND holder = ?', [now, name, holder])) > 0;
}

/** Ends the holder's lease (a lease taken over meanwhile is the new holder's and stays). */
export async function release(sql: Sql, name: string, holder: string): Promise<void> {
  await sql.run('DELETE FROM job_leases WHERE name = ? AND holder = ?', [name, holder]);
}
