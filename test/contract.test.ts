import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { z } from 'zod';
import { ApiKeyQuote, DirectoryPage, ErrorBody, OnchainQuote, ProfileChannels, QueryResponse, RawQueryResponse } from '../src/contract/Contract.js';
import type { ToolName } from '../src/contract/Mcp.js';
import * as Upload from '../src/ingest/Upload.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import type { Binding } from '../tools/Tools.js';
import * as Environment from './support/Environment.js';
import type { Keys } from './support/Environment.js';
import * as Transports from './support/Transports.js';
import type { Credentials, Outcome, Transport, TransportName } from './support/Transports.js';

/**
 * The contract suite: every case runs through the tool handler, REST with fetch, and MCP over HTTP and stdio with
 * the official SDK client, and must give the same payload or the same error mapping on each.
 */

type Case = {
  name: string;
  tool: ToolName;
  binding: Binding;
  args?: Record<string, unknown>;
  as?: (keys: Keys) => Credentials;
  /** Transports that cannot express the case (a REST GET has no body; stdio binds its profile at start). */
  skip?: TransportName[];
  /** Payload fields that differ on every call (a query's id), left out of the cross-transport comparison. */
  volatile?: string[];
} & (
  | { status: 200; schema: z.ZodTypeAny; check?: (payload: Record<string, unknown>) => void }
  | { status: number; error: string; check?: (body: Record<string, unknown>) => void }
);

const global: Binding = { kind: 'global' };

/** Names an object inherits from Object.prototype: a lookup that does not check own keys finds something for each. */
const prototypeNames = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__'];
/** Arguments with one more own field (`__proto__` too, as JSON.parse makes it, not as a literal would set it). */
const withField = (args: Record<string, unknown>, field: string): Record<string, unknown> => JSON.parse(JSON.stringify(args).replace(/^\{/, `{${JSON.stringify(field)}:1,`));
const profile = (slug: string): Binding => ({ kind: 'profile', slug });
const slugs = (payload: Record<string, unknown>) => (payload.data as { slug: string }[]).map((p) => p.slug);
const channelIds = (payload: Record<string, unknown>) => (payload.channels as { id: string }[]).map((c) => c.id);

const cases: Case[] = [
  // The directory
  {
    name: 'directory lists public opted-in profiles only, each with channels and endpoints',
    tool: 'profile_list_channels',
    binding: global,
    status: 200,
    schema: DirectoryPage,
    check: (p) => {
      expect(slugs(p)).toEqual(['mara-lindqvist', 'nadia-ferreira-holm', 'owen-halvorsen']);
      expect(p.nextCursor).toBeUndefined();
      const owen = (p.data as { slug: string; channels: { id: string }[]; endpoints: unknown }[]).find((r) => r.slug === 'owen-halvorsen')!;
      expect(owen.channels.map((c) => c.id)).not.toContain('ch_owen_members');
      expect(owen.endpoints).toEqual({
        channels: '/api/profiles/owen-halvorsen/channels',
        quote: '/api/profiles/owen-halvorsen/quote',
        query: '/api/profiles/owen-halvorsen/query',
        mcp: '/owen-halvorsen/mcp',
      });
    },
  },
  {
    name: 'directory pages with limit and returns nextCursor until the last page',
    tool: 'profile_list_channels',
    binding: global,
    args: { limit: 2 },
    status: 200,
    schema: DirectoryPage,
    check: (p) => {
      expect(slugs(p)).toEqual(['mara-lindqvist', 'nadia-ferreira-holm']);
      expect(p.nextCursor).toBe('2');
    },
  },
  {
    name: 'directory last page omits nextCursor',
    tool: 'profile_list_channels',
    binding: global,
    args: { limit: 2, cursor: '2' },
    status: 200,
    schema: DirectoryPage,
    check: (p) => {
      expect(slugs(p)).toEqual(['owen-halvorsen']);
      expect('nextCursor' in p).toBe(false);
    },
  },
  {
    name: 'directory past the end is an empty page',
    tool: 'profile_list_channels',
    binding: global,
    args: { cursor: '50' },
    status: 200,
    schema: DirectoryPage,
    check: (p) => expect(p).toEqual({ data: [] }),
  },
  {
    name: 'directory never shows the private profile, even to its owner',
    tool: 'profile_list_channels',
    binding: global,
    as: (k) => ({ bearerToken: k.sunnivaBearer }),
    status: 200,
    schema: DirectoryPage,
    check: (p) => expect(slugs(p)).not.toContain('sunniva-bratt'),
  },
  { name: 'limit 0 is 400', tool: 'profile_list_channels', binding: global, args: { limit: 0 }, status: 400, error: 'invalid_limit' },
  { name: 'limit 101 is 400', tool: 'profile_list_channels', binding: global, args: { limit: 101 }, status: 400, error: 'invalid_limit' },
  { name: 'a non-integer limit is 400', tool: 'profile_list_channels', binding: global, args: { limit: 2.5 }, status: 400, error: 'invalid_limit' },
  { name: 'a cursor not issued by the service is 400', tool: 'profile_list_channels', binding: global, args: { cursor: 'abc' }, status: 400, error: 'invalid_cursor' },
  { name: 'a negative cursor is 400', tool: 'profile_list_channels', binding: global, args: { cursor: '-1' }, status: 400, error: 'invalid_cursor' },
  {
    name: 'an unknown argument is 400',
    tool: 'profile_list_channels',
    binding: global,
    args: { limit: 5, verbose: true },
    status: 400,
    error: 'invalid_request',
    skip: ['rest'],
    check: (b) => expect(b.message).toContain('verbose'),
  },
  {
    name: 'arguments on a per-profile listing are 400',
    tool: 'profile_list_channels',
    binding: profile('mara-lindqvist'),
    args: { slug: 'owen-halvorsen' },
    status: 400,
    error: 'invalid_request',
    skip: ['rest'],
  },

  {
    name: 'a directory field on a per-profile listing is named as a field it does not take, not as a bad value',
    tool: 'profile_list_channels',
    binding: profile('mara-lindqvist'),
    args: { limit: 2 },
    status: 400,
    error: 'invalid_request',
    skip: ['rest'],
    check: (body) => expect(body.message).toBe('unknown field: limit'),
  },

  // One profile's channels
  {
    name: 'a public profile lists its public channels with the pricing constants',
    tool: 'profile_list_channels',
    binding: profile('owen-halvorsen'),
    status: 200,
    schema: ProfileChannels,
    check: (p) => {
      expect(p).toMatchObject({ slug: 'owen-halvorsen', name: 'Owen Halvorsen', pricingUnit: 'dollars_per_million_profile_tokens', profileToken: 'ceil(charCount / 4)' });
      expect(channelIds(p).sort()).toEqual(['ch_owen_alerts', 'ch_owen_blog']);
      expect((p.channels as { id: string; status: string }[]).find((c) => c.id === 'ch_owen_alerts')!.status).toBe('paused');
    },
  },
  {
    name: "the owner's bearer token also sees the private channel",
    tool: 'profile_list_channels',
    binding: profile('owen-halvorsen'),
    as: (k) => ({ bearerToken: k.owenBearer }),
    status: 200,
    schema: ProfileChannels,
    check: (p) => {
      expect(channelIds(p).sort()).toEqual(['ch_owen_alerts', 'ch_owen_blog', 'ch_owen_members']);
      expect((p.channels as { id: string; accessLevel: string }[]).find((c) => c.id === 'ch_owen_members')!.accessLevel).toBe('private');
    },
  },
  {
    name: 'another bearer token does not see the private channel',
    tool: 'profile_list_channels',
    binding: profile('owen-halvorsen'),
    as: (k) => ({ bearerToken: k.outsiderBearer }),
    status: 200,
    schema: ProfileChannels,
    check: (p) => expect(channelIds(p)).not.toContain('ch_owen_members'),
  },
  {
    name: 'the global endpoint lists one profile by slug',
    tool: 'profile_list_channels',
    binding: global,
    args: { slug: 'mara-lindqvist' },
    status: 200,
    schema: ProfileChannels,
    check: (p) => expect(channelIds(p).sort()).toEqual(['ch_mara_blog', 'ch_mara_youtube']),
  },
  {
    name: 'an unlisted profile is readable by slug',
    tool: 'profile_list_channels',
    binding: profile('declan-aubury'),
    status: 200,
    schema: ProfileChannels,
    check: (p) => expect(p.slug).toBe('declan-aubury'),
  },
  {
    name: 'a public profile outside the directory is readable by slug',
    tool: 'profile_list_channels',
    binding: profile('ines-marchetti'),
    status: 200,
    schema: ProfileChannels,
  },
  {
    name: 'an alias handle resolves to its profile',
    tool: 'profile_list_channels',
    binding: profile('mara'),
    status: 200,
    schema: ProfileChannels,
    check: (p) => expect(p.slug).toBe('mara-lindqvist'),
  },
  { name: 'an unknown profile is 404', tool: 'profile_list_channels', binding: profile('nobody-here'), status: 404, error: 'not_found' },
  { name: 'an odd slug is 404', tool: 'profile_list_channels', binding: profile('..%2F..%2Fetc'), status: 404, error: 'not_found' },
  { name: 'an overlong slug is 404', tool: 'profile_list_channels', binding: profile('x'.repeat(300)), status: 404, error: 'not_found' },
  { name: 'an unknown slug on the global endpoint is 404', tool: 'profile_list_channels', binding: global, args: { slug: 'nobody-here' }, status: 404, error: 'not_found' },

  // Private profiles
  { name: 'a private profile is 404 to anonymous callers', tool: 'profile_list_channels', binding: profile('sunniva-bratt'), status: 404, error: 'not_found' },
  {
    name: 'a private profile is 404 to an unrelated bearer token',
    tool: 'profile_list_channels',
    binding: profile('sunniva-bratt'),
    as: (k) => ({ bearerToken: k.outsiderBearer }),
    status: 404,
    error: 'not_found',
  },
  {
    name: 'a private profile is 404 to an unauthorized API key',
    tool: 'profile_list_channels',
    binding: profile('sunniva-bratt'),
    as: (k) => ({ apiKey: k.callerKey }),
    status: 404,
    error: 'not_found',
  },
  {
    name: 'a private profile by slug on the global endpoint is 404 to anonymous callers',
    tool: 'profile_list_channels',
    binding: global,
    args: { slug: 'sunniva-bratt' },
    status: 404,
    error: 'not_found',
  },
  ...(
    [
      ['its owner’s bearer token', (k: Keys) => ({ bearerToken: k.sunnivaBearer })],
      ['a team member’s bearer token', (k: Keys) => ({ bearerToken: k.kaiBearer })],
      ['its owner’s API key', (k: Keys) => ({ apiKey: k.sunnivaKey })],
      ['an API key of an account the owner authorized', (k: Keys) => ({ apiKey: k.partnerKey })],
    ] as const
  ).map(
    ([who, as]): Case => ({
      name: `a private profile is readable by ${who}`,
      tool: 'profile_list_channels',
      binding: profile('sunniva-bratt'),
      as,
      status: 200,
      schema: ProfileChannels,
      check: (p) => expect(channelIds(p).sort()).toEqual(['ch_sunniva_notion', 'ch_sunniva_uploads']),
    }),
  ),

  // Credentials: a paid call with a bad one fails the same way on every transport.
  {
    name: 'a query with a malformed API key is 401, saying it is malformed',
    tool: 'profile_query',
    binding: profile('mara-lindqvist'),
    args: { question: 'How warm should a starter be?', paymentMode: 'credits' },
    as: () => ({ apiKey: 'not-a-key' }),
    status: 401,
    error: 'invalid_api_key',
    check: (body) => expect(body.message).toMatch(/is malformed: expected pek_/),
  },
  {
    name: 'a query with a well-formed but unknown API key is 401',
    tool: 'profile_query',
    binding: global,
    args: { question: 'How warm should a starter be?', paymentMode: 'credits' },
    as: () => ({ apiKey: `pek_0123456789abcdef_${'A'.repeat(43)}` }),
    status: 401,
    error: 'invalid_api_key',
    check: (body) => expect(body.message).toMatch(/unknown to this server, or it was revoked/),
  },
  {
    name: 'a query with a revoked API key is 401',
    tool: 'profile_query',
    binding: global,
    args: { question: 'How warm should a starter be?', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.revokedKey }),
    status: 401,
    error: 'invalid_api_key',
  },
  {
    name: 'a query with an API key presented as a bearer token is 401',
    tool: 'profile_query',
    binding: profile('mara-lindqvist'),
    args: { question: 'How warm should a starter be?', paymentMode: 'credits' },
    as: (k) => ({ bearerToken: k.callerKey }),
    status: 401,
    error: 'invalid_bearer_token',
    check: (body) => expect(body.message).toMatch(/an API key goes in (the service-api-key header|PROFILE_EDGE_API_KEY)/),
  },
  // A free call with a bad credential: 401 over REST; over MCP it answers with a note (test/mcp-hosts.test.ts).
  {
    name: 'a free call with a malformed API key is 401 over REST',
    tool: 'profile_list_channels',
    binding: profile('mara-lindqvist'),
    as: () => ({ apiKey: 'not-a-key' }),
    status: 401,
    error: 'invalid_api_key',
    skip: ['mcp-http', 'mcp-stdio'],
  },
  {
    name: 'a free quote with a revoked API key is 401 over REST',
    tool: 'profile_quote',
    binding: global,
    as: (k) => ({ apiKey: k.revokedKey }),
    status: 401,
    error: 'invalid_api_key',
    skip: ['mcp-http', 'mcp-stdio'],
  },

  // Quotes
  {
    name: 'request metadata in the arguments (_meta) is never an argument: a free tool takes it too',
    tool: 'profile_quote',
    binding: global,
    args: { rail: 'tempo', _meta: { 'progressToken': 1 } },
    status: 200,
    schema: OnchainQuote,
  },
  {
    name: 'a per-profile tempo quote is the on-chain shape on Tempo mainnet',
    tool: 'profile_quote',
    binding: profile('mara-lindqvist'),
    args: { rail: 'tempo' },
    status: 200,
    schema: OnchainQuote,
    check: (p) =>
      expect(p).toEqual({
        rail: 'tempo',
        amountUsdMillicents: 5000,
        payTo: Environment.payTo.tempo,
        currency: '0x20C000000000000000000000b9537d11c60E8b50',
        chainId: 4217,
      }),
  },
  {
    name: 'a global x402_base quote is the on-chain shape on Base',
    tool: 'profile_quote',
    binding: global,
    args: { rail: 'x402_base' },
    status: 200,
    schema: OnchainQuote,
    check: (p) =>
      expect(p).toEqual({
        rail: 'x402_base',
        amountUsdMillicents: 5000,
        payTo: Environment.payTo.x402_base,
        currency: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        chainId: 8453,
      }),
  },
  {
    name: "with an API key a quote is the key owner's unlock and credit cost",
    tool: 'profile_quote',
    binding: global,
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: ApiKeyQuote,
    check: (p) => expect(p).toEqual({ rail: 'api_key', costUnlocks: 1, costCredits: 10, costUsd: 0.05 }),
  },
  {
    name: 'with an API key the rail is ignored',
    tool: 'profile_quote',
    binding: profile('owen-halvorsen'),
    args: { rail: 'tempo' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: ApiKeyQuote,
  },
  {
    name: 'a quote without a key and without a rail is 400 listing the supported rails',
    tool: 'profile_quote',
    binding: global,
    status: 400,
    error: 'missing_rail',
    check: (b) => expect((b.supportedRails as { rail: string }[]).map((r) => r.rail)).toEqual(['tempo', 'x402_base']),
  },
  {
    name: 'an owner quoting their own profile with a bearer token is told what their account pays',
    tool: 'profile_quote',
    binding: profile('sunniva-bratt'),
    args: {},
    as: (k) => ({ bearerToken: k.sunnivaBearer }),
    status: 200,
    schema: ApiKeyQuote,
  },
  {
    name: 'a bearer token on someone else\'s profile still needs a rail',
    tool: 'profile_quote',
    binding: profile('mara-lindqvist'),
    args: {},
    as: (k) => ({ bearerToken: k.sunnivaBearer }),
    status: 400,
    error: 'missing_rail',
  },
  {
    name: 'a whitespace-only question is missing, and nothing is charged',
    tool: 'profile_query',
    binding: profile('mara-lindqvist'),
    args: { question: ' \t\n ', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 400,
    error: 'missing_question',
  },
  { name: 'an unknown rail is 400', tool: 'profile_quote', binding: global, args: { rail: 'bitcoin' }, status: 400, error: 'invalid_rail' },
  { name: 'a rail of the wrong type is 400', tool: 'profile_quote', binding: global, args: { rail: 7 }, status: 400, error: 'invalid_rail' },
  {
    name: 'an unknown quote field is 400',
    tool: 'profile_quote',
    binding: global,
    args: { rail: 'tempo', nonce: 'abc' },
    status: 400,
    error: 'invalid_request',
    check: (b) => expect(b.message).toContain('nonce'),
  },
  { name: 'a quote for an unknown profile is 404', tool: 'profile_quote', binding: profile('nobody-here'), args: { rail: 'tempo' }, status: 404, error: 'not_found' },
  { name: 'a quote for a private profile is 404 to anonymous callers', tool: 'profile_quote', binding: profile('sunniva-bratt'), args: { rail: 'tempo' }, status: 404, error: 'not_found' },

  // Queries
  {
    name: 'a raw query returns ranked chunks, source groups, claims and diagnostics',
    tool: 'profile_query',
    binding: global,
    args: { question: 'What temperature should I keep a brand-new sourdough starter at while it gets going?', mode: 'raw', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: RawQueryResponse,
    volatile: ['queryId'],
    check: (p) => {
      const chunks = p.chunks as { profileUrl: string; itemId: string; chunkId: string; score: number }[];
      expect(chunks.length).toBeGreaterThan(0);
      expect(chunks[0]!.profileUrl).toBe(`/mara-lindqvist/i/${chunks[0]!.itemId}?chunks=${chunks[0]!.chunkId}`);
      expect(chunks.map((c) => c.score)).toEqual([...chunks.map((c) => c.score)].sort((a, b) => b - a));
      expect(p).toMatchObject({ mode: 'raw', charge: 'credits', scope: { kind: 'global' }, retrieval: { queryMode: 'lookup', noRelevantContent: false } });
      expect((p.sourceGroups as unknown[]).length).toBeGreaterThan(0);
    },
  },
  {
    name: 'a synthesized query answers from cited sentences',
    tool: 'profile_query',
    binding: profile('nadia-ferreira-holm'),
    args: { question: 'How long is the caffeine half-life in a healthy adult?', paymentMode: 'unlocks' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: QueryResponse,
    volatile: ['queryId'],
    check: (p) => {
      expect(p.answer).toMatch(/\[1\]/);
      expect((p.citations as unknown[]).length).toBeGreaterThan(0);
      expect(p).toMatchObject({ charge: 'unlock', scope: { kind: 'profile', slug: 'nadia-ferreira-holm' } });
    },
  },
  {
    name: 'a query with nothing relevant is still 200, says so and cites nothing',
    tool: 'profile_query',
    binding: global,
    args: { question: 'How do I laminate butter into dough for croissants?', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: QueryResponse,
    volatile: ['queryId'],
    check: (p) => {
      expect(p.citations).toEqual([]);
      expect(p.answer).toContain('does not answer');
      expect((p.retrieval as { diagnostics: { noRelevantContent: boolean } }).diagnostics.noRelevantContent).toBe(true);
    },
  },
  { name: 'a query without an API key is 401', tool: 'profile_query', binding: global, args: { question: 'Anything?' }, status: 401, error: 'api_key_required' },
  { name: 'a query with an API key but no paymentMode is 400', tool: 'profile_query', binding: global, args: { question: 'Anything?' }, as: (k) => ({ apiKey: k.callerKey }), status: 400, error: 'missing_payment_mode' },
  { name: 'a query without a question is 400', tool: 'profile_query', binding: global, args: { paymentMode: 'credits' }, as: (k) => ({ apiKey: k.callerKey }), status: 400, error: 'missing_question' },
  ...([42, true, ['a question?'], { text: 'a question?' }] as const).map(
    (question): Case => ({
      name: `a question of the wrong type (${JSON.stringify(question)}) is invalid_request, not missing`,
      tool: 'profile_query',
      binding: global,
      args: { question, paymentMode: 'credits' },
      as: (k) => ({ apiKey: k.callerKey }),
      status: 400,
      error: 'invalid_request',
      check: (body) => expect(body.message).toMatch(/^question: Expected string/),
    }),
  ),
  {
    name: 'the owner queries their own private profile with a bearer token, charged to their account',
    tool: 'profile_query',
    binding: profile('sunniva-bratt'),
    args: { question: 'How should discovery interviews be run?', mode: 'raw', paymentMode: 'credits' },
    as: (k) => ({ bearerToken: k.sunnivaBearer }),
    status: 200,
    schema: RawQueryResponse,
    volatile: ['queryId'],
    check: (p) => expect(p.charge).toBe('credits'),
  },
  {
    name: 'a team member queries the private profile with a bearer token',
    tool: 'profile_query',
    binding: profile('sunniva-bratt'),
    args: { question: 'How should discovery interviews be run?', mode: 'raw', paymentMode: 'unlocks' },
    as: (k) => ({ bearerToken: k.kaiBearer }),
    status: 402,
    error: 'insufficient_balance',
  },
  {
    name: 'a bearer token alone does not pay for a global query',
    tool: 'profile_query',
    binding: global,
    args: { question: 'How should discovery interviews be run?', paymentMode: 'credits', scope: { kind: 'profile', slug: 'sunniva-bratt' } },
    as: (k) => ({ bearerToken: k.sunnivaBearer }),
    status: 401,
    error: 'api_key_required',
    check: (body) => expect(body.message).toContain('bearer token pays only'),
  },
  {
    name: 'a bearer query without paymentMode is 400',
    tool: 'profile_query',
    binding: profile('sunniva-bratt'),
    args: { question: 'How should discovery interviews be run?' },
    as: (k) => ({ bearerToken: k.sunnivaBearer }),
    status: 400,
    error: 'missing_payment_mode',
  },
  { name: 'an empty question is 400', tool: 'profile_query', binding: profile('mara-lindqvist'), args: { question: '', paymentMode: 'credits' }, as: (k) => ({ apiKey: k.callerKey }), status: 400, error: 'missing_question' },
  { name: 'an unknown scope kind is 400', tool: 'profile_query', binding: global, args: { question: 'Anything?', paymentMode: 'credits', scope: { kind: 'planet' } }, as: (k) => ({ apiKey: k.callerKey }), status: 400, error: 'invalid_scope' },
  {
    name: 'more than 20 handles is 400',
    tool: 'profile_query',
    binding: global,
    args: { question: 'Anything?', paymentMode: 'credits', scope: { kind: 'handles', handles: Array.from({ length: 21 }, (_, i) => `h${i}`) } },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 400,
    error: 'invalid_scope',
  },
  {
    name: 'the earlier paymentProof flow is 400 invalid_payment_proof, saying what to send instead',
    tool: 'profile_query',
    binding: profile('mara-lindqvist'),
    args: { question: 'How warm should a starter be?', paymentProof: { rail: 'tempo', walletAddress: '0x1', quoteNonce: 'n1', txHash: '0xabc' } },
    status: 400,
    error: 'invalid_payment_proof',
    check: (body) => expect(body.message).toMatch(/rail .*402 challenge.*credential.*API key .*paymentMode/s),
  },
  { name: 'an unknown query field is 400', tool: 'profile_query', binding: global, args: { question: 'Anything?', paymentMode: 'credits', query: 'old field' }, as: (k) => ({ apiKey: k.callerKey }), status: 400, error: 'invalid_request' },
  // Fields named like Object.prototype members are unknown fields like any other (they once reached the rule table).
  ...prototypeNames.flatMap((field): Case[] => [
    {
      name: `a query field named ${field} is 400 with the field named`,
      tool: 'profile_query',
      binding: global,
      args: withField({ question: 'Anything?', paymentMode: 'credits' }, field),
      as: (k) => ({ apiKey: k.callerKey }),
      status: 400,
      error: 'invalid_request',
      check: (b) => expect(b.message).toContain(field),
    },
    {
      name: `a quote field named ${field} is 400 with the field named`,
      tool: 'profile_quote',
      binding: profile('mara-lindqvist'),
      args: withField({ rail: 'tempo' }, field),
      status: 400,
      error: 'invalid_request',
      check: (b) => expect(b.message).toContain(field),
    },
  ]),
  { name: 'a scope naming an unknown profile is 404', tool: 'profile_query', binding: global, args: { question: 'Anything?', paymentMode: 'credits', scope: { kind: 'profile', slug: 'nobody-here' } }, as: (k) => ({ apiKey: k.callerKey }), status: 404, error: 'not_found' },
  {
    name: 'a scope naming a private profile is 404 to an unauthorized key',
    tool: 'profile_query',
    binding: global,
    args: { question: 'How do we run discovery interviews?', paymentMode: 'credits', scope: { kind: 'handles', handles: ['mara-lindqvist', 'sunniva-bratt'] } },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 404,
    error: 'not_found',
  },
  {
    name: 'an account with no balance is 402, saying what the query costs, what the account holds and how to add to it',
    tool: 'profile_query',
    binding: global,
    args: { question: 'How warm should a starter be?', paymentMode: 'unlocks' },
    as: (k) => ({ apiKey: k.brokeKey }),
    status: 402,
    error: 'insufficient_balance',
    check: (body) => expect(body.message).toMatch(/^This query costs 1 unlock, and account "\S+" holds 0\. An operator adds to the balance with `profile-edge credits grant \S+ --unlocks N`\.$/),
  },
  {
    name: 'an authorized key reads a private profile, and its chunks carry no source URL',
    tool: 'profile_query',
    binding: profile('sunniva-bratt'),
    args: { question: 'How should discovery interviews be run?', mode: 'raw', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.partnerKey }),
    status: 200,
    schema: RawQueryResponse,
    volatile: ['queryId'],
    check: (p) => {
      const chunks = p.chunks as { accessLevel: string; sourceUrl?: string }[];
      expect(chunks.length).toBeGreaterThan(0);
      for (const c of chunks) expect(c).toMatchObject({ accessLevel: 'private' });
      for (const c of chunks) expect(c.sourceUrl).toBeUndefined();
    },
  },
  { name: 'a per-profile query to a private profile is 404 to an unauthorized key', tool: 'profile_query', binding: profile('sunniva-bratt'), args: { question: 'Anything?', paymentMode: 'credits' }, as: (k) => ({ apiKey: k.callerKey }), status: 404, error: 'not_found' },
  {
    name: 'a raw chunk from a YouTube video links to its moment (&t=), with its cue times',
    tool: 'profile_query',
    binding: profile('deep-links'),
    args: { question: 'How long should a kettlebell swing session last?', mode: 'raw', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: RawQueryResponse,
    volatile: ['queryId'],
    check: (p) => {
      expect((p.chunks as Record<string, unknown>[])[0]).toMatchObject({ startSeconds: 95, sourceUrl: 'https://www.youtube.com/watch?v=kb_swing_01&t=95s' });
    },
  },
  {
    name: 'a PDF chunk links to its page (#page=) in raw mode, and its citation names the pages',
    tool: 'profile_query',
    binding: profile('deep-links'),
    args: { question: 'What rest interval between deadlift sets does the guide give?', mode: 'raw', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: RawQueryResponse,
    volatile: ['queryId'],
    check: (p) => {
      expect((p.chunks as Record<string, unknown>[])[0]).toMatchObject({ sourceUrl: 'https://strength.example.com/guide.pdf#page=3' });
    },
  },
  {
    name: 'a synthesized answer from a PDF names the pages in its citation label',
    tool: 'profile_query',
    binding: profile('deep-links'),
    args: { question: 'What rest interval between deadlift sets does the guide give?', paymentMode: 'credits' },
    as: (k) => ({ apiKey: k.callerKey }),
    status: 200,
    schema: QueryResponse,
    volatile: ['queryId'],
    check: (p) => {
      expect((p.citations as { label: string }[])[0]!.label).toBe('Strength Guide (Deep Links, Guides, pp. 3–4)');
    },
  },
];

/** Content whose citations point inside their source: a YouTube video (times) and a PDF (pages). */
async function addDeepLinkedContent({ store }: Environment.Environment['services']): Promise<void> {
  const profile = await store.profiles.create({ slug: 'deep-links', name: 'Deep Links', visibility: 'unlisted' });
  const video = await store.channels.create({ profileId: profile.id, kind: 'youtube', label: 'Videos', accessLevel: 'public', ratePerMillionTokens: 1 });
  await Upload.ingest({ store }, {
    channelId: video.id,
    file: 'kettlebell [kb_swing_01].en.vtt',
    content: 'WEBVTT\n\n00:01:35.000 --> 00:01:50.000\nA kettlebell swing session should last about twelve minutes, swings on the minute.\n',
    metadata: { title: 'Kettlebell swings', sourceUrl: 'https://www.youtube.com/watch?v=kb_swing_01' },
    chunkTargetTokens: 320,
  });
  const guides = await store.channels.create({ profileId: profile.id, kind: 'user_upload', label: 'Guides', accessLevel: 'public', ratePerMillionTokens: 1 });
  await store.items.put(SearchTerms.indexed({
    channelId: guides.id,
    externalId: 'guide.pdf',
    title: 'Strength Guide',
    sourceUrl: 'https://strength.example.com/guide.pdf',
    contentHash: 'guide-v1',
    chunks: [{ text: 'Between heavy deadlift sets, rest three to five minutes; the rest interval matters more than the music.', pageStart: 3, pageEnd: 4 }],
  }));
}

let environment: Environment.Environment;
let http: Awaited<ReturnType<typeof Environment.serve>>;
const transports = new Map<TransportName, Transport>();

beforeAll(async () => {
  environment = await Environment.create({ QUOTE_RATE_LIMIT_PER_MINUTE: '100000' });
  await addDeepLinkedContent(environment.services);
  http = await Environment.serve(environment);
  for (const t of [
    Transports.handler(environment),
    Transports.rest(http.url),
    Transports.mcpHttp(http.url),
    Transports.mcpStdio(environment, { QUOTE_RATE_LIMIT_PER_MINUTE: '100000' }),
  ]) {
    transports.set(t.name, t);
  }
});

afterAll(async () => {
  await Promise.all([...transports.values()].map((t) => t.close()));
  await http?.close();
  await environment?.close();
});

const names: TransportName[] = ['handler', 'rest', 'mcp-http', 'mcp-stdio'];

const run = (c: Case, transport: TransportName): Promise<Outcome> =>
  transports.get(transport)!.call({ tool: c.tool, args: c.args, binding: c.binding, credentials: c.as?.(environment.keys) });

describe.each(names)('contract over %s', (transportName) => {
  test.each(cases.filter((c) => !c.skip?.includes(transportName)))('$name', async (c) => {
    const outcome = await run(c, transportName);
    if ('schema' in c) {
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ ok: true });
      const payload = (outcome as Extract<Outcome, { ok: true }>).payload;
      expect(() => c.schema.parse(payload)).not.toThrow();
      c.check?.(payload);
      // The same payload as the handler gives: transports add and lose nothing.
      if (transportName !== 'handler') {
        // A signed link's expiry is rounded to the minute: two calls either side of a minute differ only there.
        const unsigned = (p: unknown): unknown => JSON.parse(JSON.stringify(p).replace(/&expires=\d+&sig=[\w-]+/g, ''));
        const strip = (p: Record<string, unknown>) => Object.fromEntries(Object.entries(unsigned(p) as Record<string, unknown>).filter(([k]) => !c.volatile?.includes(k)));
        expect(strip(payload)).toEqual(strip((await run(c, 'handler') as Extract<Outcome, { ok: true }>).payload));
      }
    } else {
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ ok: false, status: c.status });
      const body = (outcome as Extract<Outcome, { ok: false }>).body;
      expect(ErrorBody.safeParse(body).success).toBe(true);
      expect(body.error).toBe(c.error);
      expect(typeof body.message).toBe('string');
      // The code and the message lead, then the request's id, then any details (rails, limits, challenges).
      const keys = Object.keys(body);
      expect(keys.slice(0, 2)).toEqual(['error', 'message']);
      if ('requestId' in body) expect(keys[2]).toBe('requestId');
      c.check?.(body);
    }
  });
});
