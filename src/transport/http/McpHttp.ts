import type { Request, Response } from 'express';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import * as Access from '../../auth/Access.js';
import * as Caller from '../../auth/Caller.js';
import { ServiceError, toJsonRpcError, toServiceError } from '../../errors/ServiceError.js';
import type { Services } from '../../Services.js';
import * as Tools from '../../../tools/Tools.js';
import type { Binding } from '../../../tools/Tools.js';
import * as McpServer from '../mcp/McpServer.js';
import { connectionOf, presentedOf, sendError } from './Http.js';
import * as Credentials from '../../payments/Credentials.js';

type JsonRpcId = string | number | null;

const bindingOf = (req: Request): Binding => (req.params.slug === undefined ? { kind: 'global' } : { kind: 'profile', slug: String(req.params.slug) });

/**
 * The caller of an MCP endpoint, as far as their credentials hold: a bad credential never makes an MCP endpoint answer
 * HTTP 401, which hosts (mcp-remote) read as an OAuth login challenge. A per-profile endpoint's profile must be
 * readable by that caller (404 otherwise, before any JSON-RPC); when a bad credential is why, the 404 says so.
 */
async function gate(services: Services, req: Request): Promise<Caller.Caller> {
  const binding = bindingOf(req);
  const { caller, problem } = await Caller.inspect(services.store, presentedOf(req));
  if (binding.kind !== 'profile') return caller;
  try {
    await Access.readableProfile(services.store, binding.slug, caller);
  } catch (error) {
    if (problem && error instanceof ServiceError) throw new ServiceError('not_found', `${error.message}. Also: ${problem.message}`);
    throw error;
  }
  return caller;
}

/**
 * GET: the endpoint's McpManifest. A request for an SSE stream gets 405 with `Allow: POST`: this stateless server
 * answers every POST in its body and opens no stream, and MCP clients read 405 as exactly that.
 */
export function manifest(services: Services) {
  return async (req: Request, res: Response): Promise<void> => {
    const accept = req.get('accept') ?? '';
    if (accept.includes('text/event-stream') && !accept.includes('application/json')) {
      const error = new ServiceError('method_not_allowed', 'This endpoint opens no SSE stream (the server is stateless); POST JSON-RPC requests. GET without Accept: text/event-stream returns the manifest.');
      sendError(res.set('Allow', 'POST'), error);
      return;
    }
    try {
      res.json(await Tools.manifest(services, bindingOf(req), await gate(services, req)));
    } catch (thrown) {
      sendError(res, toServiceError(thrown));
    }
  };
}

/** A direct tool call: a tool name as `method`, or the `tool`/`arguments` compatibility fields. */
function directCall(body: Record<string, unknown>): { name: string; args: unknown } | undefined {
  if (typeof body.tool === 'string') return { name: body.tool, args: body.arguments ?? body.params };
  if (typeof body.method === 'string' && Tools.find(body.method)) return { name: body.method, args: body.params };
  return undefined;
}

/** MCP request metadata of a direct call's params, if any. */
function metaOf(args: unknown): unknown {
  return args !== null && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>)._meta : undefined;
}

/** Splits MCP request metadata from tool arguments: `_meta` is never a tool argument of a direct call. */
function withoutMeta(args: unknown): unknown {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return args;
  const { _meta: _ignored, ...rest } = args as Record<string, unknown>;
  return rest;
}

async function answerDirectCall(services: Services, req: Request, res: Response, call: { name: string; args: unknown }, id: JsonRpcId): Promise<void> {
  try {
    let meta: Record<string, unknown> | undefined;
    const result = await Tools.invoke({
      services,
      name: call.name,
      args: withoutMeta(call.args),
      presented: presentedOf(req),
      binding: bindingOf(req),
      payment: { credential: Credentials.fromMeta(metaOf(call.args)), receipt: (receipt) => (meta = { [Credentials.mcpReceiptKey]: receipt.mcp }) },
      connection: connectionOf(res),
    });
    res.json({ jsonrpc: '2.0', id, result: meta ? { ...(result as Record<string, unknown>), _meta: meta } : result });
  } catch (thrown) {
    const error = toServiceError(thrown);
    McpServer.logFailure(services, error, { tool: call.name, transport: 'mcp-http' });
    res.set(error.headers).json({ jsonrpc: '2.0', id, error: toJsonRpcError(error) });
  }
}

/** The id of a single JSON-RPC request body, or null (a batch, a notification, no body). */
function idOf(body: unknown): JsonRpcId {
  const id = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** A body that is JSON but no JSON-RPC message: -32600, with the stable code. */
function invalidMessage(res: Response, id: JsonRpcId, message: string): void {
  const error = toJsonRpcError(new ServiceError('invalid_request', message));
  res.status(400).json({ jsonrpc: '2.0', id, error: { ...error, code: -32600 } });
}

/** The first few schema issues, readable. */
const describe = (issues: { path: PropertyKey[]; message: string }[]) =>
  issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || 'message'}: ${i.message}`)
    .join('; ');

/** Hands a standard MCP message to the SDK's stateless Streamable HTTP transport and relays its JSON answer. */
async function answerWithSdk(services: Services, req: Request, res: Response, message: unknown): Promise<void> {
  // The caller's departure and the answer's delivery are this HTTP response's: the SDK sees only a Request made here.
  const endpoint = McpServer.create({ services, binding: bindingOf(req), presented: presentedOf(req), connection: connectionOf(res) });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  try {
    await endpoint.connect(transport);
    const headers = new Headers({ accept: 'application/json, text/event-stream', 'content-type': 'application/json' });
    const version = req.get('mcp-protocol-version');
    if (version) headers.set('mcp-protocol-version', version);
    const request = new globalThis.Request(`http://localhost${req.originalUrl}`, { method: 'POST', headers, body: JSON.stringify(message) });
    const response = await transport.handleRequest(request, { parsedBody: message });
    res.status(response.status);
    response.headers.forEach((value, name) => res.setHeader(name, value));
    const raw = Buffer.from(await response.arrayBuffer());
    if (!response.headers.get('content-type')?.includes('application/json')) {
      res.send(raw);
      return;
    }
    // Errors the transport writes itself (not through `send`) get the same shape; a batch is answered with an array.
    const answered = JSON.parse(raw.toString('utf8')) as JSONRPCMessage | JSONRPCMessage[];
    const normalized = Array.isArray(answered) ? answered.map(McpServer.normalizeError) : McpServer.normalizeError(answered);
    res.removeHeader('content-length');
    res.json(Array.isArray(message) && !Array.isArray(normalized) ? [normalized] : normalized);
  } finally {
    await transport.close();
    await endpoint.close();
  }
}

/**
 * POST: JSON-RPC. Per-profile endpoints first check the profile exists and is readable (404 otherwise). Protocol
 * methods (initialize, ping, tools/list) need no credentials; a tool call with a bad credential reports it as a tool
 * error. Direct tool calls are answered here with the tool payload as `result`; everything else goes through the SDK.
 */
export function rpc(services: Services) {
  return async (req: Request, res: Response): Promise<void> => {
    const body: unknown = req.body;
    try {
      await gate(services, req);
    } catch (thrown) {
      const error = toServiceError(thrown);
      // An unreadable profile is 404 before any JSON-RPC; a gate that could not be checked (the database is away)
      // is answered as the request's own failure would be, in the JSON-RPC envelope with its id.
      if (error.code === 'not_found') sendError(res, error);
      else res.set(error.headers).json({ jsonrpc: '2.0', id: idOf(body), error: toJsonRpcError(error) });
      return;
    }
    if (body === undefined || body === null || typeof body !== 'object') {
      invalidMessage(res, null, 'POST a JSON-RPC request object');
      return;
    }
    if (!Array.isArray(body)) {
      const message = body as Record<string, unknown>;
      const id = idOf(message);
      const call = directCall(message);
      // A JSON-RPC notification gets no answer, so a tool is not run (or paid for) for one; plain compatibility
      // calls without `jsonrpc` are still answered, with id null.
      if (call && message.jsonrpc !== undefined && !('id' in message)) {
        res.status(202).end();
        return;
      }
      if (call) return answerDirectCall(services, req, res, call, id);
    }
    const messages = (Array.isArray(body) ? body : [body]) as unknown[];
    if (messages.length === 0) {
      invalidMessage(res, null, 'an empty batch');
      return;
    }
    const ids = new Set<unknown>();
    for (const [index, message] of messages.entries()) {
      if (message !== null && typeof message === 'object' && !Array.isArray(message) && !('jsonrpc' in message)) (message as Record<string, unknown>).jsonrpc = '2.0';
      const parsed = JSONRPCMessageSchema.safeParse(message);
      if (!parsed.success) {
        const where = Array.isArray(body) ? `batch entry ${index}: ` : '';
        const id = (message as { id?: unknown } | null)?.id;
        invalidMessage(res, typeof id === 'string' || typeof id === 'number' ? id : null, `${where}not a JSON-RPC 2.0 request, notification or response (${describe(parsed.error.issues)})`);
        return;
      }
      // The transport answers a batch once each id has one response: a repeated id would run a request unanswered.
      if ('method' in parsed.data && 'id' in parsed.data) {
        if (ids.has(parsed.data.id)) {
          invalidMessage(res, null, `batch entry ${index}: the id ${JSON.stringify(parsed.data.id)} is used twice`);
          return;
        }
        ids.add(parsed.data.id);
      }
    }
    // A cancellation sent in the same POST as its request would leave the request unanswered (the SDK stops it and
    // sends nothing), and this stateless server keeps the POST open until every request in it is answered: it is
    // dropped, and the request answered. A cancellation alone cancels nothing here (no request outlives its POST).
    const kept = Array.isArray(body) ? messages.filter((m) => (m as { method?: unknown }).method !== 'notifications/cancelled' || 'id' in (m as object)) : body;
    if (Array.isArray(kept) && kept.length === 0) {
      res.status(202).end();
      return;
    }
    try {
      await answerWithSdk(services, req, res, kept);
    } catch (thrown) {
      const error = toServiceError(thrown);
      McpServer.logFailure(services, error, { transport: 'mcp-http' });
      if (!res.headersSent) res.status(error.status).json({ jsonrpc: '2.0', id: null, error: toJsonRpcError(error) });
    }
  };
}
