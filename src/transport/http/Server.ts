import type { Server } from 'node:http';
import type { Services } from '../../Services.js';
import * as App from './App.js';

/** Starts the HTTP server; resolves once it listens, with the address it got (port 0 picks a free one). */
export async function listen(services: Services, options: { host: string; port: number }): Promise<{ server: Server; url: string }> {
  const app = App.create(services);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(options.port, options.host, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  server.keepAliveTimeout = 5_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return { server, url: `http://${host}:${port}` };
}

/** Stops accepting connections and waits for open ones to finish. */
export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
