import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import * as Environment from './support/Environment.js';

/**
 * mcp-remote, the stdio-to-HTTP bridge Claude Desktop runs for remote servers, against the served MCP endpoints. It
 * reads any HTTP 401 as an OAuth login challenge (discovery, client registration, a browser), so these tests also
 * check that it never goes there: no browser opened, no OAuth state written.
 */

const served = Environment.useServed();
const proxy = createRequire(import.meta.url).resolve('mcp-remote/dist/proxy.js');

let sandbox = '';
beforeEach(() => {
  sandbox = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-mcp-remote-'));
  // A stand-in browser that only records what it was asked to open.
  fs.writeFileSync(path.join(sandbox, 'browser.sh'), '#!/bin/sh\necho "$@" >> "$(dirname "$0")/browser.log"\n', { mode: 0o755 });
});
afterEach(() => fs.rmSync(sandbox, { recursive: true, force: true }));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** What mcp-remote left behind that would mean it started an OAuth login. */
function oauthTraces(): string[] {
  const state = path.join(sandbox, 'mcp-auth');
  const files = fs.existsSync(state) ? fs.readdirSync(state, { recursive: true }).map(String) : [];
  return [...(fs.existsSync(path.join(sandbox, 'browser.log')) ? ['browser.log'] : []), ...files.filter((f) => /tokens|client_info|code_verifier/.test(f))];
}

/** Runs mcp-remote for an endpoint with the given header, as Claude Desktop would, and talks MCP to it over stdio. */
async function throughMcpRemote(endpoint: string, key: string | undefined, body: (client: Client) => Promise<void>): Promise<void> {
  const args = [proxy, `${served.url}${endpoint}`, String(await freePort()), '--transport', 'http-only', ...(key === undefined ? [] : ['--header', 'service-api-key:${PROFILE_EDGE_KEY}'])];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    stderr: 'pipe',
    env: {
      PATH: process.env.PATH ?? '',
      HOME: sandbox,
      MCP_REMOTE_CONFIG_DIR: path.join(sandbox, 'mcp-auth'),
      BROWSER: path.join(sandbox, 'browser.sh'),
      ...(key !== undefined && { PROFILE_EDGE_KEY: key }),
    },
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'mcp-remote-test', version: '1.0.0' });
  const connecting = client.connect(transport, { timeout: 15_000 });
  // Kept now: a bridge stuck waiting for an OAuth code ignores the end of stdin, so it is killed outright at the end.
  const pid = transport.pid;
  try {
    await connecting;
    await body(client);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- mcp-remote stderr ---\n${stderr}`);
  } finally {
    await client.close().catch(() => undefined);
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

const question = { question: 'How warm should a sourdough starter be kept?', paymentMode: 'credits' };

describe('mcp-remote 0.15.1 (Claude Desktop’s bridge)', () => {
  test('behavior: with a valid key it connects, lists the tools and answers a paid query', async () => {
    await throughMcpRemote('/mcp', served.environment.keys.callerKey, async (client) => {
      expect(client.getServerVersion()?.name).toBe('profile-edge');
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['profile_list_channels', 'profile_quote', 'profile_query']);
      const result = (await client.callTool({ name: 'profile_query', arguments: question })) as any;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent.charge).toBe('credits');
    });
    expect(oauthTraces()).toEqual([]);
  }, 30_000);

  test.each([
    ['an unknown key', `pek_0000000000000000_${'A'.repeat(43)}`, /well formed but unknown to this server, or it was revoked/],
    ['a malformed key', 'nope', /malformed: expected pek_/],
  ])('behavior: with %s the host connects and the tool call reads as a bad key, not an OAuth login', async (_name, key, message) => {
    await throughMcpRemote('/mara-lindqvist/mcp', key, async (client) => {
      expect((await client.listTools()).tools).toHaveLength(3);
      const result = (await client.callTool({ name: 'profile_query', arguments: question })) as any;
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ error: 'invalid_api_key', status: 401 });
      expect(result.structuredContent.message).toMatch(message);
    });
    expect(oauthTraces()).toEqual([]);
  }, 30_000);

  test('behavior: a revoked key reads as revoked; free tools answer with a note, or with no key at all', async () => {
    await throughMcpRemote('/mcp', served.environment.keys.revokedKey, async (client) => {
      const paid = (await client.callTool({ name: 'profile_query', arguments: question })) as any;
      expect(paid.structuredContent).toMatchObject({ error: 'invalid_api_key', message: expect.stringMatching(/revoked/) });
      const free = (await client.callTool({ name: 'profile_list_channels', arguments: { limit: 1 } })) as any;
      expect(free.isError).toBeFalsy();
      expect(free.content[1].text).toMatch(/revoked/);
    });
    await throughMcpRemote('/mcp', undefined, async (client) => {
      const result = (await client.callTool({ name: 'profile_list_channels', arguments: { limit: 1 } })) as any;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent.data).toHaveLength(1);
    });
    expect(oauthTraces()).toEqual([]);
  }, 30_000);

  test.each([
    ['an unknown profile', '/no-such-expert/mcp', undefined, /no profile "no-such-expert"/],
    ['a private profile the caller may not read', '/sunniva-bratt/mcp', undefined, /no profile "sunniva-bratt"/],
    ['a private profile with a revoked key', '/sunniva-bratt/mcp', 'revoked', /no profile "sunniva-bratt"\. Also: .*revoked/],
  ])('error: %s: the bridge, run as Claude Desktop runs it (http-first), ends on the service’s message, not an SSE error', async (_name, endpoint, key, message) => {
    const header = key === undefined ? [] : ['--header', 'service-api-key:${PROFILE_EDGE_KEY}'];
    const child = spawn(process.execPath, [proxy, `${served.url}${endpoint}`, String(await freePort()), ...header], {
      env: { PATH: process.env.PATH ?? '', HOME: sandbox, MCP_REMOTE_CONFIG_DIR: path.join(sandbox, 'mcp-auth'), BROWSER: path.join(sandbox, 'browser.sh'), ...(key !== undefined && { PROFILE_EDGE_KEY: served.environment.keys.revokedKey }) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(killer);
    expect(code, stderr).toBe(1);
    const fatal = stderr.split('\n').find((line) => line.includes('Fatal error'));
    expect(fatal, stderr).toMatch(message);
    expect(stderr).not.toMatch(/SSE error|falling-back/);
    expect(oauthTraces()).toEqual([]);
  }, 30_000);
});
