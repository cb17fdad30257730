import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as Text from '../../src/retrieval/Text.js';

/** Words the stand-in model treats as one meaning, the way a real embedding model relates synonyms. */
const synonyms: Record<string, string> = { fridge: 'refriger', chiller: 'refriger' };

/** A deterministic "embedding": hashed bag of stems, synonyms folded together, 64 dimensions. */
export function embed(text: string): number[] {
  const v = new Array<number>(64).fill(0);
  for (const token of Text.tokens(text)) {
    if (Text.stopwords.has(token)) continue;
    const stem = synonyms[token] ?? Text.stem(token);
    let h = 2166136261;
    for (const ch of stem) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
    v[(h >>> 0) % 64]! += 1;
  }
  return v;
}

/**
 * A local stand-in for an OpenAI-compatible embeddings API (`POST /v1/embeddings`), listening on 127.0.0.1, embedding
 * with `embed` above unless given another function. `failWith` makes it answer errors; `requests` records what it was sent.
 */
const delay = (ms: number) => (ms > 0 ? new Promise<void>((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

export async function start(options: { embed?: (text: string) => number[] } = {}): Promise<{
  url: string;
  requests: { body: { model: string; input: string[] }; authorization: string | undefined }[];
  failWith: number | undefined;
  /** Answer this many requests, then fail with 500. */
  failAfter: number | undefined;
  /** Answer each request only after this long (a slow endpoint). */
  delayMs: number;
  /** Requests received, answered or not yet. */
  readonly arrived: number;
  close(): Promise<void>;
}> {
  const state = { arrived: 0, delayMs: 0, failAfter: undefined as number | undefined, failWith: undefined as number | undefined, requests: [] as { body: { model: string; input: string[] }; authorization: string | undefined }[] };
  const server = http.createServer((req, res) => {
    state.arrived += 1;
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => void delay(state.delayMs).then(() => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') return void res.writeHead(404).end();
      if (state.failAfter !== undefined && state.requests.length >= state.failAfter) return void res.writeHead(500).end('{}');
      if (state.failWith) return void res.writeHead(state.failWith, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}');
      const body = JSON.parse(raw) as { model: string; input: string[] };
      state.requests.push({ body, authorization: req.headers.authorization });
      // Answered out of order on purpose: clients must sort by index.
      const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: (options.embed ?? embed)(text) })).reverse();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 0, total_tokens: 0 } }));
    }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return state.requests;
    },
    get failWith() {
      return state.failWith;
    },
    set failWith(v) {
      state.failWith = v;
    },
    get failAfter() {
      return state.failAfter;
    },
    set failAfter(v) {
      state.failAfter = v;
    },
    get arrived() {
      return state.arrived;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(v) {
      state.delayMs = v;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
