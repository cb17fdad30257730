import type { z } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { ErrorBody, Health, Home, McpManifest, McpRequest, McpResponse, Readiness } from '../../contract/Contract.js';
import { version } from '../../Version.js';
import { type Route, routes } from './Rest.js';
import { type RouteDoc, type RouteResponse, routeDocs } from './RouteDocs.js';

function jsonSchema(schema: z.ZodTypeAny): Record<string, unknown> {
  const { $schema: _schema, ...rest } = zodToJsonSchema(schema, { target: 'jsonSchema7', $refStrategy: 'none' }) as Record<string, unknown>;
  return rest;
}

/** Every endpoint refuses foreign browser origins and, when Host names are checked, foreign Hosts (DNS rebinding). */
const forbidden: RouteResponse = {
  description: 'forbidden_origin or forbidden_host: the Origin or Host header is not allowed (ALLOWED_ORIGINS, ALLOWED_HOSTS).',
  schema: ErrorBody,
};

function responses(list: Record<number, RouteResponse>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries({ ...list, 403: forbidden }).map(([status, r]) => [
      status,
      {
        description: r.description,
        ...(r.headers && {
          headers: Object.fromEntries(
            Object.entries(r.headers).map(([name, h]) => [name, { description: h.description, ...(h.required && { required: true }), schema: h.schema }]),
          ),
        }),
        content: { 'application/json': { schema: jsonSchema(r.schema) } },
      },
    ]),
  );
}

const slugParameter = { name: 'slug', in: 'path', required: true, schema: { type: 'string' } };
const apiKeyOrBearer = [{}, { apiKey: [] }, { bearer: [] }];

function operation(route: Route, doc: RouteDoc): Record<string, unknown> {
  const parameters = [...(route.path.includes('{slug}') ? [slugParameter] : []), ...(doc.query ?? []).map((q) => ({ ...q, in: 'query', required: false }))];
  return {
    operationId: `${route.method}${route.path.replace(/[{}]/g, '').replace(/[^a-zA-Z0-9]+(\w)/g, (_, c: string) => c.toUpperCase())}`,
    summary: doc.summary,
    'x-mcp-tool': route.tool,
    ...(parameters.length > 0 && { parameters }),
    ...(doc.requestBody && {
      requestBody: { required: doc.requestBody.required, content: { 'application/json': { schema: jsonSchema(doc.requestBody.schema) } } },
    }),
    security: route.path === '/api/profiles' ? [{}] : apiKeyOrBearer,
    responses: responses(doc.responses),
  };
}

/** A route's documentation; every served route has one. */
function docOf(route: Route): RouteDoc {
  const doc = routeDocs[`${route.method} ${route.path}`];
  if (!doc) throw new Error(`no documentation for ${route.method.toUpperCase()} ${route.path}`);
  return doc;
}

const manifestResponse: RouteResponse = { description: 'McpManifest.', schema: McpManifest };
const rpcResponse: RouteResponse = { description: 'McpResponse: a JSON-RPC result or error.', schema: McpResponse };
const notReadable: RouteResponse = { description: 'Unknown profile, or private without authorization.', schema: ErrorBody };
const notReadable404: RouteResponse = {
  description:
    'Unknown profile, or private without authorization. An MCP client\'s JSON-RPC request (one accepting text/event-stream) gets a JSON-RPC error with the same message in a 200 instead (data.error not_found, data.status 404), which hosts show.',
  schema: ErrorBody,
};

function mcpPaths(): Record<string, unknown> {
  const get = (perProfile: boolean) => ({
    summary: perProfile ? "A profile's MCP manifest." : 'The global MCP manifest.',
    ...(perProfile && { parameters: [slugParameter] }),
    security: apiKeyOrBearer,
    // A bad credential never makes an MCP endpoint answer 401 (hosts read it as an OAuth login challenge): the
    // manifest is served, and a per-profile one the caller cannot read is 404.
    responses: responses({
      200: manifestResponse,
      ...(perProfile ? ({ 404: notReadable } as Record<number, RouteResponse>) : {}),
      405: { description: 'A request accepting only text/event-stream: this stateless server opens no SSE stream (Allow: POST).', schema: ErrorBody },
      503: { description: 'service_unavailable: credentials or the profile cannot be checked right now (the database failed); try again shortly.', schema: ErrorBody },
    }),
  });
  const post = (perProfile: boolean) => ({
    summary:
      'MCP JSON-RPC: initialize, ping, tools/list, tools/call, or a tool name as method. Protocol methods need no credentials; a bad key is reported by the tool call (isError, or a JSON-RPC error with data.error), never as HTTP 401.',
    ...(perProfile && { parameters: [slugParameter] }),
    security: apiKeyOrBearer,
    requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(McpRequest) } } },
    responses: responses(perProfile ? { 200: rpcResponse, 404: notReadable404, 405: { description: 'Method not allowed.', schema: ErrorBody } } : { 200: rpcResponse }),
  });
  return { '/mcp': { get: get(false), post: post(false) }, '/{slug}/mcp': { get: get(true), post: post(true) } };
}

/** The OpenAPI 3.1.0 document, generated from the same zod schemas and route table that serve requests. */
export function document(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {
    '/': {
      get: {
        summary: 'What this server is: its name, version and links (the directory, MCP, OpenAPI, SKILL.md); a browser (Accept: text/html) gets it as a page.',
        security: [{}],
        responses: responses({ 200: { description: 'Home.', schema: Home } }),
      },
    },
    '/health': { get: { summary: 'Liveness.', security: [{}], responses: responses({ 200: { description: 'Health.', schema: Health } }) } },
    '/ready': {
      get: {
        summary: 'Readiness, for a load balancer: 200 when this instance takes requests, 503 while it shuts down, before its index is loaded or without its database.',
        security: [{}],
        responses: responses({ 200: { description: 'Ready.', schema: Readiness }, 503: { description: 'Not ready: the same body says why.', schema: Readiness } }),
      },
    },
  };
  for (const route of routes) paths[route.path] = { ...paths[route.path], [route.method]: operation(route, docOf(route)) };
  Object.assign(paths, mcpPaths());
  return {
    openapi: '3.1.0',
    info: {
      title: 'profile-edge',
      version,
      description: 'Grounded, cited answers from the indexed content of participating experts, over REST and MCP.',
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'service-api-key' },
        bearer: { type: 'http', scheme: 'bearer' },
      },
    },
    paths,
  };
}
