import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { ErrorBody, McpManifest, McpResponse, OnchainQuote, ProfileChannels } from '../src/contract/Contract.js';
import { version } from '../src/Version.js';
import * as Engines from './support/Engines.js';
import * as Environment from './support/Environment.js';
import * as Transports from './support/Transports.js';

const served = Environment.useServed();

/** A plain JSON-RPC POST, as a script without an MCP client would send it (no Accept header). */
async function rpc(path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${served.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

describe('GET /mcp and /{slug}/mcp', () => {
  test('behavior: the global manifest lists the working tools with strict input schemas', async () => {
    const manifest = McpManifest.parse((await (await fetch(`${served.url}/mcp`)).json()) as any);
    expect(manifest.profile).toEqual({ slug: 'global', name: 'All public profiles' });
    expect(manifest.skill).toBe('/SKILL.md');
    expect(manifest.tools.map((t) => t.name)).toEqual(['profile_list_channels', 'profile_quote', 'profile_query']);
    for (const tool of manifest.tools) expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
  });

  test('behavior: no tool declares `_meta` as an argument (MCP reserves it for request metadata), and one sent among the arguments is still read as metadata', async () => {
    for (const path of ['/mcp', '/mara-lindqvist/mcp']) {
      const manifest = McpManifest.parse((await (await fetch(`${served.url}${path}`)).json()) as any);
      for (const tool of manifest.tools) expect(Object.keys((tool.inputSchema as { properties?: object }).properties ?? {}), `${path} ${tool.name}`).not.toContain('_meta');
    }
    // A host that puts _meta among the arguments is answered as if it were in params._meta: not refused as unknown.
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}/mcp`)));
    const listed = await client.callTool({ name: 'profile_list_channels', arguments: { limit: 1, _meta: { 'progressToken': 1 } } });
    expect(listed.isError).toBeFalsy();
    await client.close();
  });

  test('behavior: a per-profile manifest names its profile; its listing tool takes no arguments', async () => {
    const manifest = McpManifest.parse((await (await fetch(`${served.url}/nadia-ferreira-holm/mcp`)).json()) as any);
    expect(manifest.profile).toEqual({ slug: 'nadia-ferreira-holm', name: 'Nadia Ferreira-Holm' });
    expect(manifest.tools[0]!.inputSchema).toEqual({ type: 'object', properties: {}, additionalProperties: false });
  });

  test('error: unknown and unauthorized private profiles are 404; the owner sees the manifest', async () => {
    for (const slug of ['nobody-here', 'sunniva-bratt']) {
      const response = await fetch(`${served.url}/${slug}/mcp`);
      expect(response.status).toBe(404);
      expect(ErrorBody.parse(await response.json()).error).toBe('not_found');
    }
    const owner = await fetch(`${served.url}/sunniva-bratt/mcp`, { headers: { authorization: `Bearer ${served.environment.keys.sunnivaBearer}` } });
    expect(owner.status).toBe(200);
  });

  test('error: a request for an SSE stream is 405 with Allow: POST, as stateless MCP servers answer', async () => {
    for (const path of ['/mcp', '/mara-lindqvist/mcp']) {
      const response = await fetch(`${served.url}${path}`, { headers: { accept: 'text/event-stream' } });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(ErrorBody.parse(await response.json()).error).toBe('method_not_allowed');
    }
  });
});

describe('POST /mcp JSON-RPC', () => {
  test('behavior: tools/list through the SDK client matches the manifest', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}/owen-halvorsen/mcp`)));
    const { tools } = await client.listTools();
    const manifest = McpManifest.parse((await (await fetch(`${served.url}/owen-halvorsen/mcp`)).json()) as any);
    expect(tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }))).toEqual(manifest.tools);
    expect(client.getServerVersion()).toEqual({ name: 'profile-edge', version });
    await client.close();
  });

  test('behavior: plain JSON-RPC without an Accept header works for initialize and tools/list', async () => {
    const init = await rpc('/mcp', { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } });
    expect(init.status).toBe(200);
    expect(McpResponse.parse(init.body).result).toMatchObject({ serverInfo: { name: 'profile-edge' }, capabilities: { tools: {} } });
    const list = await rpc('/mcp', { jsonrpc: '2.0', id: 'a', method: 'tools/list' });
    expect(list.body.id).toBe('a');
    expect(list.body.result.tools).toHaveLength(3);
  });

  test('behavior: notifications/initialized is accepted with no body', async () => {
    const response = await fetch(`${served.url}/mcp`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    expect(response.status).toBe(202);
  });

  test('behavior: tools/call returns content and structuredContent', async () => {
    const { body } = await rpc('/mara-lindqvist/mcp', { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'profile_quote', arguments: { rail: 'tempo' } } });
    expect(body.id).toBe(7);
    expect(OnchainQuote.parse(body.result.structuredContent).chainId).toBe(4217);
    expect(JSON.parse(body.result.content[0].text)).toEqual(body.result.structuredContent);
  });

  test('behavior: a tool name as method returns the tool payload itself as result', async () => {
    const { status, body } = await rpc('/owen-halvorsen/mcp', { jsonrpc: '2.0', id: 3, method: 'profile_list_channels', params: {} });
    expect(status).toBe(200);
    expect(McpResponse.parse(body).id).toBe(3);
    expect(ProfileChannels.parse(body.result).slug).toBe('owen-halvorsen');
  });

  test('behavior: the tool/arguments compatibility fields work without jsonrpc or id', async () => {
    const { body } = await rpc('/mcp', { tool: 'profile_quote', arguments: { rail: 'x402_base' } });
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null });
    expect(OnchainQuote.parse(body.result).chainId).toBe(8453);
  });

  test('behavior: direct calls on the global endpoint take the slug as an argument', async () => {
    const { body } = await rpc('/mcp', { jsonrpc: '2.0', id: 1, method: 'profile_list_channels', params: { slug: 'ines-marchetti' } });
    expect(ProfileChannels.parse(body.result).slug).toBe('ines-marchetti');
  });

  test('error: a failed direct call is a JSON-RPC error carrying the Error body and status', async () => {
    const { status, body } = await rpc('/mcp', { jsonrpc: '2.0', id: 9, method: 'profile_quote', params: { rail: 'doge' } });
    expect(status).toBe(200);
    expect(body.id).toBe(9);
    expect(body.error).toMatchObject({ code: -32602, data: { error: 'invalid_rail', status: 400 } });
    expect(ErrorBody.parse(body.error.data).message).toContain('rail');
  });

  test('error: a direct call with a field named like an Object.prototype member is -32602 naming the field, and changes nothing', async () => {
    const before = await served.environment.peek.snapshot();
    for (const field of ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__']) {
      for (const [method, params] of [
        ['profile_query', { question: 'x', paymentMode: 'credits' }],
        ['profile_quote', { rail: 'tempo' }],
      ] as const) {
        // As a client's JSON has it: an own field, __proto__ included.
        const body = `{"jsonrpc":"2.0","id":3,"method":"${method}","params":{"${field}":1,${JSON.stringify(params).slice(1)}}`;
        const response = await fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', 'service-api-key': served.environment.keys.callerKey }, body });
        const answer = (await response.json()) as any;
        expect(answer.error, `${method} ${field}`).toMatchObject({ code: -32602, data: { error: 'invalid_request', status: 400 } });
        expect(answer.error.message).toContain(field);
      }
    }
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('behavior: a batch holding a request and its own cancellation is answered (the request is), not left open', async () => {
    const call = { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'profile_list_channels', arguments: { limit: 1 } } };
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11, reason: 'changed my mind' } };
    const { status, body } = await rpc('/mcp', [call, cancel]);
    expect(status).toBe(200);
    expect(body).toEqual([expect.objectContaining({ id: 11, result: expect.objectContaining({ structuredContent: expect.any(Object) }) })]);
    // A cancellation on its own is accepted and cancels nothing (no request outlives its POST here).
    const alone = await fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify([cancel]) });
    expect(alone.status).toBe(202);
  });

  test('error: a failed tools/call is an isError result carrying the Error body and status', async () => {
    const { body } = await rpc('/mcp', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'profile_list_channels', arguments: { slug: 'sunniva-bratt' } } });
    expect(body.result.isError).toBe(true);
    expect(body.result.structuredContent).toMatchObject({ error: 'not_found', status: 404 });
  });

  test('error: an unknown tool is a JSON-RPC invalid-params error with the stable code and its message once', async () => {
    const { body } = await rpc('/mcp', { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'profile_delete', arguments: {} } });
    expect(body.error).toMatchObject({ code: -32602, data: { error: 'unknown_tool', status: 404 } });
    expect(body.error.message).toMatch(/^unknown tool "profile_delete"; tools: profile_list_channels, profile_quote, profile_query$/);
    expect(body.error.data.message).toBe(body.error.message);
  });

  test('error: the SDK client shows an unknown tool\'s message with one "MCP error" prefix', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}/mcp`)));
    const error = (await client.callTool({ name: 'profile_delete', arguments: {} }).catch((e: unknown) => e)) as { message: string; data: unknown };
    expect(error.message).toBe('MCP error -32602: unknown tool "profile_delete"; tools: profile_list_channels, profile_quote, profile_query');
    expect(error.data).toMatchObject({ error: 'unknown_tool' });
    await client.close();
  });

  test.each([[[1]], ['x'], [null]])('error: tools/call with arguments %j is invalid params, not an internal error', async (args) => {
    const { body } = await rpc('/mcp', { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'profile_quote', arguments: args } });
    expect(body.error.code).toBe(-32602);
  });

  test.each(['/mcp', '/mara-lindqvist/mcp'])('error: an unknown method on %s is method-not-found with the stable code', async (path) => {
    const { body } = await rpc(path, { jsonrpc: '2.0', id: 5, method: 'resources/list' });
    expect(body.error).toMatchObject({ code: -32601, message: 'Method not found', data: { error: 'method_not_found', message: 'Method not found', status: 404 } });
  });

  test.each([
    ['malformed JSON', '{"jsonrpc":', 400, -32700, 'invalid_json'],
    ['a JSON string', '"hello"', 400, -32600, 'invalid_request'],
    ['an empty body', '', 400, -32600, 'invalid_request'],
    ['an empty object', '{}', 400, -32600, 'invalid_request'],
    ['an object that is no JSON-RPC message', '{"hello":1}', 400, -32600, 'invalid_request'],
    ['a method that is not a string', '{"jsonrpc":"2.0","id":1,"method":5}', 400, -32600, 'invalid_request'],
    ['a null id on a request', '{"jsonrpc":"2.0","id":null,"method":"ping"}', 400, -32600, 'invalid_request'],
    ['another JSON-RPC version', '{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600, 'invalid_request'],
    ['an empty batch', '[]', 400, -32600, 'invalid_request'],
    ['a batch with a number in it', '[5]', 400, -32600, 'invalid_request'],
  ])('error: %s gets a JSON-RPC error envelope with the stable code and changes nothing', async (_name, raw, status, code, error) => {
    const before = await served.environment.peek.snapshot();
    const response = await fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });
    expect(response.status).toBe(status);
    const body = (await response.json()) as any;
    expect(body).toMatchObject({ jsonrpc: '2.0', error: { code, data: { error } } });
    expect(body.error.message).toBe(body.error.data.message);
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('error: a per-profile POST for a private profile is 404 before any JSON-RPC', async () => {
    const { status, body } = await rpc('/sunniva-bratt/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(status).toBe(404);
    expect(body.error).toBe('not_found');
  });

  test('behavior: an invalid API key does not stop tools/list on a per-profile POST (hosts read HTTP 401 as an OAuth challenge)', async () => {
    const { status, body } = await rpc('/mara-lindqvist/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'service-api-key': 'nope' });
    expect(status).toBe(200);
    expect(body.result.tools.map((t: { name: string }) => t.name)).toContain('profile_query');
  });
});

describe('profile-edge mcp (stdio)', () => {
  test('behavior: a tool name as a direct method works over stdio too', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: Transports.cli.command,
        args: [...Transports.cli.args, 'mcp', '--profile', 'mara-lindqvist'],
        env: { PATH: process.env.PATH ?? '', ...served.environment.env },
        cwd: served.environment.directory,
        stderr: 'pipe',
      }),
    );
    // A local host has no server to fetch SKILL.md from: the instructions name the file on this machine.
    const skill = /Read (\S+SKILL\.md) for when to use it/.exec(client.getInstructions() ?? '')?.[1];
    expect(skill && path.isAbsolute(skill) && fs.existsSync(skill), client.getInstructions()).toBe(true);
    const result = await client.request({ method: 'profile_list_channels', params: {} } as never, z.record(z.unknown()) as never);
    expect(ProfileChannels.parse(result).slug).toBe('mara-lindqvist');
    await expect(client.request({ method: 'profile_quote', params: { rail: 'nope' } } as never, z.record(z.unknown()) as never)).rejects.toMatchObject({
      code: -32602,
      data: { error: 'invalid_rail', status: 400 },
    });
    // The SDK's own protocol errors carry the stable code too, over stdio as over HTTP.
    await expect(client.request({ method: 'resources/list' } as never, z.record(z.unknown()) as never)).rejects.toMatchObject({
      code: -32601,
      message: 'MCP error -32601: Method not found',
      data: { error: 'method_not_found' },
    });
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toMatchObject({ message: expect.stringMatching(/^MCP error -32602: unknown tool "nope";/), data: { error: 'unknown_tool' } });
    await client.close();
  });

  test('behavior: with a bad PROFILE_EDGE_API_KEY the server starts, warns, and each tool call says what is wrong', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: Transports.cli.command,
      args: [...Transports.cli.args, 'mcp'],
      env: { PATH: process.env.PATH ?? '', ...served.environment.env, PROFILE_EDGE_API_KEY: served.environment.keys.revokedKey },
      cwd: served.environment.directory,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    await client.connect(transport);
    expect((await client.listTools()).tools).toHaveLength(3);
    const result = (await client.callTool({ name: 'profile_query', arguments: { question: 'How warm should a starter be?', paymentMode: 'credits' } })) as any;
    expect(result.structuredContent).toMatchObject({ error: 'invalid_api_key', message: 'PROFILE_EDGE_API_KEY is well formed but unknown to this server, or it was revoked.' });
    const free = (await client.callTool({ name: 'profile_list_channels', arguments: { limit: 1 } })) as any;
    expect(free.isError).toBeFalsy();
    expect(free.content[1].text).toMatch(/^Note: PROFILE_EDGE_API_KEY is well formed but unknown/);
    await client.close();
    expect(stderr).toMatch(/^warning: PROFILE_EDGE_API_KEY is well formed but unknown to this server, or it was revoked\. Tool calls will report it\.$/m);
    expect(stderr).not.toContain('error: warning');
    expect(stderr).not.toContain(served.environment.keys.revokedKey);
  });

  // A missing file is SQLite's alone: PostgreSQL has no path to mistype.
  test.skipIf(Engines.current !== 'sqlite')('error: a DATABASE_PATH with no database stops at start instead of serving an empty one', () => {
    const missing = path.join(served.environment.directory, 'nowhere', 'profile-edge.db');
    const run = spawnSync(Transports.cli.command, [...Transports.cli.args, 'mcp'], {
      env: { PATH: process.env.PATH ?? '', ...served.environment.env, DATABASE_PATH: missing },
      cwd: served.environment.directory,
      encoding: 'utf8',
      input: '',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`no database at ${missing}`);
    expect(fs.existsSync(path.dirname(missing))).toBe(false);
  });

  test('behavior: top-level members JSON-RPC does not define are ignored, over stdio as over HTTP: initialize, tools/list and tools/call answer as without them', async () => {
    const extras = { trace: { id: 'abc-123' }, client: 'a-script' };
    const messages = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } }, ...extras },
      { jsonrpc: '2.0', method: 'notifications/initialized', ...extras },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', ...extras },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'profile_quote', arguments: { rail: 'tempo' } }, ...extras },
    ];
    // Stdin stays open until the three answers are out: a host that closes it has gone, and is not answered.
    const child = spawn(Transports.cli.command, [...Transports.cli.args, 'mcp'], { env: { PATH: process.env.PATH ?? '', ...served.environment.env }, cwd: served.environment.directory });
    let out = '';
    const overStdio = await new Promise<any[]>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const lines = out.split('\n').filter((l) => l.trim() !== '');
        if (lines.length >= 3) resolve(lines.map((l) => JSON.parse(l)));
      });
      child.on('exit', (code) => reject(new Error(`mcp exited (${code}) after: ${out}`)));
      child.stdin.write(`${messages.map((m) => JSON.stringify(m)).join('\n')}\n`);
    }).finally(() => child.stdin.end());
    const overHttp = [];
    for (const message of messages) {
      const response = await fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(message) });
      if (response.status !== 202) overHttp.push(await response.json());
    }
    for (const answers of [overStdio, overHttp]) {
      expect(answers.map((a) => [a.id, a.error])).toEqual([[1, undefined], [2, undefined], [3, undefined]]);
      expect(answers[0].result.serverInfo.name).toBe('profile-edge');
      expect(answers[1].result.tools).toHaveLength(3);
      expect(OnchainQuote.parse(answers[2].result.structuredContent).chainId).toBe(4217);
      for (const answer of answers) expect(Object.keys(answer).sort()).toEqual(['id', 'jsonrpc', 'result']);
    }
  });

  test('behavior: lines that are not JSON-RPC messages are answered, not left hanging', () => {
    const lines = ['{bad', '{"method":5}', '42', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', '{"jsonrpc":"2.0","id":7,"method":"initialize"}', '{"jsonrpc":"2.0","id":8,"method":"ping"}'];
    const run = spawnSync(Transports.cli.command, [...Transports.cli.args, 'mcp'], {
      env: { PATH: process.env.PATH ?? '', ...served.environment.env },
      cwd: served.environment.directory,
      encoding: 'utf8',
      input: `${lines.join('\n')}\n`,
    });
    const answers = run.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(answers.map((a) => [a.id, a.error?.code, a.error?.data?.error])).toEqual([
      [null, -32700, 'invalid_json'],
      [null, -32600, 'invalid_request'],
      [null, -32600, 'invalid_request'],
      [null, -32600, 'invalid_request'],
      [7, -32602, 'invalid_request'],
      [8, undefined, undefined],
    ]);
    expect(answers[4].error.message).toMatch(/^invalid initialize request: params/);
  });

  test('error: a malformed request whose id can be read is answered with that id, as over HTTP, and the lines after it are served', async () => {
    const malformed: [string, string | number | null][] = [
      ['{"jsonrpc":"2.0","id":11,"method":"tools/list","params":"not an object"}', 11],
      ['{"jsonrpc":"2.0","id":"req-12","method":"ping","params":[1,2]}', 'req-12'],
      ['{"jsonrpc":"2.0","id":13,"method":"profile_quote","params":42}', 13],
      ['{"jsonrpc":"1.0","id":14,"method":"ping"}', 14],
      ['{"jsonrpc":"2.0","id":15,"method":5}', 15],
      ['{"jsonrpc":"2.0","id":16}', 16],
      ['{"id":17,"method":"tools/list","params":"x"}', 17],
      // An id JSON-RPC does not allow cannot be answered with: null, as the spec says.
      ['{"jsonrpc":"2.0","id":{"n":1},"method":"ping","params":"x"}', null],
      ['{"jsonrpc":"2.0","id":true,"method":"ping","params":"x"}', null],
    ];
    const run = spawnSync(Transports.cli.command, [...Transports.cli.args, 'mcp'], {
      env: { PATH: process.env.PATH ?? '', ...served.environment.env },
      cwd: served.environment.directory,
      encoding: 'utf8',
      input: `${[...malformed.map(([line]) => line), '{"jsonrpc":"2.0","id":99,"method":"ping"}'].join('\n')}\n`,
    });
    const answers = run.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(answers.map((a) => a.id)).toEqual([...malformed.map(([, id]) => id), 99]);
    for (const [n, [line]] of malformed.entries()) {
      expect(answers[n].error, line).toMatchObject({ code: -32600, data: { error: 'invalid_request', status: 400 } });
      expect(answers[n].error.message, line).toBe(answers[n].error.data.message);
    }
    expect(answers[0].error.message).toMatch(/^The line is not a JSON-RPC 2\.0 request, notification or response \(.*params/);
    expect(answers.at(-1)).toEqual({ jsonrpc: '2.0', id: 99, result: {} });
    // Over HTTP the same messages are answered with the same ids and codes.
    for (const [n, [line]] of malformed.entries()) {
      if (line.includes('"profile_quote"')) continue; // HTTP's direct calls refuse non-object params as the tool's input (-32602)
      const response = await fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: line });
      const body = (await response.json()) as any;
      expect([body.id, body.error?.code, body.error?.data?.error], line).toEqual([answers[n].id, answers[n].error.code, answers[n].error.data.error]);
    }
  });

  const startStdio = (slug: string, env: Record<string, string> = {}) =>
    spawnSync(Transports.cli.command, [...Transports.cli.args, 'mcp', '--profile', slug], {
      env: { PATH: process.env.PATH ?? '', ...served.environment.env, ...env },
      cwd: served.environment.directory,
      encoding: 'utf8',
      input: '',
    });

  test('error: an unknown --profile stops at start with a clear message', () => {
    const run = startStdio('nobody-here');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('no profile "nobody-here"');
    expect(run.stdout).toBe('');
  });

  test('error: a private --profile the credentials cannot read stops exactly like an unknown one', () => {
    const unknown = startStdio('nobody-here');
    for (const env of <Record<string, string>[]>[{}, { PROFILE_EDGE_API_KEY: served.environment.keys.callerKey }, { PROFILE_EDGE_BEARER_TOKEN: served.environment.keys.outsiderBearer }]) {
      const run = startStdio('sunniva-bratt', env);
      expect(run.status).toBe(unknown.status);
      expect(run.stdout).toBe('');
      expect(run.stderr.replaceAll('sunniva-bratt', 'nobody-here')).toBe(unknown.stderr);
    }
  });
});
