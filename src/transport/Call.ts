import type { Presented } from '../auth/Caller.js';
import type { Binding } from '../contract/Binding.js';
import { type ServiceError, toServiceError } from '../errors/ServiceError.js';
import type { InboundCredential, OutboundReceipt } from '../payments/Rail.js';
import type { Services } from '../Services.js';
import * as Tools from '../../tools/Tools.js';
import type { Admission, Connection } from '../../tools/Tools.js';

/** What a call came to besides its payload or failure: a paid answer's receipt, an ignored credential's problem. */
export type Extras = { receipt?: OutboundReceipt | undefined; note?: ServiceError | undefined };

/**
 * One wire (REST, MCP tools/call, an MCP method named after a tool): how it renders what a tool call came to. Its
 * transport reads the request (credentials, the payment credential where its protocol carries it, the connection).
 */
export type Wire<Reply> = {
  /** What a bad credential does here: fails the call, or is noted beside a free tool's answer (MCP tools/call). */
  badCredentials: 'refuse' | 'note';
  /** What a payment challenge names as the resource paid for, when not the REST path: MCP names the tool. */
  resource?: (tool: string) => string;
  /** A tool's payload, with the receipt of a paid answer. */
  result(payload: unknown, extras: Extras): Reply;
  /** A refusal or failure, a payment challenge included. */
  failure(error: ServiceError, extras: Extras): Reply;
};

/** One tool call, as a transport read it from its request. */
export type Request = {
  tool: string;
  args: unknown;
  binding: Binding;
  presented: Presented;
  /** The endpoint already admitted the caller for this request (MCP over HTTP): not checked twice. */
  admitted?: Admission | undefined;
  /** The payment credential where the wire's protocol carries it (headers, MCP `params._meta`). */
  credential: InboundCredential | undefined;
  connection?: Connection | undefined;
};

/** Any thrown value as the error a caller sees; the failures the operator must see are logged here, once. */
export function failureOf(services: Services, thrown: unknown, context: Record<string, unknown> = {}): ServiceError {
  const error = toServiceError(thrown);
  if (error.reported) services.logger.error('request failed', { ...context, code: error.code, error: error.cause ?? error });
  return error;
}

/**
 * The one sequence every transport runs for a tool call: invoke the tool with what the request presents, collect the
 * receipt and any note, and render the payload or the failure on the wire.
 */
export async function call<Reply>(services: Services, wire: Wire<Reply>, request: Request): Promise<Reply> {
  const extras: Extras = {};
  try {
    const payload = await Tools.invoke({
      services,
      name: request.tool,
      args: request.args,
      presented: request.presented,
      admitted: request.admitted,
      binding: request.binding,
      badCredentials: wire.badCredentials,
      onNote: (problem) => (extras.note = problem),
      payment: { credential: request.credential, receipt: (receipt) => (extras.receipt = receipt), resource: wire.resource?.(request.tool) },
      connection: request.connection,
    });
    return wire.result(payload, extras);
  } catch (thrown) {
    return wire.failure(failureOf(services, thrown, { tool: request.tool }), extras);
  }
}
