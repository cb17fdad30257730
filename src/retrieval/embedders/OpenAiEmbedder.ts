import type { Dispatcher } from 'undici';
import { lazy } from '../../errors/Lazy.js';
import { z } from 'zod';
import { ServiceError } from '../../errors/ServiceError.js';
import { type Embedder, normalize } from './Embedder.js';

const Response = z.object({ data: z.array(z.object({ index: z.number().int(), embedding: z.array(z.number()) }).passthrough()) }).passthrough();

/**
 * An embedder over any OpenAI-compatible `/embeddings` endpoint: hosted APIs, or self-hosted servers such as
 * text-embeddings-inference, vLLM or Ollama. `baseUrl` ends in `/v1` (or whatever precedes `/embeddings`).
 * Requests go through undici's `request` over kept-alive connections: a question's embedding costs the event loop
 * 0.3 ms there against 1 ms through `fetch`, time every question with vectors on would otherwise spend.
 */
export function create(options: {
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  dimensions?: number | undefined;
  batchSize?: number | undefined;
  /** The most one request may take, start to end (a caller's signal may end it sooner). */
  timeoutMs?: number;
}): Embedder {
  const batchSize = options.batchSize ?? 64;
  const timeout = options.timeoutMs ?? 30_000;
  // undici's own keep-alive (4 s) stays under the 5 s after which many servers drop an idle connection unannounced.
  // Loaded with the first embedding: a process that never embeds never loads it.
  const client = lazy('The embedding client (undici)', async () => {
    const { Agent, request } = await import('undici');
    return { request, connections: new Agent({ connect: { timeout } }) };
  });
  const post = async (input: string[], signal: AbortSignal) => {
    const { request, connections } = await client();
    return request(`${options.baseUrl}/embeddings`, {
      method: 'POST',
      dispatcher: connections,
      headers: { 'content-type': 'application/json', 'user-agent': 'profile-edge', ...(options.apiKey && { authorization: `Bearer ${options.apiKey}` }) },
      body: JSON.stringify({ model: options.model, input, encoding_format: 'float', ...(options.dimensions && { dimensions: options.dimensions }) }),
      signal,
    });
  };
  const embedBatch = async (input: string[], caller: AbortSignal | undefined): Promise<Float32Array[]> => {
    const signal = caller ? AbortSignal.any([caller, AbortSignal.timeout(timeout)]) : AbortSignal.timeout(timeout);
    let response: Dispatcher.ResponseData;
    try {
      response = await post(input, signal).catch((error: unknown) => {
        // A kept-alive connection the server closed as the request left: nothing was embedded, so once more.
        if ((error as { code?: string }).code === 'UND_ERR_SOCKET' && !signal.aborted) return post(input, signal);
        throw error;
      });
    } catch (error) {
      throw failure(error, signal, 'unreachable');
    }
    let text: string;
    try {
      text = await response.body.text();
    } catch (error) {
      throw failure(error, signal, 'broke off its answer');
    }
    if (response.statusCode < 200 || response.statusCode > 299) {
      const detail = text.slice(0, 200);
      throw new ServiceError('service_unavailable', `embedding endpoint answered ${response.statusCode}${detail ? `: ${detail}` : ''}`);
    }
    const parsed = Response.safeParse(parseJson(text));
    if (!parsed.success || parsed.data.data.length !== input.length) {
      throw new ServiceError('service_unavailable', 'embedding endpoint answered with an unexpected body');
    }
    return [...parsed.data.data].sort((a, b) => a.index - b.index).map((d) => normalize(d.embedding));
  };
  return {
    id: `openai:${options.model}${options.dimensions ? `:${options.dimensions}` : ''}`,
    async embed(texts, _purpose, { signal } = {}) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += batchSize) out.push(...(await embedBatch(texts.slice(i, i + batchSize), signal)));
      return out;
    },
  };
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** A failed exchange as the operator should read it: out of time (whose), or what the connection said. */
function failure(error: unknown, signal: AbortSignal, what: string): ServiceError {
  if (signal.aborted) {
    const reason = signal.reason as Error | undefined;
    const timedOut = reason?.name === 'TimeoutError';
    return new ServiceError('service_unavailable', timedOut ? 'embedding endpoint did not answer in time' : `embedding request cancelled: ${reason?.message ?? 'aborted'}`, { cause: error });
  }
  return new ServiceError('service_unavailable', `embedding endpoint ${what}: ${(error as Error).message}`, { cause: error });
}
