import { Writable } from 'node:stream';
import { main } from '../../src/cli/Cli.js';
import * as Output from '../../src/cli/Output.js';

/** Runs the CLI in-process with extra environment variables (restored after) and captures what it prints. */
export async function run(env: Record<string, string | undefined>, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) => new Writable({ write: (chunk, _encoding, done) => (append(String(chunk)), done()) });
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const code = await main(argv, Output.create({ stdout: sink((s) => (stdout += s)), stderr: sink((s) => (stderr += s)) }));
    return { code, stdout, stderr };
  } finally {
    process.env = saved;
  }
}

/** A profile and one channel on it, made through the CLI as an operator would; fails the test when either fails. */
export async function profileWithChannel(env: Record<string, string | undefined>, options: { slug: string; kind: string; channelId: string; label?: string }): Promise<void> {
  for (const argv of [
    ['profiles', 'create', options.slug, '--name', options.slug],
    ['channels', 'create', '--profile', options.slug, '--kind', options.kind, '--label', options.label ?? options.channelId, '--id', options.channelId],
  ]) {
    const result = await run(env, ...argv);
    if (result.code !== 0) throw new Error(`${argv.join(' ')} failed: ${result.stderr}`);
  }
}
