import type { Sql } from './Sql.js';

/**
 * Leases on jobs one process at a time may run on a store. A claim makes sure the job's row exists (a free one, with
 * no holder, when none did), reads it under the row's lock, and takes it when it is free or its holder is gone (the
 * caller judges, as for a sync's lease on a channel). The row is made first because a lock on a row that is not
 * there locks nothing: two claimers of a missing row would both take it.
 */

/** Who holds a job, and since when they last said they are alive. */
export type JobLease = { name: string; holder: string; host: string; pid: number; startedAt: number; heartbeatAt: number };

/** Takes the lease on `name` for `holder` unless a live holder has it; returns that holder's lease when it does. */
export async function claim(
  sql: Sql,
  input: { name: string; holder: string; host: string; pid: number; now: number; expired: (lease: JobLease) => boolean },
): Promise<{ claimed: true } | { claimed: false; lease: JobLease }> {
  return sql.transaction(async (tx) => {
    await tx.run(`INSERT INTO job_leases (name, holder, host, pid, started_at, heartbeat_at) VALUES (?, '', '', 0, 0, 0) ON CONFLICT (name) DO NOTHING`, [input.name]);
    const lease = await tx.get<JobLease>(
      `SELECT name, holder, host, pid, started_at AS startedAt, heartbeat_at AS heartbeatAt FROM job_leases WHERE name = ?${tx.dialect === 'postgres' ? ' FOR UPDATE' : ''}`,
      [input.name],
    );
    if (lease!.holder !== '' && lease!.holder !== input.holder && !input.expired(lease!)) return { claimed: false, lease: lease! };
    await tx.run('UPDATE job_leases SET holder = ?, host = ?, pid = ?, started_at = ?, heartbeat_at = ? WHERE name = ?', [
      input.holder,
      input.host,
      input.pid,
      input.now,
      input.now,
      input.name,
    ]);
    return { claimed: true };
  });
}

/** Says the holder is alive; false when the lease was taken over. */
export async function beat(sql: Sql, name: string, holder: string, now: number): Promise<boolean> {
  return (await sql.run('UPDATE job_leases SET heartbeat_at = ? WHERE name = ? AND holder = ?', [now, name, holder])) > 0;
}

/** Ends the holder's lease, leaving the job free (a lease taken over meanwhile is the new holder's and stays). */
export async function release(sql: Sql, name: string, holder: string): Promise<void> {
  await sql.run("UPDATE job_leases SET holder = '', heartbeat_at = 0 WHERE name = ? AND holder = ?", [name, holder]);
}
