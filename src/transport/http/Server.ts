import { STATUS_CODES, createServer } from 'node:http';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ServiceError, toErrorBody } from '../../errors/ServiceError.js';
import type { Services } from '../../Services.js';
import * as App from './App.js';

/** What Node's HTTP parser refused, as an error of the table. */
function framingError(error: NodeJS.ErrnoException): ServiceError {
  if (error.code === 'HPE_HEADER_OVERFLOW') return new ServiceError('headers_too_large');
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ServiceError('request_timeout');
  const reason = typeof error.code === 'string' && error.code.startsWith('HPE_') ? ` (${error.code.slice(4).toLowerCase().replaceAll('_', ' ')})` : '';
  return new ServiceError('invalid_request', `The request is not well-formed HTTP${reason}.`);
}

/**
 * Requests Node's parser refuses before any handler runs (duplicate Content-Length, bad chunking, NUL in a header,
 * oversized headers) still get the contract's Error body, then the connection closes.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A complete earlier request still being answered on this connection (pipelining) would take this reply for its
  // own: close instead. A request whose own body failed to parse (bad chunking) is answered.
  const pending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean; req?: { complete?: boolean } } })._httpMessage;
  const inFlight = pending != null && (pending.headersSent === true || pending.req?.complete === true);
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight) {
    socket.destroy();
    return;
  }
  const failure = framingError(error);
  const body = JSON.stringify(toErrorBody(failure));
  socket.end(
    `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** How long an idle kept-alive connection stays open (announced to clients as `Keep-Alive: timeout=65`). */
export const keepAliveMs = 65_000;

/** Starts the HTTP server; resolves once it listens, with the address it got (port 0 picks a free one). */
export async function listen(services: Services, options: { host: string; port: number }): Promise<{ server: Server; url: string }> {
  const app = App.create(services, { listenHost: options.host });
  // Node's own refusal of a request without Host is a bare 400; the guard answers it with the Error body instead.
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    inFlight.set(server, (inFlight.get(server) ?? 0) + 1);
    res.once('close', () => inFlight.set(server, inFlight.get(server)! - 1));
    app(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // An idle kept-alive connection is closed by the client, never under it: a client that reuses one after seconds of
  // signing a payment would otherwise meet the server's close on the way (a reset before any byte came back).
  // Longer than clients' idle timeouts (undici 4 s, browsers and load balancers about 60 s); headers a second more, as
  // Node asks, so a request that starts on a connection as it idles out is not cut off either.
  server.keepAliveTimeout = keepAliveMs;
  server.headersTimeout = keepAliveMs + 1_000;
  server.on('clientError', answerClientError);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return { server, url: `http://${host}:${port}` };
}

/** Requests each server is answering: what closing waits for. */
const inFlight = new WeakMap<Server, number>();

/**
 * Stops accepting connections, waits for the requests in flight to be answered, and closes every connection as soon
 * as none is left: a kept-alive connection is not waited out, nor one Node still counts as busy with no request
 * behind it (a client that left half-way through sending one).
 */
export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    const sweep = () => {
      server.closeIdleConnections();
      if ((inFlight.get(server) ?? 0) === 0) server.closeAllConnections();
    };
    const timer = setInterval(sweep, 100);
    server.close(() => {
      clearInterval(timer);
      resolve();
    });
    sweep();
  });
}
