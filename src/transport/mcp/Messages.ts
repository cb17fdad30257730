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

/**
 * Tool arguments the SDK's own schema cannot read as a record although they are a JSON object: a field named
 * `constructor` (no tool has one) makes the object look like an instance to it. Refused naming the field, as a tool
 * refuses any unknown field.
 */
function unreadableArguments(message: JSONRPCMessage): string | undefined {
  if (!('method' in message) || message.method !== 'tools/call') return undefined;
  const args = (message.params as { arguments?: unknown } | undefined)?.arguments;
  return args !== null && typeof args === 'object' && !Array.isArray(args) && Object.hasOwn(args, 'constructor') ? 'constructor' : undefined;
}

/** An invalid-params error response for a request its handler's schema refuses, or undefined when it is fine. */
export function refusal(message: JSONRPCMessage): JSONRPCMessage | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  // Answered as the tool answers any unknown field: a tool error result the model can read and correct.
  const field = unreadableArguments(message);
  if (field) return { jsonrpc: '2.0', id: message.id, result: McpWire.toolErrorResult(new ServiceError('invalid_request', `unknown field: ${field}`)) };
  const parsed = requestSchemas.get(message.method)?.safeParse(message);
  if (!parsed || parsed.success) return undefined;
  const issues = (parsed.error?.issues ?? []).slice(0, 5).map((i) => `${i.path.map(String).join('.') || 'request'}: ${i.message}`);
  const error = new ServiceError('invalid_request', `invalid ${message.method} request: ${issues.join('; ')}`);
  return { jsonrpc: '2.0', id: message.id, error: toJsonRpcError(error) };
}

