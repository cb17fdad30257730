import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../src/config/Config.js';
import { ModuleUnavailable, lazy } from '../src/errors/Lazy.js';

/**
 * What starting a command costs: the built JavaScript runs (and is rebuilt, saying so, when the sources changed), and
 * each command loads what it needs, when it needs it. A library that cannot be loaded is one line naming it.
 */

const run = promisify(execFile);
const bin = path.join(projectRoot, 'bin', 'profile-edge.mjs');
const trace = path.join(projectRoot, 'test', 'support', 'LoadTrace.mjs');
let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pe-startup-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The outside packages a profile-edge process loaded (ESM imports and CommonJS entry points), by name. */
function packagesIn(file: string): Set<string> {
  const names = new Set<string>();
  for (const url of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m) names.add(m[1]!);
  }
  return names;
}

/** Runs the CLI with the load trace; returns its output and the packages it loaded. */
async function traced(env: Record<string, string>, ...argv: string[]) {
  const file = path.join(dir, `trace-${Math.random().toString(36).slice(2)}.txt`);
  fs.writeFileSync(file, '');
  const result = await run(process.execPath, ['--import', trace, bin, ...argv], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ENVIRONMENT: 'test', LOAD_TRACE: file, ...env } }).catch(
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  return { code: 'code' in result ? result.code : 0, stdout: result.stdout, stderr: result.stderr, packages: packagesIn(file) };
}

/** Libraries only some work needs: the model's SDK, the rails, the readers and parsers, PostgreSQL's driver, the sandbox. */
const heavy = ['@anthropic-ai/sdk', 'viem', 'mppx', '@x402/core', '@x402/evm', 'pdfjs-dist', '@cantoo/pdf-lib', '@notionhq/client', 'feedsmith', 'linkedom', 'pg', 'solc', 'ganache', 'onnxruntime-node'];
const server = ['express', '@modelcontextprotocol/sdk'];

describe('what each command loads', () => {
  test('behavior: --help loads no library beyond the CLI its own, and none of the server', async () => {
    const { code, stdout, packages } = await traced({}, '--help');
    expect(code).toBe(0);
    expect(stdout).toMatch(/usage: profile-edge <command>/);
    expect([...packages].filter((p) => heavy.includes(p) || server.includes(p))).toEqual([]);
  });

  test('behavior: a CLI write on a store loads the store, never the server, the model, the rails, the readers or the sandbox', async () => {
    const env = { DATABASE_PATH: path.join(dir, 'write.db') };
    expect((await traced(env, 'profiles', 'create', 'first', '--name', 'First')).code).toBe(0);
    const { code, stdout, packages } = await traced(env, 'keys', 'create', '--account', 'agent', '--create', '--credits', '5');
    expect(code).toBe(0);
    expect(stdout).toMatch(/pek_/);
    expect(packages.has('better-sqlite3')).toBe(true);
    expect([...packages].filter((p) => heavy.includes(p) || server.includes(p))).toEqual([]);
  });

  test('behavior: serve on the demo store loads neither the model SDK, the rails, the readers and feed parsers, Notion, PostgreSQL nor the sandbox', async () => {
    const env = { DATABASE_PATH: path.join(dir, 'serve.db'), PORT: '0', SYNC_SCHEDULE: 'false' };
    // The first start loads the demo (its files through the readers); the one measured finds it there.
    for (const pass of ['first start', 'measured']) {
      const file = path.join(dir, `serve-${pass.replace(' ', '-')}.txt`);
      const child = spawn(process.execPath, ['--import', trace, bin, 'serve'], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ENVIRONMENT: 'test', LOAD_TRACE: file, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (how) => reject(new Error(`serve exited (${how})`)));
      });
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect((await fetch(`${url}/api/profiles`)).status).toBe(200);
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      if (pass === 'measured') {
        const packages = packagesIn(file);
        expect(packages.has('express')).toBe(true);
        expect([...packages].filter((p) => heavy.includes(p))).toEqual([]);
      }
    }
  }, 60_000);

  test('behavior: a library that fails to load is one line naming it and what needs it, never a stack trace', async () => {
    const { code, stdout, stderr } = await traced({ DATABASE_URL: 'postgres://127.0.0.1:5432/test', LOAD_REFUSE: 'pg' }, 'profiles', 'list');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toEqual([
      "error: The PostgreSQL engine (pg) could not be loaded (Cannot find package 'pg'). Reinstall with `npm install`.",
    ]);
  });

  test('behavior: a lazy module is loaded once, a failed load is tried again, and its failure is a service_unavailable in the contract', async () => {
    let loads = 0;
    const fine = lazy('A module', async () => ++loads);
    expect([await fine(), await fine()]).toEqual([1, 1]);
    let attempts = 0;
    const flaky = lazy('The flaky module (flaky-lib)', async () => {
      if (++attempts === 1) throw Object.assign(new Error("Cannot find package 'flaky-lib' imported from /x/y.js\n    at stack"), { code: 'ERR_MODULE_NOT_FOUND' });
      return 'loaded';
    });
    const error = await flaky().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModuleUnavailable);
    expect(error).toMatchObject({ code: 'service_unavailable', message: "The flaky module (flaky-lib) could not be loaded (Cannot find package 'flaky-lib'). Reinstall with `npm install`." });
    expect(await flaky()).toBe('loaded');
  });
});

describe('the build', () => {
  let copy: string;
  const cli = (...argv: string[]) =>
    run(process.execPath, [path.join(copy, 'bin', 'profile-edge.mjs'), ...argv], { env: { PATH: process.env.PATH ?? '' } }).catch((error: { code: number; stdout: string; stderr: string }) => error);

  beforeAll(() => {
    // A project of its own (the sources, the build script, the packages linked): its dist/ is built and rebuilt here,
    // never under the processes the other tests run.
    copy = path.join(dir, 'project');
    for (const part of ['src', 'tools', 'bin']) fs.cpSync(path.join(projectRoot, part), path.join(copy, part), { recursive: true });
    fs.copyFileSync(path.join(projectRoot, 'package.json'), path.join(copy, 'package.json'));
    fs.symlinkSync(path.join(projectRoot, 'node_modules'), path.join(copy, 'node_modules'));
  });

  test('behavior: a missing build is made and said; a fresh one runs silently; a changed source is rebuilt before it runs', async () => {
    const first = await cli('--help');
    expect(first.stderr).toMatch(/^profile-edge: dist\/ has not been built; built \d+ modules in [\d.]+ s\n$/);
    expect(first.stdout).toMatch(/usage: profile-edge <command>/);
    const again = await cli('--help');
    expect(again.stderr).toBe('');
    // Touched but the same: compared by content, not rebuilt.
    const cliFile = path.join(copy, 'src', 'cli', 'Cli.ts');
    const now = new Date();
    fs.utimesSync(cliFile, now, new Date(now.getTime() + 5_000));
    expect((await cli('--help')).stderr).toBe('');
    // Changed: rebuilt, and the new code is what runs.
    fs.writeFileSync(cliFile, fs.readFileSync(cliFile, 'utf8').replace("out.line('usage: profile-edge <command> [options]\\n');", "out.line('usage: profile-edge <command> [options] (changed)\\n');"));
    const changed = await cli('--help');
    expect(changed.stderr).toMatch(/^profile-edge: src\/cli\/Cli.ts changed since dist\/ was built; built \d+ modules/);
    expect(changed.stdout).toMatch(/\(changed\)/);
  }, 60_000);

  test('behavior: a source that does not build stops the command with one line, and never runs the old build', async () => {
    const broken = path.join(copy, 'src', 'cli', 'Broken.ts');
    fs.writeFileSync(broken, 'export const = ;\n');
    const result = await cli('--help');
    expect('code' in result && result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^profile-edge: src\/cli\/Broken.ts was added since dist\/ was built, and building it failed: .*Run `npm run build` to see why\.\n$/);
    fs.rmSync(broken);
    expect((await cli('--help')).stdout).toMatch(/usage: profile-edge/);
  }, 60_000);
});
