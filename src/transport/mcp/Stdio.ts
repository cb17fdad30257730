import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import path from 'node:path';
import { projectRoot } from '../../config/Config.js';
import { ServiceError, toJsonRpcError } from '../../errors/ServiceError.js';
import type { Presented } from '../../auth/Caller.js';
import type { Services } from '../../Services.js';
import type { Binding } from '../../contract/Binding.js';
import * as McpServer from './McpServer.js';
import * as RequestContext from '../../log/RequestContext.js';
import * as RequestLog from '../../log/RequestLog.js';

/** The credentials this process acts with, named as the operator set them. */
export function presentedBy(services: Services): Presented {
  const { apiKey, bearerToken } = services.config.stdioCredentials;
  return { apiKey, bearerToken, origin: 'stdio', names: { apiKey: 'PROFILE_EDGE_API_KEY', bearerToken: 'PROFILE_EDGE_BEARER_TOKEN' } };
}

/**
 * The SDK's stdio transport, except that a message counts as sent once stdout has written it (its write callback),
 * not once it was queued: a paid answer stands only when it went out, and a host that closed the pipe gets none.
 */
class FlushingStdioTransport extends StdioServerTransport {
  /** Writes the request's log line once its response is sent. */
  onResponse: ((message: JSONRPCMessage) => void) | undefined;

  override send(message: JSONRPCMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      process.stdout.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    }).finally(() => this.onResponse?.(message));
  }
}

/** The HTTP-equivalent status of a JSON-RPC response, for its log line: the error's (in data), or 200. */
function statusOf(message: JSONRPCMessage): number {
  if (!('error' in message)) return 'result' in message && (message.result as { isError?: unknown }).isError === true ? Number((message.result as { structuredContent?: { status?: unknown } }).structuredContent?.status ?? 400) : 200;
  const status = (message.error.data as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' ? status : 500;
}

/**
 * Serves MCP over stdin/stdout for a local host. The process acts with the credentials configured for it
 * (PROFILE_EDGE_API_KEY, PROFILE_EDGE_BEARER_TOKEN), checked on every call like any other transport's.
 */
export async function serve(services: Services, binding: Binding): Promise<void> {
  // A local host has no server to fetch SKILL.md from: it is named by where it is on this machine.
  const endpoint = McpServer.create({ services, binding, presented: presentedBy(services), instructions: McpServer.instructions(path.join(projectRoot, 'SKILL.md')) });
  const transport = new FlushingStdioTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await endpoint.connect(transport);
  // Each request line is a request of its own: an id in every log line and error it causes, and a line of its own
  // in the log once answered. Notifications (no id) are neither.
  const onmessage = transport.onmessage;
  const inFlight = new Map<string | number, RequestContext.RequestContext>();
  transport.onmessage = (message: JSONRPCMessage) => {
    if (!('method' in message) || !('id' in message) || message.id === undefined) return onmessage?.(message);
    const context: RequestContext.RequestContext = { id: RequestContext.idFor(undefined), transport: 'mcp_stdio', route: message.method, started: performance.now() };
    inFlight.set(message.id, context);
    RequestContext.run(context, () => onmessage?.(message));
  };
  transport.onResponse = (message) => {
    if (!('id' in message) || message.id === null || message.id === undefined || !('result' in message || 'error' in message)) return;
    const context = inFlight.get(message.id);
    if (!context) return;
    inFlight.delete(message.id);
    RequestLog.write(services.logger, context, { status: statusOf(message), questions: services.config.log.questions });
  };
  // A line that is not JSON, or not a JSON-RPC message, is answered (id null) instead of leaving the client waiting.
  const onerror = transport.onerror;
  transport.onerror = (error) => {
    const unreadable = error instanceof SyntaxError ? 'invalid_json' : error.name === 'ZodError' || 'issues' in error ? 'invalid_request' : undefined;
    if (unreadable) {
      const refusal = toJsonRpcError(new ServiceError(unreadable, unreadable === 'invalid_json' ? 'The line is not valid JSON.' : 'The line is not a JSON-RPC 2.0 message (one object per line; no batches).'), 'envelope');
      void transport.send({ jsonrpc: '2.0', id: null, error: refusal } as unknown as JSONRPCMessage);
    }
    onerror?.(error);
  };
  services.logger.info('mcp stdio ready', { binding: binding.kind === 'profile' ? binding.slug : 'global' });
  await closed;
  // A host that closes mid-call leaves the call to finish (its caller is gone: nothing is charged, or it is credited)
  // before the store closes under it.
  await endpoint.close();
  await endpoint.idle();
}
