import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the stand-in received: the request body of one POST /v1/messages, and its headers. */
export type Received = { body: any; headers: http.IncomingHttpHeaders };

/** How the stand-in answers one request: a reply built from the request, a status with a body, or silence. */
export type Behavior =
  | { kind: 'reply'; content: (request: any) => unknown[]; /** Answered this long after the request came. */ delayMs?: number }
  | { kind: 'status'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'raw'; status: number; text: string }
  | { kind: 'hang'; ms: number };

/** A document's text and index in the request, by what its title contains. */
export function documentOf(request: any, titleIncludes?: string): { index: number; text: string; title: string } {
  const docs = (request.messages[0].content as any[]).map((c, index) => ({ ...c, index })).filter((c) => c.type === 'document');
  const doc = titleIncludes ? docs.find((d) => String(d.title).includes(titleIncludes)) : docs[0];
  return { index: doc.index, text: doc.source.data, title: doc.title };
}

/** A text block citing `span` of document `index` (char_location, as the Messages API returns for plain text). */
export function cited(text: string, doc: { index: number; text: string; title: string }, span: string) {
  const start = doc.text.indexOf(span);
  return { type: 'text', text, citations: [{ type: 'char_location', cited_text: span, document_index: doc.index, document_title: doc.title, start_char_index: start, end_char_index: start + span.length, file_id: null }] };
}

/**
 * A stand-in for Anthropic's Messages API on 127.0.0.1, for the real SDK: POST /v1/messages answered by the next
 * queued behavior (or the default), in the API's own response shape.
 */
export async function start(defaultBehavior: Behavior): Promise<{ url: string; received: Received[]; queue: Behavior[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const queue: Behavior[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) return res.writeHead(404).end();
      const body = JSON.parse(Buffer.concat(parts).toString('utf8'));
      received.push({ body, headers: req.headers });
      const behavior = queue.shift() ?? defaultBehavior;
      if (behavior.kind === 'hang') return void setTimeout(() => res.destroyed || res.writeHead(200).end('{}'), behavior.ms);
      if (behavior.kind === 'raw') return res.writeHead(behavior.status, { 'content-type': 'application/json' }).end(behavior.text);
      if (behavior.kind === 'status') return res.writeHead(behavior.status, { 'content-type': 'application/json', ...behavior.headers }).end(JSON.stringify(behavior.body));
      const reply = {
        id: `msg_${received.length}`,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: behavior.content(body),
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 1000, output_tokens: 100 },
      };
      const send = () => res.destroyed || res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${received.length}` }).end(JSON.stringify(reply));
      if (behavior.delayMs) setTimeout(send, behavior.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, queue, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
