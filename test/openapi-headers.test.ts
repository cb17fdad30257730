import { beforeAll, describe, expect, test } from 'vitest';
import { tempoFetch, useChains, x402Fetch } from './support/Chains.js';

/**
 * The response headers the OpenAPI document publishes, held against live responses of a server on the sandbox's
 * rails: each documented header of each documented status is sent when the case is its own (a rail's challenge on
 * that rail's 402, its receipt on that rail's paid answer, Retry-After on a 429), is absent otherwise, and its value
 * validates against the schema published for it.
 */

const served = useChains({ QUOTE_RATE_LIMIT_PER_MINUTE: '2' });
const question = 'How warm should a sourdough starter be?';

type Schema = Record<string, unknown>;
type Header = { description: string; required?: boolean; schema: Schema };
type Operation = { responses: Record<string, { headers?: Record<string, Header> }> };
let paths: Record<string, Record<string, Operation>>;

beforeAll(async () => {
  paths = ((await (await fetch(`${served.url}/openapi.json`)).json()) as { paths: typeof paths }).paths;
});

/** What the document says a response of an operation carries in its headers. */
const documented = (path: string, method: string, status: number): Record<string, Header> => {
  const response = paths[path]?.[method]?.responses[String(status)];
  expect(response, `${method.toUpperCase()} ${path} documents ${status}`).toBeDefined();
  return response!.headers ?? {};
};

const supported = new Set(['type', 'minimum', 'pattern', 'contentEncoding', 'contentMediaType']);

/**
 * Why a header value does not validate against its schema, or undefined when it does. Header values are strings, so
 * `integer` means the digits of one. Only the keywords the document uses are known; any other fails, so a schema
 * cannot grow a keyword this check would silently skip.
 */
function violation(value: string, schema: Schema): string | undefined {
  const unknown = Object.keys(schema).filter((k) => !supported.has(k));
  if (unknown.length > 0) return `the check does not know ${unknown.join(', ')}`;
  if (schema.type === 'integer') {
    if (!/^\d+$/.test(value)) return 'not an integer';
    if (typeof schema.minimum === 'number' && Number(value) < schema.minimum) return `under ${schema.minimum}`;
    return undefined;
  }
  if (schema.type !== 'string') return `type ${String(schema.type)}`;
  if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) return `does not match ${schema.pattern}`;
  const encoding = schema.contentEncoding;
  if (encoding === undefined) return schema.contentMediaType === undefined ? undefined : 'a media type without an encoding';
  if (encoding !== 'base64' && encoding !== 'base64url') return `encoding ${String(encoding)}`;
  const bytes = Buffer.from(value, encoding);
  // Node decodes leniently: a value is that encoding only if encoding its bytes gives it back.
  if (bytes.toString(encoding) !== value) return `not ${encoding}`;
  if (schema.contentMediaType === 'application/json') {
    try {
      JSON.parse(bytes.toString('utf8'));
    } catch {
      return 'not JSON once decoded';
    }
  }
  return undefined;
}

type Case = { name: string; path: string; method: 'post'; status: number; send: () => Promise<Response>; present: string[] };

const post = (f: typeof fetch, route: string, body: unknown) =>
  f(`${served.url}${route.replace('{slug}', 'mara-lindqvist')}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const queryPaths = ['/api/ask/query', '/api/profiles/{slug}/query'];
const quotePaths = ['/api/ask/quote', '/api/profiles/{slug}/quote'];

/** Each rail's challenge header on its 402, its receipt header on its paid answer, and its real client. */
const rails = [
  { rail: 'tempo', challenge: 'WWW-Authenticate', receipt: 'Payment-Receipt', client: () => tempoFetch(served.sandbox, served.sandbox.payer.key) },
  { rail: 'x402_base', challenge: 'PAYMENT-REQUIRED', receipt: 'PAYMENT-RESPONSE', client: () => x402Fetch(served.sandbox, served.sandbox.payer.key) },
];

const cases: Case[] = [
  ...queryPaths.flatMap((path) =>
    rails.flatMap((r): Case[] => [
      { name: `402 ${r.rail} on ${path}`, path, method: 'post', status: 402, present: [r.challenge], send: () => post(fetch, path, { question, rail: r.rail }) },
      { name: `200 paid on ${r.rail} on ${path}`, path, method: 'post', status: 200, present: [r.receipt], send: () => post(r.client(), path, { question, rail: r.rail }) },
    ]),
  ),
  // Two quotes a minute for this server: the two before each 429 spend the anonymous caller's allowance.
  ...quotePaths.map(
    (path): Case => ({
      name: `429 on ${path}`,
      path,
      method: 'post',
      status: 429,
      present: ['Retry-After'],
      send: async () => {
        let response = await post(fetch, path, { rail: 'tempo' });
        for (let i = 0; i < 2 && response.status !== 429; i++) response = await post(fetch, path, { rail: 'tempo' });
        return response;
      },
    }),
  ),
];

describe('documented response headers, against live responses', () => {
  test.each(cases)('behavior: $name carries what the document says, valid against its schema', async (c) => {
    const response = await c.send();
    const body = await response.text();
    expect(response.status, body).toBe(c.status);
    const headers = documented(c.path, c.method, c.status);
    for (const name of c.present) expect(Object.keys(headers), `${name} is documented`).toContain(name);
    for (const [name, header] of Object.entries(headers)) {
      const value = response.headers.get(name);
      const where = `${c.method.toUpperCase()} ${c.path} ${c.status} ${name}`;
      if (!c.present.includes(name)) {
        expect(header.required, `${where} is documented as always sent`).not.toBe(true);
        expect(value, `${where} is another case's header`).toBeNull();
        continue;
      }
      expect(value, `${where} is sent`).not.toBeNull();
      expect(violation(value!, header.schema), `${where}: ${value}`).toBeUndefined();
    }
  });

  test('behavior: every header the document publishes is one a case above expects to be sent', () => {
    const published = Object.entries(paths).flatMap(([path, operations]) =>
      Object.entries(operations).flatMap(([method, operation]) =>
        Object.entries(operation.responses).flatMap(([status, response]) => Object.keys(response.headers ?? {}).map((name) => `${method.toUpperCase()} ${path} ${status} ${name}`)),
      ),
    );
    const expected = new Set(cases.flatMap((c) => c.present.map((name) => `${c.method.toUpperCase()} ${c.path} ${c.status} ${name}`)));
    expect(published.length).toBeGreaterThanOrEqual(10);
    expect(published.filter((h) => !expected.has(h))).toEqual([]);
  });

  test('error: a value off its schema is told apart', () => {
    expect(violation('0', { type: 'integer', minimum: 1 })).toBe('under 1');
    expect(violation('1.5', { type: 'integer', minimum: 1 })).toBe('not an integer');
    const challenge = paths['/api/ask/query']!.post!.responses['402']!.headers!['WWW-Authenticate']!.schema;
    expect(violation('Bearer realm="x"', challenge)).toMatch(/does not match/);
    expect(violation('Payment id="a", realm="b\\"c"', challenge)).toBeUndefined();
    const required = paths['/api/ask/query']!.post!.responses['402']!.headers!['PAYMENT-REQUIRED']!.schema;
    expect(violation(Buffer.from('not json').toString('base64'), required)).toBe('not JSON once decoded');
    expect(violation('eyJ9', required)).toBe('not JSON once decoded');
    const receipt = paths['/api/ask/query']!.post!.responses['200']!.headers!['Payment-Receipt']!.schema;
    expect(violation(Buffer.from('{"a":1}').toString('base64url'), receipt)).toBeUndefined();
    expect(violation('e30=', receipt)).toMatch(/does not match/);
    expect(violation('x', { type: 'string', format: 'uri' })).toBe('the check does not know format');
  });
});

describe('MCP endpoints and 401', () => {
  test('behavior: a bad credential on an MCP endpoint is never answered 401, and the document promises none', async () => {
    const { revokedKey } = served.environment.keys;
    for (const key of [revokedKey, 'pek_malformed']) {
      const get = (path: string) => fetch(`${served.url}${path}`, { headers: { 'service-api-key': key } });
      expect((await get('/mcp')).status).toBe(200);
      expect((await get('/mara-lindqvist/mcp')).status).toBe(200);
      // A private profile these credentials cannot read is 404, never 401.
      expect((await get('/sunniva-bratt/mcp')).status).toBe(404);
    }
    for (const path of ['/mcp', '/{slug}/mcp']) {
      for (const method of ['get', 'post']) expect(Object.keys(paths[path]![method]!.responses), `${method} ${path}`).not.toContain('401');
    }
  });
});
