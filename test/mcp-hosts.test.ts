import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, test } from 'vitest';
import { ErrorBody } from '../src/contract/Contract.js';
import * as Config from '../src/config/Config.js';
import * as App from '../src/transport/http/App.js';
import * as Environment from './support/Environment.js';

const served = Environment.useServed();

/** A request with any Host header (fetch always sends the URL's own). */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: options.method ?? 'GET', headers: options.headers }, (response) => {
      let text = '';
      response.on('data', (d) => (text += d));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

const unknownKey = `pek_0123456789abcdef_${'A'.repeat(43)}`;

/** The SDK's Streamable HTTP client, as MCP hosts use it, with the given headers. */
async function connect(path: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'host-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}${path}`), { requestInit: { headers } }));
  return client;
}

describe('MCP over HTTP with a bad API key', () => {
  const badKeys: [string, string, RegExp][] = [
    ['a malformed key', 'not-a-key', /is malformed: expected pek_/],
    ['an empty key', '', /is present but empty/],
    ['a well-formed unknown key', unknownKey, /unknown to this server, or it was revoked/],
  ];

  test.each(badKeys)('behavior: with %s, initialize, ping and tools/list work and a tool call says exactly what is wrong', async (_name, key, message) => {
    const before = await served.environment.peek.snapshot();
    const client = await connect('/mcp', { 'service-api-key': key });
    await client.ping();
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['profile_list_channels', 'profile_quote', 'profile_query']);
    const result = (await client.callTool({ name: 'profile_query', arguments: { question: 'How warm should a starter be?', paymentMode: 'credits' } })) as any;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: 'invalid_api_key', status: 401 });
    expect(result.structuredContent.message).toMatch(message);
    expect(result.structuredContent.message).not.toMatch(/missing/);
    expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent);
    await client.close();
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('behavior: a revoked key reads as unknown or revoked, never as missing', async () => {
    const client = await connect('/mara-lindqvist/mcp', { 'service-api-key': served.environment.keys.revokedKey });
    const result = (await client.callTool({ name: 'profile_query', arguments: { question: 'How warm should a starter be?', paymentMode: 'credits' } })) as any;
    expect(result.structuredContent).toMatchObject({ error: 'invalid_api_key', message: expect.stringMatching(/revoked/) });
    await client.close();
  });

  test('behavior: a free tool answers despite a bad key, and says what is wrong with it', async () => {
    const before = await served.environment.peek.snapshot();
    const client = await connect('/mara-lindqvist/mcp', { 'service-api-key': served.environment.keys.revokedKey });
    const listed = (await client.callTool({ name: 'profile_list_channels', arguments: {} })) as any;
    expect(listed.isError).toBeFalsy();
    expect(listed.structuredContent.slug).toBe('mara-lindqvist');
    expect(JSON.parse(listed.content[0].text)).toEqual(listed.structuredContent);
    expect(listed.content[1].text).toMatch(/^Note: The service-api-key header is well formed but unknown to this server, or it was revoked\. It was ignored/);
    expect(listed._meta['profile-edge/credential']).toMatchObject({ error: 'invalid_api_key' });
    // A quote without the key it meant to send needs a rail, and the note says why.
    const quoted = (await client.callTool({ name: 'profile_quote', arguments: {} })) as any;
    expect(quoted.structuredContent).toMatchObject({ error: 'missing_rail' });
    expect(quoted.content[1].text).toMatch(/^Note: The service-api-key header/);
    await client.close();
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('behavior: a free tool on a private profile with a bad key is the anonymous answer (404), with the note', async () => {
    const client = await connect('/mcp', { 'service-api-key': 'nope' });
    const result = (await client.callTool({ name: 'profile_list_channels', arguments: { slug: 'sunniva-bratt' } })) as any;
    expect(result.structuredContent).toMatchObject({ error: 'not_found', status: 404 });
    expect(result.content[1].text).toMatch(/malformed/);
    await client.close();
  });

  test('behavior: a missing key on a paid tool says it is missing', async () => {
    const client = await connect('/mcp', {});
    const result = (await client.callTool({ name: 'profile_query', arguments: { question: 'How warm should a starter be?', paymentMode: 'credits' } })) as any;
    expect(result.structuredContent).toMatchObject({ error: 'api_key_required', message: expect.stringMatching(/needs a payment: an API key \(the service-api-key header.*or rail/) });
    await client.close();
  });

  test('behavior: free tools work without credentials', async () => {
    const client = await connect('/mara-lindqvist/mcp', {});
    const result = (await client.callTool({ name: 'profile_list_channels', arguments: {} })) as any;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent.slug).toBe('mara-lindqvist');
    await client.close();
  });

  test('behavior: a direct tool method with a bad key is a JSON-RPC error whose data.error is the code', async () => {
    const response = await fetch(`${served.url}/mcp`, {
      method: 'POST',
      headers: { 'service-api-key': unknownKey },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'profile_quote', params: {} }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as any;
    expect(body.error).toMatchObject({ code: -32001, data: { error: 'invalid_api_key', status: 401 } });
  });

  test('behavior: GET of a manifest with a bad key is the manifest, never 401 (mcp-remote probes GET /mcp first)', async () => {
    for (const [path, slug] of [['/mcp', 'global'], ['/mara-lindqvist/mcp', 'mara-lindqvist']]) {
      const response = await fetch(`${served.url}${path}`, { headers: { 'service-api-key': 'nope', accept: 'application/json, text/event-stream' } });
      expect(response.status, path).toBe(200);
      expect(((await response.json()) as any).profile.slug).toBe(slug);
    }
    const hidden = await fetch(`${served.url}/sunniva-bratt/mcp`, { headers: { 'service-api-key': unknownKey } });
    expect(hidden.status).toBe(404);
    expect(ErrorBody.parse(await hidden.json()).message).toMatch(/^no profile "sunniva-bratt"\. Also: The service-api-key header is well formed but unknown/);
  });

  test('error: a private profile with a bad key is 404 that also names the key problem', async () => {
    const response = await fetch(`${served.url}/sunniva-bratt/mcp`, {
      method: 'POST',
      headers: { 'service-api-key': 'nope' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(404);
    const body = ErrorBody.parse(await response.json());
    expect(body).toMatchObject({ error: 'not_found', message: expect.stringMatching(/^no profile "sunniva-bratt"\. Also: The service-api-key header is malformed/) });
    // The same words for a slug that does not exist: existence never leaks.
    const unknown = await fetch(`${served.url}/nobody-here/mcp`, { method: 'POST', headers: { 'service-api-key': 'nope' }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' });
    expect(ErrorBody.parse(await unknown.json()).message).toBe(body.message!.replace('sunniva-bratt', 'nobody-here'));
  });
});

describe('DNS-rebinding protection', () => {
  const post = (path: string, headers: Record<string, string>) =>
    send(`${served.url}${path}`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });

  test('error: a foreign Host on the loopback server is 403 on MCP, REST and health alike', async () => {
    const before = await served.environment.peek.snapshot();
    const rpc = await post('/mcp', { host: 'evil.example.com', origin: 'http://evil.example.com' });
    expect(rpc.status).toBe(403);
    expect(ErrorBody.parse(rpc.body)).toMatchObject({ error: 'forbidden_host', message: expect.stringContaining('evil.example.com') });
    for (const path of ['/health', '/api/profiles', '/mcp', '/SKILL.md']) {
      const response = await send(`${served.url}${path}`, { headers: { host: 'evil.example.com' } });
      expect(response.status, path).toBe(403);
      expect(ErrorBody.parse(response.body)).toMatchObject({ error: 'forbidden_host', message: expect.stringContaining('ALLOWED_HOSTS') });
    }
    const query = await send(`${served.url}/api/ask/query`, {
      method: 'POST',
      headers: { host: 'rebound.example.net:3000', 'service-api-key': served.environment.keys.callerKey },
      body: JSON.stringify({ question: 'How warm should a starter be?', paymentMode: 'credits' }),
    });
    expect(query.status).toBe(403);
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('error: a foreign Origin is 403 even with a loopback Host', async () => {
    for (const origin of ['http://evil.example.com', 'https://localhost.evil.example.com', 'null', 'file://']) {
      const response = await post('/mcp', { origin });
      expect(response.status, origin).toBe(403);
      expect(ErrorBody.parse(response.body).error).toBe('forbidden_origin');
    }
    const rest = await fetch(`${served.url}/api/profiles`, { headers: { origin: 'http://evil.example.com' } });
    expect(ErrorBody.parse(await rest.json()).error).toBe('forbidden_origin');
  });

  test('behavior: loopback hosts, the server\'s own origin, and requests without Origin are served', async () => {
    const port = new URL(served.url).port;
    for (const headers of <Record<string, string>[]>[{}, { origin: served.url }, { host: `localhost:${port}`, origin: `http://localhost:${port}` }, { host: `localhost:${port}` }, { host: `127.0.0.2:${port}` }]) {
      const response = await post('/mcp', headers);
      expect(response.status, JSON.stringify(headers)).toBe(200);
    }
  });

  test('error: other loopback origins (another port, *.localhost) are 403 by default, and get no CORS headers', async () => {
    const port = Number(new URL(served.url).port);
    for (const origin of ['http://localhost:5173', `http://127.0.0.1:${port + 1}`, `http://app.localhost:${port}`, 'https://[::1]:8443']) {
      const response = await post('/mcp', { origin });
      expect(response.status, origin).toBe(403);
      expect(ErrorBody.parse(response.body).error).toBe('forbidden_origin');
    }
    const paid = await fetch(`${served.url}/api/ask/query`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'payment-signature' },
    });
    expect(paid.status).toBe(403);
    expect(paid.headers.get('access-control-allow-origin')).toBeNull();
    expect(paid.headers.get('access-control-expose-headers')).toBeNull();
  });
});

/** Serves the test environment's services with other allow-lists, as if started with other settings. */
async function servedWith(env: Record<string, string>, listenHost: string): Promise<{ url: string; close(): Promise<void> }> {
  const config = Config.load({ ...served.environment.env, ...env });
  const app = App.create({ ...served.environment.services, config }, { listenHost });
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('ALLOWED_ORIGINS and ALLOWED_HOSTS', () => {
  test('behavior: a listed origin is served, any port when the entry has none, and others still refused', async () => {
    const s = await servedWith({ ALLOWED_ORIGINS: 'https://app.example.com, http://tools.example.org:8080' }, '127.0.0.1');
    const status = async (origin: string) => (await fetch(`${s.url}/health`, { headers: { origin } })).status;
    expect(await status('https://app.example.com')).toBe(200);
    expect(await status('https://app.example.com:444')).toBe(200);
    expect(await status('http://tools.example.org:8080')).toBe(200);
    expect(await status('http://tools.example.org:8081')).toBe(403);
    expect(await status('http://app.example.com')).toBe(403);
    // Only what is listed: a loopback page is not.
    expect(await status('http://localhost:5173')).toBe(403);
    await s.close();
  });

  test('behavior: * allows any origin only when the operator says so', async () => {
    const s = await servedWith({ ALLOWED_ORIGINS: '*' }, '127.0.0.1');
    expect((await fetch(`${s.url}/health`, { headers: { origin: 'https://anything.example' } })).status).toBe(200);
    await s.close();
  });

  test('behavior: a server listening beyond loopback checks Host only when ALLOWED_HOSTS is set', async () => {
    const open = await servedWith({}, '0.0.0.0');
    expect((await send(`${open.url}/health`, { headers: { host: 'profiles.example.com' } })).status).toBe(200);
    expect((await send(`${open.url}/health`, { headers: { origin: 'https://profiles.example.com' } })).status).toBe(403);
    await open.close();
    const listed = await servedWith({ ALLOWED_HOSTS: 'profiles.example.com', ALLOWED_ORIGINS: 'https://profiles.example.com' }, '0.0.0.0');
    expect((await send(`${listed.url}/health`, { headers: { host: 'profiles.example.com' } })).status).toBe(200);
    expect((await send(`${listed.url}/health`, { headers: { host: 'other.example.com' } })).status).toBe(403);
    expect((await send(`${listed.url}/health`, { headers: { host: 'profiles.example.com', origin: 'https://profiles.example.com' } })).status).toBe(200);
    await listed.close();
  });

  test('behavior: an allowed browser origin gets CORS headers, preflights included', async () => {
    const s = await servedWith({ ALLOWED_ORIGINS: 'https://app.example.com' }, '127.0.0.1');
    const preflight = await fetch(`${s.url}/api/ask/query`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, service-api-key' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET,POST');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('service-api-key');
    const actual = await fetch(`${s.url}/api/profiles?limit=1`, { headers: { origin: 'https://app.example.com' } });
    expect(actual.status).toBe(200);
    expect(actual.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(actual.headers.get('vary')).toContain('Origin');
    // A refused origin gets no CORS headers, and its preflight is refused too.
    const refused = await fetch(`${s.url}/api/ask/query`, { method: 'OPTIONS', headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    await s.close();
  });

  test('behavior: *. entries match any subdomain, not the bare name; ports and case are read as browsers send them', async () => {
    const s = await servedWith({ ALLOWED_ORIGINS: 'https://*.example.com, HTTP://Tools.Example.org:80', ALLOWED_HOSTS: '*.example.com, api.example.net:8443' }, '127.0.0.1');
    const origin = async (value: string) => (await send(`${s.url}/health`, { headers: { origin: value } })).status;
    expect(await origin('https://app.example.com')).toBe(200);
    expect(await origin('https://a.b.example.com:444')).toBe(200);
    expect(await origin('https://example.com')).toBe(403);
    expect(await origin('https://evilexample.com')).toBe(403);
    expect(await origin('http://tools.example.org')).toBe(200);
    expect(await origin('http://tools.example.org:8080')).toBe(403);
    const host = async (value: string) => (await send(`${s.url}/health`, { headers: { host: value } })).status;
    expect(await host('api.example.com')).toBe(200);
    expect(await host('API.Example.com.')).toBe(200);
    expect(await host('example.com')).toBe(403);
    expect(await host('api.example.net:8443')).toBe(200);
    expect(await host('api.example.net:8080')).toBe(403);
    // Loopback names are always served, so local health checks keep working.
    expect(await host(`127.0.0.1:${new URL(s.url).port}`)).toBe(200);
    expect(await host('localhost')).toBe(200);
    await s.close();
  });

  test.each([
    ['ALLOWED_ORIGINS', 'app.example.com'],
    ['ALLOWED_ORIGINS', 'https://app.*.com'],
    ['ALLOWED_HOSTS', 'api.*.example.com'],
    ['ALLOWED_ORIGINS', 'https://app.example.com/path'],
    ['ALLOWED_ORIGINS', 'ftp://files.example.com'],
    ['ALLOWED_HOSTS', 'https://api.example.com'],
    ['ALLOWED_HOSTS', 'api.example.com/x'],
  ])('error: %s=%s is refused at start with a readable message', (name, value) => {
    expect(() => Config.load({ [name]: value })).toThrow(new RegExp(`${name}: "${value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}" is not`));
  });
});

describe('JSON-RPC shapes real clients send', () => {
  const rpc = async (body: string) => {
    const response = await fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: response.status, body: (await response.json()) as any };
  };

  test.each([
    ['initialize without params', '{"jsonrpc":"2.0","id":1,"method":"initialize"}', /^invalid initialize request: params/],
    ['tools/call with a numeric name', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}', /^invalid tools\/call request: params\.name/],
    ['tools/call without params', '{"jsonrpc":"2.0","id":1,"method":"tools/call"}', /^invalid tools\/call request: params/],
    ['tools/list with a numeric cursor', '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}', /^invalid tools\/list request: params\.cursor/],
    ['a direct call whose params are a string', '{"jsonrpc":"2.0","id":1,"method":"profile_quote","params":"x"}', /invalid|object/],
  ])('error: %s is invalid params (-32602), not an internal error', async (_name, body, message) => {
    const answer = await rpc(body);
    expect(answer.body.error).toMatchObject({ code: -32602, data: { error: 'invalid_request', status: 400 } });
    expect(answer.body.error.message).toMatch(message);
  });

  test('error: a batch that repeats a request id is refused whole, so no request runs unanswered', async () => {
    const before = await served.environment.peek.snapshot();
    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'profile_query', arguments: { question: 'How warm should a starter be?', paymentMode: 'credits' } } },
    ]);
    const response = await fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'service-api-key': served.environment.keys.callerKey }, body });
    expect(response.status).toBe(400);
    expect(((await response.json()) as any).error).toMatchObject({ code: -32600, data: { error: 'invalid_request', message: expect.stringContaining('used twice') } });
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('behavior: a JSON-RPC notification naming a tool is not run, so nothing is charged', async () => {
    const before = await served.environment.peek.snapshot();
    const response = await fetch(`${served.url}/mcp`, {
      method: 'POST',
      headers: { 'service-api-key': served.environment.keys.callerKey },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'profile_query', params: { question: 'How warm should a starter be?', paymentMode: 'credits' } }),
    });
    expect(response.status).toBe(202);
    expect(await response.text()).toBe('');
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('behavior: both bad credentials are named', async () => {
    const client = await connect('/mcp', { 'service-api-key': 'nope', authorization: 'Bearer nope' });
    const result = (await client.callTool({ name: 'profile_query', arguments: { question: 'How warm should a starter be?', paymentMode: 'credits' } })) as any;
    expect(result.structuredContent.message).toMatch(/^The bearer token is malformed.*The service-api-key header is malformed/);
    await client.close();
  });

  test('behavior: a batch is answered with an array, even of one', async () => {
    const one = await rpc('[{"jsonrpc":"2.0","id":1,"method":"ping"}]');
    expect(one.body).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    const two = await rpc('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"nope"}]');
    expect(two.body).toHaveLength(2);
    expect(two.body.find((a: { id: number }) => a.id === 2).error).toMatchObject({ code: -32601, data: { error: 'method_not_found' } });
  });
});

describe('malformed HTTP framing', () => {
  /** Sends raw bytes and reads until the server closes the connection. */
  function raw(bytes: string): Promise<string> {
    const { port } = new URL(served.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.end(bytes));
      let received = '';
      socket.on('data', (d) => (received += d.toString()));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
  }

  test.each([
    ['duplicate Content-Length', 'POST /api/ask/quote HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400, 'invalid_request'],
    ['bad chunking', 'POST /api/ask/quote HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400, 'invalid_request'],
    ['a NUL in a header', 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\0b\r\n\r\n', 400, 'invalid_request'],
    ['an HTTP/1.1 request without Host', 'GET /health HTTP/1.1\r\n\r\n', 400, 'invalid_request'],
    ['an HTTP/1.1 request with an empty Host', 'GET /health HTTP/1.1\r\nHost:\r\n\r\n', 400, 'invalid_request'],
    ['oversized headers', `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
  ])('error: %s gets the Error body', async (_name, bytes, status, code) => {
    const response = await raw(bytes);
    const [head, body] = response.split('\r\n\r\n');
    expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
    expect(head).toContain('Content-Type: application/json');
    expect(ErrorBody.parse(JSON.parse(body!))).toMatchObject({ error: code, message: expect.any(String) });
  });
});

/**
 * Sends raw bytes on one connection and reads until the server closes it. The sending side is closed after them unless
 * `halfClose` is false: Node drops a request whose client half-closed before it was answered.
 */
function rawExchange(bytes: string, options: { halfClose?: boolean } = {}): Promise<string> {
  const { port } = new URL(served.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => (options.halfClose === false ? socket.write(bytes) : socket.end(bytes)));
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

test('behavior: an HTTP/1.0 request without Host is served (no browser omits Host), but its Origin is still checked', async () => {
  // An HTTP/1.0 client reads until the server closes; the health check's database ping may take a round trip.
  const http10 = (bytes: string) => rawExchange(bytes, { halfClose: false });
  expect(await http10('GET /health HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1.1 200 /);
  expect(await http10('GET /health HTTP/1.0\r\nOrigin: http://evil.example.com\r\n\r\n')).toMatch(/^HTTP\/1.1 403 [\s\S]*forbidden_origin/);
});

test('behavior: a malformed request pipelined after a good one closes the connection instead of answering in its place', async () => {
  // The first request is answered asynchronously (a tool call), so its response is still pending when the second fails.
  const first = 'POST /api/ask/quote HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{"rail":"tempo"}\n';
  const response = await rawExchange(`${first}GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\0b\r\n\r\n`);
  expect(response).not.toContain('not well-formed');
  if (response !== '') expect(response).toMatch(/^HTTP\/1.1 200 [\s\S]*"rail":"tempo"/);
});

describe('a bearer token on its own private profile', () => {
  test('behavior: the query is charged to the bearer account, once', async () => {
    const store = served.environment.services.store;
    const before = (await store.accounts.get('sunniva')).creditBalance;
    const response = await fetch(`${served.url}/api/profiles/sunniva-bratt/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${served.environment.keys.sunnivaBearer}` },
      body: JSON.stringify({ question: 'How should discovery interviews be run?', paymentMode: 'credits' }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as any).charge).toBe('credits');
    expect((await store.accounts.get('sunniva')).creditBalance).toBe(before - served.environment.services.config.pricing.costCredits);
  });
});
