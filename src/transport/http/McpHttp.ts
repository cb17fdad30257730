import type { Request, Response } from 'express';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { bindingOf as binding } from '../../contract/Binding.js';
import { ServiceError } from '../../errors/ServiceError.js';
import type { Services } from '../../Services.js';
import * as Tools from '../../../tools/Tools.js';
import type { Admission } from '../../../tools/Tools.js';
import * as Call from '../Call.js';
import * as McpServer from '../mcp/McpServer.js';
import * as Messages from '../mcp/Messages.js';
import { idOf, type JsonRpcId } from '../mcp/Messages.js';
import * as McpWire from '../mcp/McpWire.js';
import { connectionOf, presentedOf, sendError } from './Http.js';

const bindingOf = (req: Request) => binding(req.params.slug === undefined ? undefined : String(req.params.slug));

/**
 * The caller of an MCP endpoint, admitted once per request: a bad credential never makes an MCP endpoint answer HTTP
 * 401, which hosts (mcp-remote) read as an OAuth login challenge; it is reported by the tool calls. A per-profile
 * endpoint's profile must be readable by that caller (not_found otherwise, naming a bad credential when it may be why).
 */
const admit = (services: Services, req: Request): Promise<Admission> => Tools.admit(services, presentedOf(req), bindingOf(req));

/** Writes a JSON-RPC response: the reply's result or error, with the error's headers. */
function respond(res: Response, id: JsonRpcId, reply: McpWire.Reply, status = 200): void {
  if ('error' in reply) res.status(status).set(reply.headers).json({ jsonrpc: '2.0', id, error: reply.error });
  else res.status(status).json({ jsonrpc: '2.0', id, result: reply.result });
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
      res.json(Tools.manifest(bindingOf(req), await admit(services, req)));
    } catch (thrown) {
      sendError(res, Call.failureOf(services, thrown));
    }
  };
}

/** A direct tool call: a tool name as `method`, or the `tool`/`arguments` compatibility fields. */
function directCall(body: Record<string, unknown>): { name: string; args: unknown } | undefined {
  if (typeof body.tool === 'string') return { name: body.tool, args: body.arguments ?? body.params };
  if (typeof body.method === 'string' && Tools.find(body.method)) return { name: body.method, args: body.params };
  return undefined;
}

/** A body that is JSON but no JSON-RPC message: the envelope's code (-32600), with the stable code. */
function invalidMessage(res: Response, id: JsonRpcId, message: string): void {
  unreadable(res, new ServiceError('invalid_request', message), id);
}

/** A POST that could not be read as JSON-RPC (not JSON, too large, too deep): the envelope's code, with the stable code. */
export function unreadable(res: Response, error: ServiceError, id: JsonRpcId = null): void {
  respond(res, id, McpWire.envelopeError(error), error.status);
}

/**
 * An MCP client's request (Streamable HTTP clients accept text/event-stream), which it reads as JSON-RPC whatever the
 * HTTP status: mcp-remote takes a 404 for an old SSE server and hides the message behind its fallback's failure.
 */
function fromMcpClient(req: Request, body: unknown): boolean {
  return (req.get('accept') ?? '').includes('text/event-stream') && body !== null && typeof body === 'object' && !Array.isArray(body) && 'id' in body && 'method' in body;
}

/**
 * Hands MCP messages to the SDK's stateless Streamable HTTP transport and relays its JSON answer; `answerId` is the id
 * a compatibility call is answered with (it may have none).
 */
async function answerWithSdk(services: Services, req: Request, res: Response, message: unknown, options: { admitted: Admission; answerId?: JsonRpcId }): Promise<void> {
  // The caller's departure and the answer's delivery are this HTTP response's: the SDK sees only a Request made here.
  const endpoint = McpServer.create({
    services,
    binding: bindingOf(req),
    presented: presentedOf(req),
    admitted: options.admitted,
    connection: connectionOf(res),
    // SKILL.md is served beside the endpoint.
    instructions: McpServer.instructions('/SKILL.md on this server'),
    headers: (headers) => res.set(headers),
  });
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
    const normalized = Array.isArray(answered) ? answered.map(Messages.normalizeError) : { ...Messages.normalizeError(answered), ...(options.answerId !== undefined && { id: options.answerId }) };
    res.removeHeader('content-length');
    res.json(Array.isArray(message) && !Array.isArray(normalized) ? [normalized] : normalized);
  } finally {
    await transport.close();
    await endpoint.close();
  }
}

/**
 * POST: JSON-RPC. Per-profile endpoints first check the profile exists and is readable (404 otherwise; a JSON-RPC
 * error with the same message to an MCP client's request, which hosts show). Protocol
 * methods (initialize, ping, tools/list) need no credentials; a tool call with a bad credential reports it as a tool
 * error. Direct tool calls are answered here with the tool payload as `result`; everything else goes through the SDK.
 */
export function rpc(services: Services) {
  return async (req: Request, res: Response): Promise<void> => {
    const body: unknown = req.body;
    let admitted: Admission;
    try {
      admitted = await admit(services, req);
    } catch (thrown) {
      const error = Call.failureOf(services, thrown);
      // An unreadable profile is 404 before any JSON-RPC, except to an MCP client; a gate that could not be checked
      // (the database is away) is answered as the request's own failure would be, in the envelope with its id.
      if (error.code === 'not_found' && !fromMcpClient(req, body)) sendError(res, error);
      else respond(res, idOf(body), McpWire.rpcError(error));
      return;
    }
    if (body === undefined || body === null || typeof body !== 'object') {
      invalidMessage(res, null, 'POST a JSON-RPC request object');
      return;
    }
    const call = Array.isArray(body) ? undefined : directCall(body as Record<string, unknown>);
    if (call) {
      const message = body as Record<string, unknown>;
      // A JSON-RPC notification gets no answer, so a tool is not run (or paid for) for one; plain compatibility
      // calls without `jsonrpc` are still answered, with their id or null, as the JSON-RPC request they stand for.
      if (message.jsonrpc !== undefined && !('id' in message)) {
        res.status(202).end();
        return;
      }
      const id = idOf(message);
      if (!Tools.find(call.name)) return respond(res, id, McpWire.rpcError(Tools.unknownTool(call.name)));
      // A JSON-RPC request's params are an object or absent: anything else would be refused as no request at all.
      if (call.args !== undefined && (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args))) {
        return respond(res, id, McpWire.rpcError(new ServiceError('invalid_request', 'the arguments must be a JSON object (params of a direct call, or arguments)')));
      }
      return answer(services, req, res, { jsonrpc: '2.0', id: id ?? 0, method: call.name, params: call.args ?? {} }, { admitted, answerId: id });
    }
    // Top-level members JSON-RPC does not define are ignored (SPEC allows them; the SDK's schemas would refuse them).
    const messages = (Array.isArray(body) ? body : [body]).map(Messages.withoutExtras);
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
        invalidMessage(res, idOf(message), `${where}not a JSON-RPC 2.0 request, notification or response (${Messages.describeIssues(parsed.error.issues)})`);
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
    const kept = Array.isArray(body) ? messages.filter((m) => (m as { method?: unknown }).method !== 'notifications/cancelled' || 'id' in (m as object)) : messages[0];
    if (Array.isArray(kept) && kept.length === 0) {
      res.status(202).end();
      return;
    }
    return answer(services, req, res, kept, { admitted });
  };
}

/** Answers through the SDK; what fails around it is answered in the envelope, if anything can still be. */
async function answer(services: Services, req: Request, res: Response, message: unknown, options: { admitted: Admission; answerId?: JsonRpcId }): Promise<void> {
  // Checked as it came, before the SDK's schemas copy it: a copy loses a field named `__proto__`.
  const refused = Array.isArray(message) ? undefined : Messages.refusal(message as JSONRPCMessage);
  if (refused) {
    res.json(options.answerId === undefined ? refused : { ...refused, id: options.answerId });
    return;
  }
  try {
    await answerWithSdk(services, req, res, message, options);
  } catch (thrown) {
    const error = Call.failureOf(services, thrown);
    if (!res.headersSent) respond(res, options.answerId ?? null, McpWire.rpcError(error), error.status);
  }
}
