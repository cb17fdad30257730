import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A private PostgreSQL cluster in a temporary directory on a free port, for tests that stop the database under a
 * running server: the shared one at 5432 is never touched. Run as the `postgres` user (initdb refuses root).
 */
export type Cluster = {
  url(database: string): string;
  createDatabase(name: string): void;
  stop(): void;
  start(): void;
  /** Freezes every process of the cluster (SIGSTOP): connections stay open and nothing answers, as a hung server. */
  freeze(): void;
  thaw(): void;
  destroy(): void;
};

const bin = '/usr/lib/postgresql/15/bin';

/** Whether a private cluster can be made here, and why not. */
export function unavailable(): string | undefined {
  if (!fs.existsSync(path.join(bin, 'initdb'))) return `no PostgreSQL 15 binaries at ${bin} (apt-get install postgresql-15)`;
  try {
    execFileSync('id', ['postgres'], { stdio: 'ignore' });
  } catch {
    return 'no postgres user to run a private cluster as';
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** As the postgres user when this process is root, else as itself. */
function run(command: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, command), ...args]] : [path.join(bin, command), args];
  execFileSync(file, argv, { stdio: 'pipe' });
}

/** Sends `name` to the cluster's postmaster and every process it started. */
function signal(data: string, name: 'STOP' | 'CONT'): void {
  const postmaster = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  for (const pid of [postmaster, ...children]) process.kill(pid, `SIG${name}`);
}

/** Makes and starts a cluster with trust authentication on 127.0.0.1 and a free port. */
export async function create(): Promise<Cluster> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-cluster-'));
  const data = path.join(directory, 'data');
  fs.chmodSync(directory, 0o777);
  const port = await freePort();
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = `-p ${port} -k ${directory} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = () => run('pg_ctl', ['-D', data, '-o', options, '-l', path.join(directory, 'log'), '-w', 'start']);
  const stop = () => run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
  start();
  return {
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    createDatabase: (name) => run('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name]),
    stop,
    start,
    freeze: () => signal(data, 'STOP'),
    thaw: () => signal(data, 'CONT'),
    destroy() {
      try {
        signal(data, 'CONT');
      } catch {
        // Not running.
      }
      try {
        stop();
      } catch {
        // Already stopped.
      }
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
