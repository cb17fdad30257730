import * as RequestContext from '../log/RequestContext.js';

/**
 * The one error table: every failure the service reports has a stable string code, and this module alone maps a code
 * to its HTTP status and its JSON-RPC error code.
 */

/**
 * `envelope`: the JSON-RPC code when the failure is the message itself rather than its params (a body that is no
 * JSON-RPC request). `protocol`: over MCP `tools/call` the failure is a JSON-RPC error, not a tool result with
 * `isError` (a payment challenge, which MCP payment clients read from the error; a tool that does not exist).
 */
type Entry = { status: number; jsonRpc: number; message: string; envelope?: number; protocol?: true };

const table = {
  invalid_json: { status: 400, jsonRpc: -32700, message: 'The request body is not valid JSON.' },
  invalid_request: { status: 400, jsonRpc: -32602, envelope: -32600, message: 'The request is invalid.' },
  invalid_cursor: { status: 400, jsonRpc: -32602, message: 'The cursor is not one this service issued.' },
  invalid_limit: { status: 400, jsonRpc: -32602, message: 'limit must be an integer from 1 to 100.' },
  missing_rail: { status: 400, jsonRpc: -32602, message: 'rail is required for on-chain price metadata: tempo or x402_base.' },
  invalid_rail: { status: 400, jsonRpc: -32602, message: 'rail must be tempo or x402_base.' },
  missing_question: { status: 400, jsonRpc: -32602, message: 'question is required.' },
  invalid_scope: { status: 400, jsonRpc: -32602, message: 'The scope is invalid.' },
  invalid_payment_proof: {
    status: 400,
    jsonRpc: -32602,
    message: 'paymentProof and quoteNonce belong to an earlier flow this server does not accept: send rail (tempo or x402_base) without them, pay the 402 challenge, and retry with its credential (Authorization: Payment, PAYMENT-SIGNATURE, or MCP params._meta["org.paymentauth/credential"]); or pay with an API key (service-api-key and paymentMode).',
  },
  missing_payment_mode: { status: 400, jsonRpc: -32602, message: 'paymentMode (unlocks or credits) is required with an API key.' },
  invalid_api_key: { status: 401, jsonRpc: -32001, message: 'The service-api-key header is malformed, unknown or revoked.' },
  api_key_required: { status: 401, jsonRpc: -32001, message: 'This call needs a payment: a service-api-key header with paymentMode, or rail (tempo or x402_base) to pay on-chain.' },
  invalid_bearer_token: { status: 401, jsonRpc: -32001, message: 'The bearer token is malformed, unknown or revoked.' },
  payment_required: { status: 402, jsonRpc: -32042, protocol: true, message: 'Payment is required.' },
  insufficient_balance: { status: 402, jsonRpc: -32002, message: 'The account balance does not cover this query.' },
  forbidden_origin: { status: 403, jsonRpc: -32000, message: 'Requests from this Origin are not allowed.' },
  forbidden_host: { status: 403, jsonRpc: -32000, message: 'Requests for this Host are not allowed.' },
  not_found: { status: 404, jsonRpc: -32004, message: 'Not found.' },
  unknown_tool: { status: 404, jsonRpc: -32602, protocol: true, message: 'No tool of that name.' },
  method_not_found: { status: 404, jsonRpc: -32601, message: 'No JSON-RPC method of that name.' },
  method_not_allowed: { status: 405, jsonRpc: -32601, message: 'Method not allowed.' },
  conflict: { status: 409, jsonRpc: -32009, message: 'That already exists.' },
  request_timeout: { status: 408, jsonRpc: -32600, message: 'The request was not received in time.' },
  headers_too_large: { status: 431, jsonRpc: -32600, message: 'The request headers are too large.' },
  unsupported_media_type: { status: 415, jsonRpc: -32600, message: 'The request body could not be decoded (content encoding or charset).' },
  range_not_satisfiable: { status: 416, jsonRpc: -32600, message: 'The requested range is not satisfiable.' },
  payload_too_large: { status: 413, jsonRpc: -32600, message: 'The request body is too large.' },
  no_relevant_content: { status: 422, jsonRpc: -32022, message: 'No indexed content is relevant enough to price this question.' },
  rate_limited: { status: 429, jsonRpc: -32029, message: 'Too many requests.' },
  rail_unavailable: { status: 503, jsonRpc: -32003, message: 'This payment rail is not configured on this server.' },
  service_unavailable: { status: 503, jsonRpc: -32003, message: 'The service is unavailable.' },
  internal_error: { status: 500, jsonRpc: -32603, message: 'Internal error.' },
} as const satisfies Record<string, Entry>;

export type ErrorCode = keyof typeof table;

export const errorCodes = Object.keys(table) as ErrorCode[];

/** Extra Error-body fields (the contract allows extra properties) and the HTTP headers that go with them. */
export type ErrorDetails = Record<string, unknown>;

/** A failure with a stable code; everything a caller sees of it comes from the table and `details`. */
export class ServiceError extends Error {
  override name = 'ServiceError';
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  readonly headers: Record<string, string>;

  /** The operator must see it: a failure of this server or of what it stands on, logged once with its cause. */
  readonly reported: boolean;

  constructor(code: ErrorCode, message?: string, options: { details?: ErrorDetails; headers?: Record<string, string>; cause?: unknown; reported?: boolean } = {}) {
    super(message ?? table[code].message, { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
    this.headers = options.headers ?? {};
    this.reported = options.reported ?? code === 'internal_error';
  }

  get status(): number {
    return table[this.code].status;
  }

  get jsonRpcCode(): number {
    return table[this.code].jsonRpc;
  }

  /** The same error in other words: what a transport adds to say how to answer it on its wire. */
  withMessage(message: string): ServiceError {
    return new ServiceError(this.code, message, { details: this.details, headers: this.headers, cause: this.cause, reported: this.reported });
  }

  /** Over MCP `tools/call`, answered as a JSON-RPC error rather than as a tool result with `isError`. */
  get protocolLevel(): boolean {
    return (table[this.code] as Entry).protocol === true;
  }
}

/** The HTTP status of a code. */
export function statusOf(code: ErrorCode): number {
  return table[code].status;
}

/** Any thrown value as a ServiceError; unknown failures become `internal_error` with the cause kept for the log. */
export function toServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  return new ServiceError('internal_error', undefined, { cause: error });
}

/** The contract's Error body, with the id of the request it answers (an additional field) when there is one. */
export function toErrorBody(error: ServiceError): { error: ErrorCode; message: string } & ErrorDetails {
  const requestId = RequestContext.current()?.id;
  // What people and logs read first leads: the code, the message and the request's id, then the details (the rails,
  // the challenges); details never stand in for those three.
  const { error: _code, message: _message, requestId: _requestId, ...details } = error.details;
  return { error: error.code, message: error.message, ...(requestId !== undefined && { requestId }), ...details };
}

/** The code of a JSON-RPC error that did not come from this table (the MCP SDK's own protocol errors). */
export function codeOfJsonRpc(code: number): ErrorCode {
  switch (code) {
    case -32700:
      return 'invalid_json';
    case -32600:
    case -32602:
      return 'invalid_request';
    case -32601:
      return 'method_not_found';
    default:
      return (Object.keys(table) as ErrorCode[]).find((c) => table[c].jsonRpc === code) ?? 'internal_error';
  }
}

/**
 * A JSON-RPC error object: the Error body travels in `data`, with the HTTP-equivalent status beside it. `of` is
 * `envelope` when the failure is the message itself (not JSON, not a JSON-RPC request), not its params.
 */
export function toJsonRpcError(error: ServiceError, of: 'params' | 'envelope' = 'params'): { code: number; message: string; data: Record<string, unknown> } {
  const code = of === 'envelope' ? ((table[error.code] as Entry).envelope ?? error.jsonRpcCode) : error.jsonRpcCode;
  return { code, message: error.message, data: { ...toErrorBody(error), status: error.status } };
}
