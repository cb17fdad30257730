import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for an OpenAI-compatible `/v1/audio/transcriptions` endpoint on 127.0.0.1: it reads the multipart
 * upload as the real API does and answers `verbose_json` with timed segments (or fails, when told to).
 */
export async function start(): Promise<{
  url: string;
  requests: { model: string | null; responseFormat: string | null; fileName: string | undefined; fileBytes: number; authorization: string | undefined }[];
  failWith: number | undefined;
  close(): Promise<void>;
}> {
  const state = {
    requests: [] as { model: string | null; responseFormat: string | null; fileName: string | undefined; fileBytes: number; authorization: string | undefined }[],
    failWith: undefined as number | undefined,
  };
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/audio/transcriptions') {
      res.writeHead(404).end();
      return;
    }
    const form = await new Response(Buffer.concat(parts), { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
    const file = form.get('file') as File | null;
    state.requests.push({
      model: form.get('model') as string | null,
      responseFormat: form.get('response_format') as string | null,
      fileName: file?.name,
      fileBytes: file ? (await file.arrayBuffer()).byteLength : 0,
      authorization: req.headers.authorization,
    });
    if (state.failWith) {
      res.writeHead(state.failWith, { 'content-type': 'application/json' }).end('{"error":{"message":"failed"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        task: 'transcribe',
        language: 'english',
        duration: 12,
        text: 'Welcome back to the show. Today we talk about compost heat.',
        segments: [
          { id: 0, start: 0, end: 4.5, text: ' Welcome back to the show.' },
          { id: 1, start: 4.5, end: 12, text: ' Today we talk about compost heat.' },
        ],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
