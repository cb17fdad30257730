import { type ChildProcess, spawn } from 'node:child_process';
import { cli } from './Transports.js';

/** A `profile-edge serve` process: where it listens, the process, how it ended, and what it logged so far. */
export type Served = { url: string; child: ChildProcess; pid: number; exited: Promise<NodeJS.Signals | number | null>; log: () => string };

/**
 * Starts `profile-edge serve` with exactly `env` (nothing of this process's environment but PATH) on a free port;
 * resolves once it listens. `children` collects the process, for the caller to kill after the file.
 */
export async function serve(env: Record<string, string>, children: ChildProcess[]): Promise<Served> {
  const child = spawn(cli.command, [...cli.args, 'serve'], { env: { PATH: process.env.PATH ?? '', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening on (http:\/\/\S+)/.exec(d.toString());
      if (m) resolve(m[1]!);
    });
    void exited.then((how) => reject(new Error(`serve exited (${how}): ${log}`)));
  });
  return { url, child, pid: child.pid!, exited, log: () => log };
}
