import { credentialKey, receiptKey } from '../../contract/Payment.js';
import { type ServiceError, toErrorBody, toJsonRpcError } from '../../errors/ServiceError.js';
import type { OutboundReceipt } from '../../payments/Rail.js';
import type { Wire } from '../Call.js';

/** Where a reply says what was wrong with a credential that was ignored. */
const noteKey = 'profile-edge/credential';

/** A JSON-RPC error object, as the error table renders it. */
export type JsonRpcError = ReturnType<typeof toJsonRpcError>;

/** What an MCP request is answered with: a result, or a JSON-RPC error (with the HTTP headers that go with it). */
export type Reply = { result: Record<string, unknown> } | { error: JsonRpcError; headers: Record<string, string> };

type ToolResult = { content: { type: 'text'; text: string }[]; structuredContent: Record<string, unknown>; isError?: true; _meta?: Record<string, unknown> };

/** A tool's payload as a `tools/call` result: the JSON as text for any host, and as structured content. */
export function toolResult(payload: unknown): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(payload) }], structuredContent: payload as Record<string, unknown> };
}

/** A failed tool call as a `tools/call` result with `isError`, so the model sees the Error body and can correct itself. */
export function toolErrorResult(error: ServiceError): ToolResult {
  return { ...toolResult({ ...toErrorBody(error), status: error.status }), isError: true };
}

/** A 402 says how to pay over MCP: the challenge in `data.challenges`, the credential back in `_meta` (no HTTP header). */
function explained(error: ServiceError): ServiceError {
  if (error.code !== 'payment_required' || error.details.challenges === undefined) return error;
  return error.withMessage(`${error.message} Pay data.challenges[0] and repeat the same call with the credential in params._meta["${credentialKey}"] (or in the arguments' _meta).`);
}

/** A failure as a JSON-RPC error. */
export const rpcError = (error: ServiceError): Reply => ({ error: toJsonRpcError(explained(error)), headers: error.headers });

/** A failure of the message itself (not JSON-RPC), under the envelope's JSON-RPC code. */
export const envelopeError = (error: ServiceError): Reply => ({ error: toJsonRpcError(error, 'envelope'), headers: error.headers });

/** A paid answer's receipt in the result's `_meta`. */
function withReceipt<R extends Record<string, unknown>>(result: R, receipt: OutboundReceipt | undefined): R {
  return receipt === undefined ? result : { ...result, _meta: { ...(result._meta as object | undefined), [receiptKey]: receipt.mcp } };
}

/**
 * An answer despite a credential that was ignored, saying what is wrong with it: a text block the model reads, and
 * `_meta` for clients. The payload itself stays the contract's.
 */
function withNote(result: ToolResult, note: ServiceError | undefined): ToolResult {
  if (!note) return result;
  const text = `Note: ${note.message} It was ignored for this free call; paid calls fail until it is fixed.`;
  return { ...result, content: [...result.content, { type: 'text', text }], _meta: { ...result._meta, [noteKey]: { error: note.code, message: note.message } } };
}

/** The resource an MCP payment challenge names: the tool, as x402's MCP transport writes it (`mcp://tool/<name>`). */
function mcpResource(tool: string): string {
  return `mcp://tool/${tool}`;
}

/**
 * `tools/call`: the payload as a tool result; a failure as a tool result with `isError` the model can read, except
 * where the error table says the protocol answers it (a payment challenge: -32042 with `data.challenges`, as MCP
 * payment clients expect). A bad credential is ignored by a free tool, and every answer says so.
 */
export const toolCall: Wire<Reply> = {
  badCredentials: 'note',
  resource: mcpResource,
  result: (payload, { receipt, note }) => ({ result: withReceipt(withNote(toolResult(payload), note), receipt) }),
  // The failures the protocol answers (a challenge, an unknown tool) come before any credential is looked at.
  failure: (error, { note }) => (error.protocolLevel ? rpcError(error) : { result: withNote(toolErrorResult(error), note) }),
};

/** A tool name as the JSON-RPC method: the payload itself is the result; every failure a JSON-RPC error. */
export const direct: Wire<Reply> = {
  badCredentials: 'refuse',
  resource: mcpResource,
  result: (payload, { receipt }) => ({ result: withReceipt(payload as Record<string, unknown>, receipt) }),
  failure: rpcError,
};
