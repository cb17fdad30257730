import type { Request } from 'express';
import { z } from 'zod';
import { DirectoryPage, ErrorBody, ProfileChannels, QueryRequest, QueryResponse, QuoteRequest, QuoteResponse, RawQueryResponse } from '../../contract/Contract.js';
import type { ToolName } from '../../contract/Mcp.js';
import type { Binding } from '../../../tools/Tools.js';

/**
 * A response header of a route, for the OpenAPI document: what it carries, the JSON Schema its value validates
 * against, and whether every such response has it (a rail's header comes only on that rail's responses).
 */
export type RouteHeader = { description: string; schema: Record<string, unknown>; required?: boolean };

/** One response of a route, for the OpenAPI document. */
export type RouteResponse = { description: string; schema: z.ZodTypeAny; headers?: Record<string, RouteHeader> };

/** A REST path mapped onto a tool: how to read the binding and arguments from the request, and what it answers. */
export type Route = {
  method: 'get' | 'post';
  /** OpenAPI-style path, `{slug}` for parameters. */
  path: string;
  tool: ToolName;
  summary: string;
  binding(req: Request): Binding;
  args(req: Request): unknown;
  query?: { name: string; description: string; schema: Record<string, unknown> }[];
  requestBody?: { schema: z.ZodTypeAny; required: boolean };
  responses: Record<number, RouteResponse>;
};

const error = (description: string, headers?: Record<string, RouteHeader>): RouteResponse => ({ description, schema: ErrorBody, headers });

/** Standard base64 (RFC 4648 §4), padded, of a JSON text: how x402 v2 sends its objects in headers. */
const base64Json = { type: 'string', contentEncoding: 'base64', contentMediaType: 'application/json', pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' };
/** URL-safe base64 (RFC 4648 §5), unpadded, of a JSON text: how MPP sends its receipt. */
const base64UrlJson = { type: 'string', contentEncoding: 'base64url', contentMediaType: 'application/json', pattern: '^[A-Za-z0-9_-]+$' };
/** An auth scheme's quoted parameters (RFC 9110 §11.2), as MPP writes a challenge: `name="value"`, joined by ", ". */
const paymentChallenge = { type: 'string', pattern: '^Payment [A-Za-z]+="(?:[^"\\\\]|\\\\.)*"(?:, [A-Za-z]+="(?:[^"\\\\]|\\\\.)*")*$' };

/** A query-string integer as a number, anything else as given so validation reports it. */
const integer = (value: unknown): unknown => (typeof value === 'string' && /^-?\d{1,12}$/.test(value) ? Number(value) : value);

const slugOf = (req: Request): Binding => ({ kind: 'profile', slug: String(req.params.slug) });
const global = (): Binding => ({ kind: 'global' });
const body = (req: Request): unknown => req.body;

const unauthorized = error('A service-api-key or bearer token was sent but is malformed, unknown or revoked.');
const tooLarge = error('The body is over the size limit.');
/** What both quote paths answer; the per-profile one can also be 404. */
function quoteResponses(options: { perProfile: boolean }): Record<number, RouteResponse> {
  const responses: Record<number, RouteResponse> = {
    200: { description: 'The on-chain or API-key shape.', schema: QuoteResponse },
    400: error('Missing or invalid rail, unknown fields, or a body that is not JSON.'),
    401: unauthorized,
    413: tooLarge,
    429: rateLimited,
    503: error('The rail is not configured on this server.'),
  };
  if (options.perProfile) responses[404] = error('Unknown profile, or private without authorization.');
  return responses;
}

/** What both query paths answer. */
function queryResponses(badRequest: string): Record<number, RouteResponse> {
  return {
    200: {
      description: 'A synthesized answer (QueryResponse) or, with mode "raw", ranked evidence (RawQueryResponse).',
      schema: z.union([QueryResponse, RawQueryResponse]),
      headers: {
        'Payment-Receipt': { description: 'tempo: the MPP receipt of an on-chain payment, base64url JSON.', schema: base64UrlJson },
        'PAYMENT-RESPONSE': { description: 'x402_base: the settlement, base64 JSON.', schema: base64Json },
      },
    },
    400: error(badRequest),
    401: error('Neither an API key nor a rail (api_key_required), or a key that is malformed, unknown or revoked.'),
    402: error(
      'payment_required: an on-chain query (rail, no key) must be paid, or its credential was refused (the message says why); the rail’s challenge is in the header and in `challenges`. Or insufficient_balance: the key owner’s balance does not cover the query (no challenge header).',
      {
        'WWW-Authenticate': { description: 'tempo: the MPP challenge (`Payment` scheme). Retry with `Authorization: Payment …`.', schema: paymentChallenge },
        'PAYMENT-REQUIRED': { description: 'x402_base: the x402 v2 PaymentRequired object, base64 JSON. Retry with `PAYMENT-SIGNATURE`.', schema: base64Json },
      },
    ),
    404: error('Unknown profile, collection or handle, or private without authorization.'),
    413: error('The body is over the size limit.'),
    422: error('no_relevant_content: nothing indexed is relevant enough to price the question (on-chain: before any challenge). Do not pay.'),
    503: error('The rail is not configured (rail_unavailable), or its node or facilitator cannot be reached; nothing was charged.'),
  };
}

const rateLimited = error('Quote rate limit exceeded; `resetAt` in the body.', {
  'Retry-After': { description: 'Seconds to wait, an integer of at least 1.', schema: { type: 'integer', minimum: 1 }, required: true },
});

/** Every REST path of the contract that is served, each a thin mapping onto a tool. */
export const routes: Route[] = [
  {
    method: 'get',
    path: '/api/profiles',
    tool: 'profile_list_channels',
    summary: 'List public directory profiles with their channels.',
    binding: global,
    args: (req) => {
      const q = req.query as Record<string, unknown>;
      return { ...(q.limit !== undefined && { limit: integer(q.limit) }), ...(q.cursor !== undefined && { cursor: q.cursor }) };
    },
    query: [
      { name: 'limit', description: 'Maximum rows to return, 1 to 100 (default 50).', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
      { name: 'cursor', description: 'Opaque: nextCursor of the previous page (a numeric offset string).', schema: { type: 'string' } },
    ],
    responses: { 200: { description: 'A page of the directory.', schema: DirectoryPage }, 400: error('Invalid limit or cursor.'), 401: unauthorized },
  },
  {
    method: 'get',
    path: '/api/profiles/{slug}/channels',
    tool: 'profile_list_channels',
    summary: "List a profile's channels.",
    binding: slugOf,
    args: () => ({}),
    responses: {
      200: { description: "The profile's channels.", schema: ProfileChannels },
      401: unauthorized,
      404: error('Unknown profile, or private without authorization.'),
      405: error('Method not allowed.'),
    },
  },
  {
    method: 'post',
    path: '/api/profiles/{slug}/quote',
    tool: 'profile_quote',
    summary: 'Free, static price metadata for a query to one profile.',
    binding: slugOf,
    args: body,
    requestBody: { schema: QuoteRequest, required: false },
    responses: quoteResponses({ perProfile: true }),
  },
  {
    method: 'post',
    path: '/api/ask/quote',
    tool: 'profile_quote',
    summary: 'Free, static price metadata for global or multi-handle queries.',
    binding: global,
    args: body,
    requestBody: { schema: QuoteRequest, required: false },
    responses: quoteResponses({ perProfile: false }),
  },
  {
    method: 'post',
    path: '/api/ask/query',
    tool: 'profile_query',
    summary: 'Ask a question: global, one profile, a collection, or handles (scope), or narrowed by @mentions.',
    binding: global,
    args: body,
    requestBody: { schema: QueryRequest, required: true },
    responses: queryResponses('Invalid request, missing question or paymentMode, or invalid scope.'),
  },
  {
    method: 'post',
    path: '/api/profiles/{slug}/query',
    tool: 'profile_query',
    summary: 'Ask a question of one profile (scope is not used here).',
    binding: slugOf,
    args: body,
    requestBody: { schema: QueryRequest, required: true },
    responses: queryResponses('Missing question or paymentMode, or an invalid request.'),
  },
];

/** Express path syntax for an OpenAPI path. */
export const expressPath = (path: string): string => path.replace(/\{(\w+)\}/g, ':$1');
