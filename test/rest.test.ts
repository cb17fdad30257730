import fs from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../src/config/Config.js';
import { ErrorBody, Health, Home } from '../src/contract/Contract.js';
import { version } from '../src/Version.js';
import * as Environment from './support/Environment.js';

const served = Environment.useServed();

const send = (path: string, init: RequestInit = {}) => fetch(`${served.url}${path}`, init);

describe('GET /health', () => {
  test('behavior: answers ok, service and environment, and names each dependency it checked', async () => {
    const response = await send('/health');
    expect(response.status).toBe(200);
    const body = (await response.json()) as any;
    expect(Health.parse(body)).toEqual({ ok: true, service: 'profile-edge', environment: 'test', dependencies: { database: { ok: true } } });
  });
});

describe('GET /', () => {
  test('behavior: a browser sees what the server is, its version, and links to the directory, MCP, OpenAPI and SKILL.md', async () => {
    const response = await send('/', { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    // One address, two representations: a cache keeps them apart.
    expect(response.headers.get('vary')).toMatch(/Accept/);
    const page = await response.text();
    expect(page).toContain(`profile-edge <small>${version}</small>`);
    for (const href of ['/api/profiles', '/mcp', '/openapi.json', '/SKILL.md']) {
      expect(page).toContain(`href="${href}"`);
      // Every link it shows is served.
      expect((await send(href)).status, href).toBe(200);
    }
  });

  test('behavior: a script gets the same as JSON', async () => {
    for (const accept of [undefined, '*/*', 'application/json']) {
      const response = await send('/', { headers: accept ? { accept } : {} });
      expect(response.status).toBe(200);
      const home = Home.parse(await response.json());
      expect(home).toMatchObject({ name: 'profile-edge', version });
      expect(home.links.map((l) => l.href)).toEqual(expect.arrayContaining(['/api/profiles', '/mcp', '/openapi.json', '/SKILL.md']));
    }
  });
});

describe('GET /openapi.json', () => {
  test("behavior: is a valid OpenAPI 3.1.0 document at package.json's version", async () => {
    const document = (await (await send('/openapi.json')).json()) as any;
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(document.openapi).toBe('3.1.0');
    const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string };
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(document.info.version).toBe(pkg.version);
    expect(version).toBe(pkg.version);
  });

  test('behavior: describes every served path and no unserved one', async () => {
    const document = (await (await send('/openapi.json')).json()) as any;
    expect(Object.keys(document.paths).sort()).toEqual(
      ['/', '/health', '/ready', '/api/profiles', '/api/profiles/{slug}/channels', '/api/profiles/{slug}/quote', '/api/ask/quote', '/api/ask/query', '/api/profiles/{slug}/query', '/mcp', '/{slug}/mcp'].sort(),
    );
    expect(document.paths['/api/profiles/{slug}/quote'].post.responses['429'].headers['Retry-After'].schema).toEqual({ type: 'integer', minimum: 1 });
    // Strict contract objects stay strict in the published schema, nested ones too.
    const channels = document.paths['/api/profiles/{slug}/channels'].get.responses['200'].content['application/json'].schema;
    expect(channels.additionalProperties).toBe(false);
    expect(channels.properties.channels.items.additionalProperties).toBe(false);
  });
});

describe('the directory', () => {
  test('behavior: shows only public profiles, even when a private or unlisted one is opted in', async () => {
    const { peek } = served.environment;
    // The store refuses this state; force it to check the directory does not rely on that alone.
    await peek.run("UPDATE profiles SET directory_opt_in = 1 WHERE slug IN ('sunniva-bratt', 'declan-aubury')");
    try {
      const body = (await (await send('/api/profiles')).json()) as any;
      expect(body.data.map((p: { slug: string }) => p.slug)).toEqual(['mara-lindqvist', 'nadia-ferreira-holm', 'owen-halvorsen']);
    } finally {
      await peek.run("UPDATE profiles SET directory_opt_in = 0 WHERE slug IN ('sunniva-bratt', 'declan-aubury')");
    }
  });
});

describe('GET /SKILL.md', () => {
  test('behavior: serves the skill as markdown, covering when not to use the service', async () => {
    const response = await send('/SKILL.md');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/markdown/);
    const text = await response.text();
    for (const phrase of ['profile_list_channels', 'profile_quote', 'profileUrl', 'service-api-key', 'When not to use']) expect(text).toContain(phrase);
  });
});

describe('bad input', () => {
  const requests: [string, string, RequestInit, number, string][] = [
    ['malformed JSON', '/api/ask/quote', { method: 'POST', body: '{"rail":' }, 400, 'invalid_json'],
    ['a JSON string body', '/api/ask/quote', { method: 'POST', body: '"tempo"' }, 400, 'invalid_request'],
    ['a JSON number body', '/api/ask/query', { method: 'POST', body: '42' }, 400, 'invalid_request'],
    ['a JSON array body', '/api/ask/query', { method: 'POST', body: '[1,2]' }, 400, 'invalid_request'],
    ['a directory path under /skill', '/skill', {}, 404, 'not_found'],
    ['a JSON array body', '/api/ask/quote', { method: 'POST', body: '["tempo"]' }, 400, 'invalid_request'],
    ['a null rail', '/api/ask/quote', { method: 'POST', body: '{"rail":null}' }, 400, 'invalid_rail'],
    ['an oversize body', '/api/ask/quote', { method: 'POST', body: JSON.stringify({ rail: 'x'.repeat(100_000) }) }, 413, 'payload_too_large'],
    ['a body with a text content type', '/api/ask/quote', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"rail":"nope"}' }, 400, 'invalid_rail'],
    ['an unknown path', '/api/nothing', {}, 404, 'not_found'],
    ['a malformed percent-encoded path', '/api/profiles/%00%ff/channels', {}, 400, 'invalid_request'],
    ['an odd slug', '/api/profiles/%2e%2e%2f%2e%2e/channels', {}, 404, 'not_found'],
    ['an odd per-profile MCP slug', '/%E2%98%83/mcp', {}, 404, 'not_found'],
    ['a wrong method on channels', '/api/profiles/mara-lindqvist/channels', { method: 'DELETE' }, 405, 'method_not_allowed'],
    ['a GET on a quote path', '/api/ask/quote', {}, 405, 'method_not_allowed'],
    ['a wrong method on a per-profile MCP endpoint', '/mara-lindqvist/mcp', { method: 'PUT' }, 405, 'method_not_allowed'],
    ['a limit that is not a number', '/api/profiles?limit=ten', {}, 400, 'invalid_limit'],
    ['a limit of zero', '/api/profiles?limit=0', {}, 400, 'invalid_limit'],
    ['a repeated limit', '/api/profiles?limit=1&limit=2', {}, 400, 'invalid_limit'],
    ['an empty API key header', '/api/profiles', { headers: { 'service-api-key': '' } }, 401, 'invalid_api_key'],
    ['an empty bearer token', '/api/profiles', { headers: { authorization: 'Bearer ' } }, 401, 'invalid_bearer_token'],
    ['a body claiming gzip that is not', '/api/ask/quote', { method: 'POST', headers: { 'content-encoding': 'gzip' }, body: 'garbage' }, 400, 'invalid_request'],
    ['an unknown content encoding', '/api/ask/quote', { method: 'POST', headers: { 'content-encoding': 'compress' }, body: '{}' }, 415, 'unsupported_media_type'],
    ['a JSON body nested too deep', '/api/ask/quote', { method: 'POST', body: `${'['.repeat(5000)}${']'.repeat(5000)}` }, 400, 'invalid_request'],
    ['an MCP body nested too deep', '/mcp', { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { x: JSON.parse(`${'['.repeat(3000)}${']'.repeat(3000)}`) } }) }, 400, ''],
    ['a range past the end of SKILL.md', '/SKILL.md', { headers: { range: 'bytes=99999999-' } }, 416, 'range_not_satisfiable'],
  ];

  test.each(requests)('error: %s gets the Error body, never a 500, and changes nothing', async (_name, path, init, status, code) => {
    const before = await served.environment.peek.snapshot();
    const response = await send(path, init);
    expect(response.status).toBe(status);
    const body = (await response.json()) as any;
    // MCP endpoints answer malformed bodies with a JSON-RPC envelope instead.
    if (code === '') expect(body).toMatchObject({ jsonrpc: '2.0', error: { data: { error: 'invalid_request' } } });
    else expect(ErrorBody.parse(body).error).toBe(code);
    expect(await served.environment.peek.snapshot()).toEqual(before);
  });

  test('error: 405 names the allowed methods', async () => {
    const response = await send('/api/profiles/mara-lindqvist/channels', { method: 'POST' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
  });

  test('behavior: a quote body may be omitted, empty, or {} with a key', async () => {
    for (const body of [undefined, '', '{}']) {
      const response = await send('/api/ask/quote', { method: 'POST', headers: { 'service-api-key': served.environment.keys.callerKey }, body });
      expect(response.status).toBe(200);
      expect(((await response.json()) as any).rail).toBe('api_key');
    }
  });

  test('behavior: the API key is never written to the log', async () => {
    const lines: string[] = [];
    const { create } = await import('../src/log/Logger.js');
    const services = { ...served.environment.services, logger: create({ level: 'debug', write: (l) => lines.push(l) }) };
    const { listen, close } = await import('../src/transport/http/Server.js');
    const server = await listen(services, { host: '127.0.0.1', port: 0 });
    try {
      await fetch(`${server.url}/api/ask/quote`, { method: 'POST', headers: { 'service-api-key': served.environment.keys.callerKey } });
      await fetch(`${server.url}/api/profiles`, { headers: { authorization: `Bearer ${served.environment.keys.kaiBearer}` } });
      await fetch(`${server.url}/api/profiles`, { headers: { 'service-api-key': 'pek_bogus' } });
    } finally {
      await close(server.server);
    }
    expect(lines.length).toBeGreaterThan(0);
    const log = lines.join('\n');
    expect(log).not.toContain(served.environment.keys.callerKey);
    expect(log).not.toContain(served.environment.keys.kaiBearer.slice(21));
    expect(log).not.toContain('pek_bogus');
  });
});
