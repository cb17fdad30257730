import fs from 'node:fs';
import os from 'node:os';

/** A lease as another process sees it: its holder's last heartbeat, and where the holder runs. */
export type Lease = { heartbeatAt: number; host?: string; pid?: number };

/** How long a holder whose process still runs on this machine may be silent before it counts as hung. */
const hungMs = 10 * 60_000;

/**
 * Whether a lease (a sync's on a channel, a rebuild's on the store) has run out. On this machine the holder's process
 * is asked: gone (a `kill -9`, a crash, a closed terminal), the lease ends at once; still running, only a long silence
 * ends it, since a busy process (a long synchronous step) misses beats without being dead. A holder elsewhere is
 * judged by its heartbeat.
 */
export function leaseExpired(lease: Lease, options: { now: number; staleMs: number }): boolean {
  const silent = options.now - lease.heartbeatAt;
  if (lease.host === processHost && lease.pid !== undefined) return processGone(lease.pid) || silent > Math.max(hungMs, options.staleMs);
  return silent > options.staleMs;
}

/**
 * Where this process's pid means something: the host name, and on Linux the pid namespace, so a container that
 * shares the host's name (host networking) does not read another's pids as its own.
 */
export const processHost = ((): string => {
  try {
    return `${os.hostname()}/${fs.readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return os.hostname();
  }
})();

function processGone(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: the pid is alive, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

