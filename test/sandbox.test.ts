import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { projectRoot } from '../src/config/Config.js';
import * as Readme from './support/Readme.js';

/**
 * The README's three commands that pay for an answer offline, run as written: the sandbox, a server pointed at it,
 * and `ask` paying with the sandbox's wallet; then its third-party client, `pay.mjs`, paying both rails with the
 * mppx client and `@x402/fetch`. Only the port and the database differ, and `npx profile-edge` runs the project's
 * own bin (npx would look for the package elsewhere outside the project directory). The work directory stands in for
 * the project directory: its `bin` and `node_modules` are the project's.
 */

const readme = fs.readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
const blocks = Readme.blocks(readme);
const block = blocks.find((b) => b.language === 'sh' && b.text.includes('profile-edge sandbox'))!;
const payCommand = blocks.find((b) => b.language === 'sh' && b.text.includes('pay.mjs'))!;
const payScript = blocks.find((b) => b.language === 'js' && b.text.includes('wrapFetchWithPayment'))!;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-sandbox-'));
for (const linked of ['bin', 'node_modules']) fs.symlinkSync(path.join(projectRoot, linked), path.join(work, linked));
const children: ChildProcess[] = [];

afterAll(() => {
  // Each command runs in its own process group, so the shell and what it started stop together.
  for (const child of children) if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
  fs.rmSync(work, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Runs a command line from the block in the work directory; resolves when `ready` appears, or with its exit. */
function run(line: string, port: number, ready?: RegExp): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const command = line.replace('npx profile-edge', `node ${path.join(projectRoot, 'bin', 'profile-edge.mjs')}`).replaceAll(':3001', `:${port}`).replace('--port 3001', `--port ${port}`);
  const child = spawn('sh', ['-c', command], { cwd: work, detached: true, env: { PATH: process.env.PATH ?? '', DATABASE_PATH: path.join(work, 'sandbox-test.db'), SYNC_SCHEDULE: 'false' } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  return new Promise((resolve) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (ready?.test(stdout)) resolve({ code: null, stdout, stderr });
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

test('behavior: the README pays for an answer offline in three commands, and from a client of its own', async () => {
  expect(block.skip).toMatch(/test\/sandbox.test.ts/);
  const lines = block.text.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
  expect(lines).toHaveLength(3);
  const port = await freePort();
  const sandbox = await run(lines[0]!, port, /sandbox ready/);
  expect(sandbox.code, sandbox.stderr).toBeNull();
  expect((fs.statSync(path.join(work, 'sandbox-wallet.key')).mode & 0o777).toString(8)).toBe('600');
  const server = await run(lines[1]!, port, /listening on/);
  expect(server.code, server.stderr).toBeNull();
  const asked = await run(lines[2]!, port);
  expect(asked.code, asked.stderr).toBe(0);
  expect(asked.stdout).toMatch(/Sources:\n {2}\[1\] /);
  expect(asked.stdout).toMatch(/paid on tempo: transaction 0x[0-9a-f]{64}/);
  expect(asked.stdout).toMatch(/receipt: \{"method":"tempo".*"status":"success"/);
  // The key is never printed.
  const key = fs.readFileSync(path.join(work, 'sandbox-wallet.key'), 'utf8').trim();
  expect(sandbox.stdout + asked.stdout + asked.stderr).not.toContain(key);

  // A client of one's own, as the README shows it: the mppx client and @x402/fetch pay the same server.
  expect(payCommand.skip).toMatch(/test\/sandbox.test.ts/);
  const payLines = payCommand.text.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
  expect(payLines).toEqual(['node --env-file=sandbox.env pay.mjs']);
  fs.writeFileSync(path.join(work, 'pay.mjs'), payScript.text.replaceAll(':3001', `:${port}`));
  const paid = await run(payLines[0]!, port);
  expect(paid.code, paid.stderr).toBe(0);
  expect(paid.stdout).toMatch(/^tempo: 200 onchain \{"method":"tempo".*"status":"success"/m);
  expect(paid.stdout).toMatch(/^x402_base: 200 onchain \{"success":true,.*"transaction":"0x[0-9a-f]{64}"/m);
  expect(paid.stdout + paid.stderr).not.toContain(key);
}, 180_000);

/** A port whose next two are free as well. */
async function threeFree(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = net.createServer().once('error', () => resolve(false)).listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
  for (let tries = 0; tries < 20; tries++) {
    const candidate = await freePort();
    if (candidate <= 65_530 && (await free(candidate + 1)) && (await free(candidate + 2))) return candidate;
  }
  throw new Error('no three free ports in a row');
}

test('behavior: --port puts the sandbox where it is asked (the Tempo node, the Base chain and the facilitator on three ports in a row); a port in use is one line naming it, and nothing is left listening', async () => {
  const base = await threeFree();
  const sandbox = await run(`npx profile-edge sandbox --port ${base} --settings-file ported.env --wallet-key-file ported.key`, base, /sandbox ready/);
  expect(sandbox.code, sandbox.stderr).toBeNull();
  const env = fs.readFileSync(path.join(work, 'ported.env'), 'utf8');
  expect(env).toContain(`TEMPO_RPC_URL=http://127.0.0.1:${base}\n`);
  expect(env).toContain(`X402_BASE_RPC_URL=http://127.0.0.1:${base + 1}\n`);
  expect(env).toContain(`X402_FACILITATOR_URL=http://127.0.0.1:${base + 2}\n`);
  // A second one on the same ports stops at once, saying which and what to do.
  const second = await run(`npx profile-edge sandbox --port ${base} --settings-file second.env --wallet-key-file second.key`, base);
  expect(second.code).toBe(2);
  expect(second.stderr.trim().split('\n')[0]).toBe(`error: the sandbox's Tempo node cannot listen on 127.0.0.1:${base} (EADDRINUSE): the port is in use; choose another --port (the sandbox takes it and the next two)`);
  expect(second.stderr).not.toMatch(/\n\s+at /);
  expect(fs.existsSync(path.join(work, 'second.env'))).toBe(false);
  // Its second port taken: the Tempo node it had started is closed again, and the command ends.
  const other = await threeFree();
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(other + 1, '127.0.0.1', resolve));
  try {
    const third = await run(`npx profile-edge sandbox --port ${other} --settings-file third.env --wallet-key-file third.key`, other);
    expect(third.code).toBe(2);
    expect(third.stderr.trim().split('\n')[0]).toBe(`error: the sandbox's Base chain cannot listen on 127.0.0.1:${other + 1} (EADDRINUSE): the port is in use; choose another --port (the sandbox takes it and the next two)`);
    const reopened = net.createServer();
    await new Promise<void>((resolve, reject) => reopened.once('error', reject).listen(other, '127.0.0.1', resolve));
    await new Promise((resolve) => reopened.close(resolve));
  } finally {
    await new Promise((resolve) => blocker.close(resolve));
  }
}, 120_000);
