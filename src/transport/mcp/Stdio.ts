import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import path from 'node:path';
import { projectRoot } from '../../config/Config.js';
import { ServiceError, toJsonRpcError } from '../../errors/ServiceError.js';
import type { Presented } from '../../auth/Caller.js';
import type { Services } from '../../Services.js';
import type { Binding } from '../../contract/Binding.js';
import * as McpServer from './McpServer.js';
import * as Messages from './Messages.js';
import * as RequestContext from '../../log/RequestContext.js';
import * as RequestLog from '../../log/RequestLog.js';

/** The credentials this process acts with, named as the operator set them. */
export function presentedBy(services: Services): Presented {
  const { apiKey, bearerToken } = services.config.stdioCredentials;
  return { apiKey, bearerToken, origin: 'stdio', names: { apiKey: 'PROFILE_EDGE_API_KEY', bearerToken: 'PROFILE_EDGE_BEARER_TOKEN' } };
}

/** The longest line read, as the SDK's stdio transport allows: past it the line is dropped and the transport closes. */
const maxLineBytes = 10 * 1024 * 1024;

/**
 * MCP over stdin and stdout, one JSON-RPC message per line, as the SDK's stdio transport reads and writes it, with two
 * differences. A line that is no JSON-RPC message is answered here, with the request's own id whenever it can be read
 * (as over HTTP): the SDK's reader drops the line before anyone can read its id. And a message counts as sent once
 * stdout has written it (its write callback), not once it was queued: a paid answer stands only when it went out, and a
 * host that closed the pipe gets none.
 */
class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Writes the request's log line once its response is sent. */
  onResponse: ((message: JSONRPCMessage) => void) | undefined;
  private buffer: Buffer | undefined;

  private readonly ondata = (chunk: Buffer): void => {
    this.buffer = this.buffer ? Buffer.concat([this.buffer, chunk]) : chunk;
    if (this.buffer.length > maxLineBytes) {
      this.buffer = undefined;
      this.onerror?.(new Error(`a line longer than ${maxLineBytes} bytes was sent; closing`));
      void this.close();
      return;
    }
    for (let end = this.buffer.indexOf('\n'); end !== -1; end = this.buffer?.indexOf('\n') ?? -1) {
      const line = this.buffer.toString('utf8', 0, end).replace(/\r$/, '');
      this.buffer = this.buffer.subarray(end + 1);
      this.read(line);
    }
  };

  private readonly onstdinError = (error: Error): void => this.onerror?.(error);

  /** One line: handed on as a message, or answered as the envelope error it is. */
  private read(line: string): void {
    let body: unknown;
    try {
      body = JSON.parse(line);
    } catch {
      void this.refuse(null, new ServiceError('invalid_json', 'The line is not valid JSON.'));
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(Messages.withoutExtras(body));
    if (parsed.success) {
      this.onmessage?.(parsed.data);
      return;
    }
    const why = Array.isArray(body)
      ? 'The line is a batch: send one JSON-RPC message per line.'
      : `The line is not a JSON-RPC 2.0 request, notification or response (${Messages.describeIssues(parsed.error.issues)}).`;
    void this.refuse(Messages.idOf(body), new ServiceError('invalid_request', why));
  }

  private refuse(id: Messages.JsonRpcId, error: ServiceError): Promise<void> {
    return this.send({ jsonrpc: '2.0', id, error: toJsonRpcError(error, 'envelope') } as unknown as JSONRPCMessage).catch((failed: unknown) => this.onerror?.(failed as Error));
  }

  async start(): Promise<void> {
    process.stdin.on('data', this.ondata);
    process.stdin.on('error', this.onstdinError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      process.stdout.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    }).finally(() => this.onResponse?.(message));
  }

  async close(): Promise<void> {
    process.stdin.off('data', this.ondata);
    process.stdin.off('error', this.onstdinError);
    // Only a stdin nobody else reads is paused, so the process can end.
    if (process.stdin.listenerCount('data') === 0) process.stdin.pause();
    this.buffer = undefined;
    this.onclose?.();
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
  const transport = new LineTransport();
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
  services.logger.info('mcp stdio ready', { binding: binding.kind === 'profile' ? binding.slug : 'global' });
  await closed;
  // A host that closes mid-call leaves the call to finish (its caller is gone: nothing is charged, or it is credited)
  // before the store closes under it.
  await endpoint.close();
  await endpoint.idle();
}
