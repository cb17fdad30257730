import { z } from 'zod';
import { DirectoryPage, ErrorBody, ProfileChannels, QueryRequest, QueryResponse, QuoteRequest, QuoteResponse, RawQueryResponse } from '../../contract/Contract.js';
import { headerSchemas } from '../../contract/Payment.js';

/**
 * A response header of a route, for the OpenAPI document: what it carries, the JSON Schema its value validates
 * against, and whether every such response has it (a rail's header comes only on that rail's responses).
 */
export type RouteHeader = { description: string; schema: Record<string, unknown>; required?: boolean };

/** One response of a route, for the OpenAPI document. */
export type RouteResponse = { description: string; schema: z.ZodTypeAny; headers?: Record<string, RouteHeader> };

/** What a REST route answers, for the OpenAPI document. */
export type RouteDoc = {
  summary: string;
  query?: { name: string; description: string; schema: Record<string, unknown> }[];
  requestBody?: { schema: z.ZodTypeAny; required: boolean };
  responses: Record<number, RouteResponse>;
};

const error = (description: string, headers?: Record<string, RouteHeader>): RouteResponse => ({ description, schema: ErrorBody, headers });

const { base64Json, base64UrlJson, paymentChallenge } = headerSchemas;

/** What the store or the search index failing is answered with: nothing a caller did, and worth a retry. */
const unavailable = (what: string) => error(`service_unavailable: ${what} is unavailable (its database or search index failed); try again shortly.`);

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
    503: error('The rail is not configured on this server (rail_unavailable), or the quote service is unavailable (service_unavailable).'),
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
    503: error('The rail is not configured (rail_unavailable), its node or facilitator cannot be reached, or retrieval is unavailable so the query cannot be priced (service_unavailable); nothing was charged.'),
  };
}

const rateLimited = error('Quote rate limit exceeded; `resetAt` in the body.', {
  'Retry-After': { description: 'Seconds to wait, an integer of at least 1.', schema: { type: 'integer', minimum: 1 }, required: true },
});

/** Each REST route's documentation, by method and path (see Rest.routes). */
export const routeDocs: Record<string, RouteDoc> = {
  'get /api/profiles': {
    summary: 'List public directory profiles with their channels.',
    query: [
      { name: 'limit', description: 'Maximum rows to return, 1 to 100 (default 50).', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
      { name: 'cursor', description: 'Opaque: nextCursor of the previous page (a numeric offset string).', schema: { type: 'string' } },
    ],
    responses: { 200: { description: 'A page of the directory.', schema: DirectoryPage }, 400: error('Invalid limit or cursor.'), 401: unauthorized, 503: unavailable('The directory') },
  },
  'get /api/profiles/{slug}/channels': {
    summary: "List a profile's channels.",
    responses: {
      200: { description: "The profile's channels.", schema: ProfileChannels },
      401: unauthorized,
      404: error('Unknown profile, or private without authorization.'),
      405: error('Method not allowed.'),
      503: unavailable('The directory'),
    },
  },
  'post /api/profiles/{slug}/quote': {
    summary: 'Free, static price metadata for a query to one profile.',
    requestBody: { schema: QuoteRequest, required: false },
    responses: quoteResponses({ perProfile: true }),
  },
  'post /api/ask/quote': {
    summary: 'Free, static price metadata for global or multi-handle queries.',
    requestBody: { schema: QuoteRequest, required: false },
    responses: quoteResponses({ perProfile: false }),
  },
  'post /api/ask/query': {
    summary: 'Ask a question: global, one profile, a collection, or handles (scope), or narrowed by @mentions.',
    requestBody: { schema: QueryRequest, required: true },
    responses: queryResponses('Invalid request, missing question or paymentMode, or invalid scope.'),
  },
  'post /api/profiles/{slug}/query': {
    summary: 'Ask a question of one profile (scope is not used here).',
    requestBody: { schema: QueryRequest, required: true },
    responses: queryResponses('Missing question or paymentMode, or an invalid request.'),
  },
};
