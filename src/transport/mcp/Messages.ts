/** The JSON-RPC messages this server reads and writes, checked and shaped by the one error table. */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { CallToolRequestSchema, InitializeRequestSchema, ListToolsRequestSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ServiceError, codeOfJsonRpc, toErrorBody, toJsonRpcError } from '../../errors/ServiceError.js';
import * as Tools from '../../../tools/Tools.js';
import * as McpWire from './McpWire.js';

const sdkPrefix = /^(?:MCP error -?\d+: )+/;

/**
 * Gives every outgoing JSON-RPC error the shape of the one error table: `data.error` holds the stable code (also for
 * the SDK's own protocol errors, such as -32601 for an unknown method) and the message appears once.
 */
export function normalizeError(message: JSONRPCMessage): JSONRPCMessage {
  if (!('error' in message) || typeof message.error !== 'object' || message.error === null) return message;
  const { code, message: text, data } = message.error;
  const plain = String(text ?? '').replace(sdkPrefix, '');
  const known = data !== null && typeof data === 'object' && typeof (data as Record<string, unknown>).error === 'string';
  if (known) return { ...message, error: { code, message: plain, data } };
  const fallback = new ServiceError(codeOfJsonRpc(code), plain || undefined);
  const body = { ...toErrorBody(fallback), status: fallback.status, ...(data !== undefined && { detail: data }) };
  return { ...message, error: { code, message: fallback.message, data: body } };
}

/** The top-level members JSON-RPC 2.0 defines for a request, a notification or a response. */
const members = new Set(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);

/**
 * A message without the top-level members JSON-RPC does not define (a client's `"trace"`, say): SPEC lets clients add
 * them, and the server ignores them, where the SDK's strict schemas would refuse the whole message. Anything that is
 * no single object is returned as it came.
 */
export function withoutExtras(message: unknown): unknown {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return message;
  const keys = Object.keys(message);
  if (keys.every((key) => members.has(key))) return message;
  return Object.fromEntries(keys.filter((key) => members.has(key)).map((key) => [key, (message as Record<string, unknown>)[key]]));
}

/** A JSON-RPC id as a response carries it: the request's own, or null when it cannot be read. */
export type JsonRpcId = string | number | null;

/** The id of a single JSON-RPC message as it came (however malformed the rest), or null (a batch, a notification, no id). */
export function idOf(body: unknown): JsonRpcId {
  const id = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

type Issue = { path: PropertyKey[]; message: string; code?: string; errors?: Issue[][] };

/**
 * The first few schema issues of a message that is no JSON-RPC message, readable. A message fits none of the shapes
 * of a union (request, notification, response, error): it is described by the shape it came closest to, the one with
 * the fewest issues, so a request whose params are no object reads "params: …" rather than "Invalid input".
 */
export function describeIssues(issues: readonly Issue[]): string {
  const closest = (issue: Issue): Issue[] => {
    if (issue.code !== 'invalid_union' || !issue.errors?.length) return [issue];
    const branch = issue.errors.reduce((best, next) => (next.length < best.length ? next : best));
    return branch.flatMap((i) => closest({ ...i, path: [...issue.path, ...i.path] }));
  };
  return issues
    .flatMap(closest)
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || 'message'}: ${i.message}`)
    .join('; ');
}

/** Anything with zod's `safeParse` (the SDK's schemas are zod 4, ours zod 3). */
type Checkable = { safeParse(value: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } } };

// The handler's own view of tools/call: the SDK has already checked the request against CallToolRequestSchema.
export const callTool = z.object({ method: z.literal('tools/call'), params: z.object({ name: z.string(), arguments: z.unknown() }).passthrough() });
export const directCall = (name: string) => z.object({ method: z.literal(name), params: z.record(z.unknown()).optional() });

/** What each method's handler parses: checked before the SDK sees a request, which would answer a miss with -32603. */
const requestSchemas = new Map<string, Checkable>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  // The SDK checks tools/call against its own schema before our handler runs (and answers a miss with a zod dump).
  ['tools/call', CallToolRequestSchema],
  ...Tools.all.map((t): [string, Checkable] => [t.name, directCall(t.name)]),
]);

/** Names every object inherits: a schema that copies fields one by one loses or misreads an own field so named. */
const inherited = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * A field of a tool's arguments that a schema on the way cannot carry although the arguments are a JSON object: one
 * named like an `Object.prototype` member (`constructor` makes the SDK's record schema take the object for an
 * instance; `__proto__` vanishes when a schema copies the fields). No tool has such a field: it is refused by name,
 * as a tool refuses any unknown field. `tools/call` carries the arguments in `arguments`, a direct method in `params`.
 */
function unreadableField(message: JSONRPCMessage): string | undefined {
  if (!('method' in message)) return undefined;
  const params = message.params as Record<string, unknown> | undefined;
  const args = message.method === 'tools/call' ? params?.arguments : Tools.find(message.method) ? params : undefined;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return undefined;
  return Object.keys(args).find((key) => inherited.has(key));
}

/** An invalid-params error response for a request its handler's schema refuses, or undefined when it is fine. */
export function refusal(message: JSONRPCMessage): JSONRPCMessage | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  // Answered as the tool answers any unknown field: over tools/call a tool error result the model can read and correct.
  const field = unreadableField(message);
  if (field) {
    const error = new ServiceError('invalid_request', `unknown field: ${field}`);
    return message.method === 'tools/call' ? { jsonrpc: '2.0', id: message.id, result: McpWire.toolErrorResult(error) } : { jsonrpc: '2.0', id: message.id, error: toJsonRpcError(error) };
  }
  const parsed = requestSchemas.get(message.method)?.safeParse(message);
  if (!parsed || parsed.success) return undefined;
  const issues = (parsed.error?.issues ?? []).slice(0, 5).map((i) => `${i.path.map(String).join('.') || 'request'}: ${i.message}`);
  const error = new ServiceError('invalid_request', `invalid ${message.method} request: ${issues.join('; ')}`);
  return { jsonrpc: '2.0', id: message.id, error: toJsonRpcError(error) };
}

