import net from 'node:net';
import { expect, test } from 'vitest';
import * as HttpServer from '../src/transport/http/Server.js';
import * as Environment from './support/Environment.js';

/**
 * A client that keeps a connection open while it signs a payment, then reuses it, is served on it: the server keeps
 * an idle connection longer than clients do (it used to close it after 5 s, under a client about to send), and says
 * how long it keeps it.
 */
const served = Environment.useServed();

/** Sends one HTTP/1.1 request on an open socket and reads its response's head and body (a Content-Length body). */
function exchange(socket: net.Socket, path: string): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    let data = '';
    const onData = (chunk: Buffer) => {
      data += chunk.toString('utf8');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(data.slice(0, end))?.[1] ?? 0);
      if (data.length - end - 4 < length) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve({ head: data.slice(0, end), body: data.slice(end + 4, end + 4 + length) });
    };
    const onClose = () => reject(new Error(`the server closed the connection before answering ${path}`));
    socket.on('data', onData);
    socket.once('close', onClose);
    const { host } = new URL(served.url);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAccept: application/json\r\n\r\n`);
  });
}

test('behavior: a kept-alive connection idle for longer than clients keep theirs (6 s) is still served, and the server says how long it keeps one', async () => {
  const { hostname, port } = new URL(served.url);
  const socket = net.connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  try {
    const first = await exchange(socket, '/health');
    expect(first.head).toMatch(/^HTTP\/1\.1 200/);
    expect(first.head).toMatch(new RegExp(`keep-alive: timeout=${HttpServer.keepAliveMs / 1000}`, 'i'));
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const second = await exchange(socket, '/api/profiles?limit=1');
    expect(second.head).toMatch(/^HTTP\/1\.1 200/);
    expect(JSON.parse(second.body)).toHaveProperty('data');
  } finally {
    socket.destroy();
  }
}, 20_000);

test('behavior: closing the server does not wait out the keep-alive time of idle or finishing connections', async () => {
  const environment = await Environment.create();
  const { server, url } = await HttpServer.listen(environment.services, { host: '127.0.0.1', port: 0 });
  try {
    const { hostname, port } = new URL(url);
    const socket = net.connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
    await new Promise((resolve) => socket.once('data', resolve));
    // The test's own timeout (20 s) is well inside the keep-alive time (65 s): closing must not wait it out.
    await HttpServer.close(server);
    expect(server.listening).toBe(false);
    socket.destroy();
  } finally {
    await environment.close();
  }
}, 20_000);
