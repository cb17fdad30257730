import cors from 'cors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { AllowedHost, AllowedOrigin, Config } from '../../config/Config.js';
import { ServiceError } from '../../errors/ServiceError.js';

/** True for names that resolve to this machine without DNS: localhost (and *.localhost), 127.0.0.0/8 and ::1. */
export function isLoopback(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || name === '::1' || /^127(?:\.\d{1,3}){3}$/.test(name);
}

export type Rules = { origins: '*' | AllowedOrigin[] | 'none'; hosts: '*' | AllowedHost[] | 'loopback' };

/** The rules in force: configured lists, else no cross-origin caller at all, and loopback Host names when listening on loopback. */
export function rules(allowed: Config['allowed'], listenHost: string): Rules {
  return {
    origins: allowed.origins ?? 'none',
    hosts: allowed.hosts ?? (isLoopback(listenHost) ? 'loopback' : '*'),
  };
}

/** A URL's host name and effective port, parsed by the URL parser (linear in the input, whatever a client sends). */
function parts(url: URL): { hostname: string; port: string } {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return { hostname: url.hostname.replace(/\.$/, ''), port };
}

const nameMatches = (rule: { subdomains: boolean; hostname: string }, hostname: string) =>
  rule.subdomains ? hostname.endsWith(`.${rule.hostname}`) : hostname === rule.hostname;

/**
 * Whether a browser Origin may call. The server's own origin (the Origin names the Host the request was sent to) is
 * always allowed where Host names are checked; a rebinding page can only be same-origin with a name it controls,
 * which the Host check refuses. Other origins only when listed.
 */
function originAllowed(active: Rules, origin: string, host: string | undefined): boolean {
  if (active.origins === '*') return true;
  const url = URL.canParse(origin) ? new URL(origin) : undefined;
  if (!url || !/^https?:$/.test(url.protocol)) return false;
  if (active.hosts !== '*' && host !== undefined && url.host === host.toLowerCase()) return true;
  if (active.origins === 'none') return false;
  const { hostname, port } = parts(url);
  return active.origins.some((o) => o.protocol === url.protocol && nameMatches(o, hostname) && (o.port === undefined || o.port === port));
}

function hostAllowed(rule: Rules['hosts'], host: string): boolean {
  if (rule === '*') return true;
  const url = URL.canParse(`http://${host}`) ? new URL(`http://${host}`) : undefined;
  if (!url || url.pathname !== '/' || url.username || url.password) return false;
  // Loopback names are always served: a rebinding page can only make a browser send its own name.
  if (isLoopback(url.hostname)) return true;
  if (rule === 'loopback') return false;
  const { hostname } = parts(url);
  // Without a port in the Host header the client used the scheme's default, which a proxy may have been.
  return rule.some((h) => nameMatches(h, hostname) && (h.port === undefined || h.port === (url.port || h.port)));
}

/** Headers a browser client may send, and read back, across origins. */
const corsOptions: cors.CorsOptions = {
  origin: true,
  methods: ['GET', 'POST'],
  allowedHeaders: ['content-type', 'service-api-key', 'authorization', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id', 'payment-signature'],
  exposedHeaders: ['www-authenticate', 'payment-required', 'payment-receipt', 'payment-response', 'retry-after', 'mcp-session-id'],
  maxAge: 600,
};

/** What a request shows the checks: its Host and Origin headers, and whether it is HTTP/1.0 (which may omit Host). */
export type Shown = { host: string | undefined; origin: string | undefined; http10: boolean };

/**
 * Why a request is refused by the DNS-rebinding checks, or undefined when it may be served: a `Host` that is not
 * allowed (when Host names are checked), then an `Origin` that is not. Requests without `Origin` (curl, server-side
 * agents, MCP hosts outside a browser) pass the origin check. For every port the service listens on.
 */
export function refusal(active: Rules, request: Shown): ServiceError | undefined {
  const { host, origin } = request;
  const noHost = host === undefined || host === '';
  // HTTP/1.0 may omit Host (no browser does, so it cannot be a rebinding); HTTP/1.1 must send one.
  if (noHost && !request.http10) return new ServiceError('invalid_request', 'HTTP/1.1 requests need a Host header.');
  if (!noHost && !hostAllowed(active.hosts, host)) {
    return new ServiceError('forbidden_host', `Host "${host.slice(0, 200)}" is not served here (DNS-rebinding protection); an operator can allow it with ALLOWED_HOSTS.`);
  }
  if (origin !== undefined && !originAllowed(active, origin, host)) {
    return new ServiceError('forbidden_origin', `Origin "${origin.slice(0, 200)}" is not allowed (DNS-rebinding protection); an operator can allow it with ALLOWED_ORIGINS.`);
  }
  return undefined;
}

/**
 * DNS-rebinding protection for every endpoint: a request the checks refuse (`refusal`) is answered 403 before its body
 * is read. Browser origins are allowed only as ALLOWED_ORIGINS lists them (none by default), and get CORS headers,
 * preflights included, so a web app there can call the service.
 */
export function create(allowed: Config['allowed'], listenHost: string): RequestHandler[] {
  const active = rules(allowed, listenHost);
  const guard = (req: Request, _res: Response, next: NextFunction): void => {
    next(refusal(active, { host: req.get('host'), origin: req.get('origin'), http10: req.httpVersionMajor === 1 && req.httpVersionMinor === 0 }));
  };
  return [guard, cors(corsOptions)];
}
