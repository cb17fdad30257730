import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../src/config/Config.js';
import * as Readme from './support/Readme.js';

/**
 * The README's examples, run as written and in order against a served instance: every shell block not marked
 * `<!-- readme-test: skip, why -->`, and the MCP host configurations. Only the port differs (a free one, not 3000).
 */

const readme = fs.readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
const blocks = Readme.blocks(readme);
const shell = blocks.filter((b) => b.language === 'sh' && b.skip === undefined);
const hasCurl = spawnSync('sh', ['-c', 'command -v curl'], { encoding: 'utf8' }).status === 0;
// eslint-disable-next-line no-console -- a test run should say why the README examples were skipped
if (!hasCurl) console.warn('readme.test: curl is not installed, so the README examples are not run (apt-get install curl)');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

type Ran = Readme.Command & { block: number; stdout: string; stderr: string; status: number };

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-readme-'));
let port = 0;
let ran: Ran[] = [];
let key = '';

/** The shell script: a stand-in for `npm start` that (re)starts the server in the background, then each command. */
function script(commands: (Readme.Command & { block: number })[]): string {
  const run = commands.map((c, n) => `{ ${c.text.replaceAll(':3000', `:${port}`)}\n} > "$WORK/${n}.out" 2> "$WORK/${n}.err" < /dev/null; echo $? > "$WORK/${n}.rc"`);
  return [
    'set +e',
    'SERVER=',
    'stop_server() { if [ -n "$SERVER" ]; then kill "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=; fi; }',
    'npm() {',
    '  if [ "$1" = start ]; then',
    '    stop_server',
    '    node bin/profile-edge.mjs serve > "$WORK/server.log" 2>&1 &',
    '    SERVER=$!',
    '    for i in $(seq 1 600); do curl -sf "localhost:$PORT/health" > /dev/null && return 0; sleep 0.1; done',
    '    return 1',
    '  fi',
    '  command npm "$@"',
    '}',
    'trap stop_server EXIT',
    'npm start || { echo "the server did not start" >&2; exit 3; }',
    ...run,
    'printf %s "$KEY" > "$WORK/key"',
  ].join('\n');
}

beforeAll(async () => {
  if (!hasCurl) return;
  port = await freePort();
  const commands = shell.flatMap((b) => Readme.commands(b.text).map((c) => ({ ...c, block: b.line })));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? work,
    WORK: work,
    PORT: String(port),
    DATABASE_PATH: path.join(work, 'readme.db'),
    SYNC_SCHEDULE: 'false',
    LOG_LEVEL: 'warn',
  };
  execFileSync('bash', ['-c', script(commands)], { cwd: projectRoot, env, stdio: 'ignore', timeout: 240_000 });
  const read = (file: string) => fs.readFileSync(path.join(work, file), 'utf8');
  ran = commands.map((c, n) => ({ ...c, stdout: read(`${n}.out`), stderr: read(`${n}.err`), status: Number(read(`${n}.rc`)) }));
  key = read('key');
}, 300_000);

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** The keys at the top level of a JSON text that may have "…" in it (so it need not parse). */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      const end = text.indexOf('"', i + 1);
      if (depth === 1 && /^\s*:/.test(text.slice(end + 1))) keys.push(text.slice(i + 1, end));
      i = end;
    }
  }
  return keys;
}

describe.skipIf(!hasCurl)('README examples', () => {
  test('behavior: every shell block is run, or says why not', () => {
    expect(shell.length).toBeGreaterThanOrEqual(5);
    for (const b of blocks.filter((x) => x.language === 'sh' && x.skip !== undefined)) expect(b.skip!.length).toBeGreaterThan(10);
    expect(ran.length).toBeGreaterThan(15);
  });

  test('behavior: npm start is the serve command the test stands in for', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8'));
    expect(pkg.scripts.start).toBe('node bin/profile-edge.mjs serve');
  });

  test('behavior: each command succeeds and prints what the README shows', () => {
    expect(ran.length).toBeGreaterThan(0);
    for (const c of ran) {
      const where = `README line ${c.block}: ${c.text}\n${c.stderr}`;
      expect(c.status, where).toBe(0);
      if (!c.text.startsWith('curl')) continue;
      if (!c.stdout.trimStart().startsWith('{')) {
        expect(c.stdout.length, where).toBeGreaterThan(0);
        continue;
      }
      const actual = JSON.parse(c.stdout) as Record<string, any>;
      const shown = c.shown;
      const parsed = shown && !shown.includes('…') && !shown.includes('...') ? (JSON.parse(shown) as Record<string, unknown>) : undefined;
      if (parsed) expect(actual, where).toEqual(parsed);
      else if (shown) {
        // A JSON-RPC error shows its code; a REST error its Error body's code.
        const rpcCode = /"error":\s*\{\s*"code":\s*(-?\d+)/.exec(shown)?.[1];
        if (rpcCode !== undefined) expect(actual.error?.code, where).toBe(Number(rpcCode));
        else expect(actual.error, where).toBe(/"error":\s*"(\w+)"/.exec(shown)?.[1]);
        for (const name of topLevelKeys(shown)) expect(actual, where).toHaveProperty(name);
      } else if (c.expectsError) expect(typeof actual.error, where).toBe('string');
      else {
        expect(actual.error, where).toBeUndefined();
        expect(actual.result?.isError, where).toBeFalsy();
      }
    }
  });

  test('behavior: the key the examples made has paid for its queries', () => {
    expect(key).toMatch(/^pek_/);
    const queries = ran.filter((c) => c.text.includes('"question"') && c.text.includes('$KEY'));
    expect(queries.length).toBeGreaterThanOrEqual(3);
    for (const q of queries) expect(JSON.parse(q.stdout).charge ?? JSON.parse(q.stdout).result?.charge).toMatch(/^(credits|unlock)$/);
  });

  /** The MCP host configurations, with the README's placeholders filled in. */
  const hostConfig = (marker: string) => {
    const block = blocks.find((b) => b.language === 'json' && b.text.includes(marker));
    expect(block, `a README json block with ${marker}`).toBeDefined();
    const filled = block!.text
      .replaceAll('/absolute/path/to/profile-edge', projectRoot)
      .replaceAll('pek_...', key)
      .replaceAll(':3000', `:${port}`)
      .replaceAll(path.join(projectRoot, 'data', 'profile-edge.db'), path.join(work, 'readme.db'));
    return (JSON.parse(filled) as { mcpServers: Record<string, any> }).mcpServers['profile-edge'];
  };

  async function askThrough(client: Client): Promise<void> {
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('profile_query');
    const result = (await client.callTool({ name: 'profile_query', arguments: { question: 'What is anchor sleep?', paymentMode: 'credits' } })) as any;
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expect(result.structuredContent.charge).toBe('credits');
    await client.close();
  }

  test('behavior: the stdio host configuration starts a server that answers with the key', async () => {
    const config = hostConfig('"mcp"]');
    const client = new Client({ name: 'readme', version: '1' });
    await client.connect(new StdioClientTransport({ command: config.command === 'node' ? process.execPath : config.command, args: config.args, env: { PATH: process.env.PATH ?? '', ...config.env }, stderr: 'pipe' }));
    await askThrough(client);
  });

  test('behavior: the HTTP host configuration answers with the key', async () => {
    const config = hostConfig('"type": "http"');
    // The examples' run stopped its server at the end; serve the same database on the same port again.
    const client = new Client({ name: 'readme', version: '1' });
    await withServer(async () => {
      await client.connect(new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers } }));
      await askThrough(client);
    });
  });

  test('behavior: the mcp-remote host configuration answers with the key', async () => {
    const config = hostConfig('"mcp-remote"');
    expect(config.command).toBe('npx');
    const sandbox = path.join(work, 'mcp-remote');
    fs.mkdirSync(sandbox, { recursive: true });
    const transport = new StdioClientTransport({
      command: config.command,
      args: ['--no-install', ...config.args],
      cwd: projectRoot,
      // What a host adds: a PATH; kept away from the real home, with no browser to open.
      env: { PATH: process.env.PATH ?? '', HOME: sandbox, MCP_REMOTE_CONFIG_DIR: sandbox, BROWSER: '/bin/false', ...config.env },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'readme', version: '1' });
    await withServer(async () => {
      const connecting = client.connect(transport, { timeout: 20_000 });
      const pid = transport.pid;
      try {
        await connecting;
        await askThrough(client);
      } finally {
        // Closing the client ends the bridge; one stuck in an OAuth wait would ignore that.
        if (pid) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
    });
  }, 60_000);
});

/** Serves the README run's database on its port while `body` runs. */
async function withServer(body: () => Promise<void>): Promise<void> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'profile-edge.mjs'), 'serve'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), DATABASE_PATH: path.join(work, 'readme.db'), SYNC_SCHEDULE: 'false', LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  try {
    for (let i = 0; i < 300; i++) {
      if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await body();
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}
