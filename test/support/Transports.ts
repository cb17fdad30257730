import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { projectRoot } from '../../src/config/Config.js';
import { toErrorBody, toServiceError } from '../../src/errors/ServiceError.js';
import type { ToolName } from '../../src/contract/Mcp.js';
import * as PaymentCredentials from '../../src/payments/Credentials.js';
import * as Tools from '../../tools/Tools.js';
import type { Binding } from '../../tools/Tools.js';
import type { Environment } from './Environment.js';

export type Credentials = { apiKey?: string; bearerToken?: string };

/** What any transport answered, reduced to what the contract fixes: a payload, or a status with an Error body. */
export type Outcome =
  | { ok: true; payload: Record<string, unknown>; headers?: Headers }
  | { ok: false; status: number; body: Record<string, unknown>; headers?: Headers };

/** One tool call; `meta` is MCP request metadata (a payment credential), sent over REST as the body's `_meta`. */
export type Call = { tool: ToolName; args?: Record<string, unknown>; binding: Binding; credentials?: Credentials; meta?: Record<string, unknown> };

export type TransportName = 'handler' | 'rest' | 'mcp-http' | 'mcp-stdio';

export type Transport = { name: TransportName; call(call: Call): Promise<Outcome>; close(): Promise<void> };

/** The tool handler itself, as every transport calls it. */
export function handler(environment: Environment): Transport {
  return {
    name: 'handler',
    async call({ tool, args, binding, credentials, meta }) {
      try {
        const payload = await Tools.invoke({
          services: environment.services,
          name: tool,
          args,
          binding,
          presented: { ...credentials, origin: 'handler-test' },
          payment: { credential: PaymentCredentials.fromMeta(meta) },
        });
        return { ok: true, payload: payload as Record<string, unknown> };
      } catch (thrown) {
        const error = toServiceError(thrown);
        return { ok: false, status: error.status, body: toErrorBody(error) };
      }
    },
    close: async () => undefined,
  };
}

const headersOf = (credentials: Credentials | undefined): Record<string, string> => ({
  ...(credentials?.apiKey !== undefined && { 'service-api-key': credentials.apiKey }),
  ...(credentials?.bearerToken !== undefined && { authorization: `Bearer ${credentials.bearerToken}` }),
});

/** The REST path a tool call maps onto, as a plain HTTP client would send it. */
export function restRequest(call: Call): { method: string; path: string; body?: string } {
  const slug = call.binding.kind === 'profile' ? encodeURIComponent(call.binding.slug) : undefined;
  if (call.tool === 'profile_list_channels') {
    if (slug) return { method: 'GET', path: `/api/profiles/${slug}/channels` };
    const args = call.args ?? {};
    if (args.slug !== undefined) return { method: 'GET', path: `/api/profiles/${encodeURIComponent(String(args.slug))}/channels` };
    const query = new URLSearchParams(Object.entries(args).map(([k, v]): [string, string] => [k, String(v)]));
    return { method: 'GET', path: `/api/profiles${query.size > 0 ? `?${query}` : ''}` };
  }
  if (call.tool === 'profile_quote') {
    return { method: 'POST', path: slug ? `/api/profiles/${slug}/quote` : '/api/ask/quote', body: call.args ? JSON.stringify(call.args) : undefined };
  }
  if (call.tool === 'profile_query') {
    return { method: 'POST', path: slug ? `/api/profiles/${slug}/query` : '/api/ask/query', body: JSON.stringify({ ...call.args, ...(call.meta && { _meta: call.meta }) }) };
  }
  throw new Error(`no REST mapping for ${call.tool}`);
}

/** Plain fetch against the REST paths. */
export function rest(url: string): Transport {
  return {
    name: 'rest',
    async call(call) {
      const request = restRequest(call);
      const response = await fetch(`${url}${request.path}`, {
        method: request.method,
        headers: { ...headersOf(call.credentials), ...(request.body !== undefined && { 'content-type': 'application/json' }) },
        body: request.body,
      });
      const body = (await response.json()) as Record<string, unknown>;
      return response.ok ? { ok: true, payload: body, headers: response.headers } : { ok: false, status: response.status, body, headers: response.headers };
    },
    close: async () => undefined,
  };
}

/** A `tools/call` result as an outcome: `isError` results carry the Error body and status in structured content. */
function fromToolResult(result: Record<string, unknown>): Outcome {
  const structured = result.structuredContent as Record<string, unknown>;
  const text = (result.content as { type: string; text: string }[])[0]?.text;
  if (JSON.stringify(JSON.parse(text ?? 'null')) !== JSON.stringify(structured)) throw new Error('text content differs from structuredContent');
  if (result.isError) {
    const { status, ...body } = structured;
    return { ok: false, status: status as number, body };
  }
  return { ok: true, payload: structured };
}

/** The official SDK client keeps one connection per endpoint and credential set, like a real host. */
function pooled(name: TransportName, connect: (binding: Binding, credentials: Credentials | undefined) => Promise<Client>): Transport {
  const clients = new Map<string, Promise<Client>>();
  return {
    name,
    async call({ tool, args, binding, credentials, meta }) {
      const key = JSON.stringify([binding, credentials ?? {}]);
      let client = clients.get(key);
      if (!client) {
        client = connect(binding, credentials);
        clients.set(key, client);
      }
      try {
        return fromToolResult((await (await client).callTool({ name: tool, arguments: args ?? {}, ...(meta && { _meta: meta }) })) as Record<string, unknown>);
      } catch (error) {
        // A payment challenge is a JSON-RPC error (-32042) whose data is the Error body with its status.
        const data = (error as { data?: { error?: unknown; status?: unknown } }).data;
        if (typeof data?.error === 'string' && typeof data.status === 'number') {
          const { status, ...body } = data;
          return { ok: false, status, body };
        }
        // An endpoint-level refusal (404 or 401 on a per-profile endpoint) arrives as an HTTP error.
        // A stdio server that refuses to start for this binding (exit 2, "no profile") is the stdio form of a 404.
        if (error instanceof StdioRefusal) {
          clients.delete(key);
          return { ok: false, status: 404, body: { error: 'not_found', message: error.message } };
        }
        const match = /Error POSTing to endpoint: (\{.*\})$/s.exec((error as Error).message);
        if (match && typeof (error as { code?: unknown }).code === 'number') {
          clients.delete(key);
          return { ok: false, status: (error as { code: number }).code, body: JSON.parse(match[1]!) };
        }
        throw error;
      }
    },
    async close() {
      await Promise.all([...clients.values()].map(async (c) => (await c.catch(() => undefined))?.close()));
    },
  };
}

/** MCP over Streamable HTTP with the official SDK client, at `/mcp` or `/{slug}/mcp`. */
export function mcpHttp(url: string): Transport {
  return pooled('mcp-http', async (binding, credentials) => {
    const endpoint = binding.kind === 'profile' ? `${url}/${encodeURIComponent(binding.slug)}/mcp` : `${url}/mcp`;
    const client = new Client({ name: 'contract-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: headersOf(credentials) } }));
    return client;
  });
}

/** `profile-edge mcp --profile SLUG` exited at start because the slug names no profile these credentials can read. */
class StdioRefusal extends Error {}

/** The command line that starts the stdio MCP server. */
export const cli = { command: process.execPath, args: [path.join(projectRoot, 'bin', 'profile-edge.mjs')] };

/** MCP over stdio with the official SDK client: `profile-edge mcp` spawned against the environment's database. */
export function mcpStdio(environment: Environment, extraEnv: Record<string, string> = {}): Transport {
  return pooled('mcp-stdio', async (binding, credentials) => {
    const client = new Client({ name: 'contract-test', version: '1.0.0' });
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      ...environment.env,
      ...extraEnv,
      ...(credentials?.apiKey !== undefined && { PROFILE_EDGE_API_KEY: credentials.apiKey }),
      ...(credentials?.bearerToken !== undefined && { PROFILE_EDGE_BEARER_TOKEN: credentials.bearerToken }),
    };
    const args = [...cli.args, 'mcp', ...(binding.kind === 'profile' ? ['--profile', binding.slug] : [])];
    const transport = new StdioClientTransport({ command: cli.command, args, env, cwd: environment.directory, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      await client.connect(transport);
    } catch (error) {
      // Give the child a moment to finish writing why it exited.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const refusal = /no profile "[^"]*"/.exec(stderr);
      if (refusal) throw new StdioRefusal(refusal[0]);
      throw error;
    }
    return client;
  });
}
