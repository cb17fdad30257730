import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a proxy does with one request, by its path and body: wait before forwarding it and before answering, or drop the answer. */
export type Rules = {
  /** Milliseconds to hold the request before forwarding it. */
  before?(path: string, body: string): number;
  /** Milliseconds to hold the answer before relaying it. */
  after?(path: string, body: string): number;
  /** Forward the request, then close the connection instead of relaying the answer (an answer lost on the way). */
  drop?(path: string, body: string): boolean;
  /** Close the connection without forwarding the request (a request lost on the way: nothing happened). */
  lose?(path: string, body: string): boolean;
  /** Forward nothing whose sender hung up while it was held (bytes that never left a machine that crashed). */
  forwardOnlyWhileConnected?: boolean;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An HTTP proxy on 127.0.0.1 in front of a JSON-RPC node or a facilitator: it forwards every request to `target` and
 * relays the answer, slowed or dropped as `rules` say, so a test can widen the moments a payment is in flight.
 */
export async function start(target: string, rules: Rules = {}): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', async () => {
      const path = req.url ?? '';
      const body = Buffer.concat(parts).toString('utf8');
      try {
        if (rules.lose?.(path, body)) return req.socket.destroy();
        await sleep(rules.before?.(path, body) ?? 0);
        if (rules.forwardOnlyWhileConnected && (req.socket.destroyed || req.socket.readableEnded)) return req.socket.destroy();
        const answer = await fetch(`${target}${path}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'GET' ? undefined : body });
        const text = await answer.text();
        if (rules.drop?.(path, body)) return req.socket.destroy();
        await sleep(rules.after?.(path, body) ?? 0);
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
      } catch {
        req.socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
