import type { NextFunction, Request, Response } from 'express';
import type { AllowedHost, AllowedOrigin, Config } from '../../config/Config.js';
import { ServiceError } from '../../errors/ServiceError.js';

/** True for names that resolve to this machine without DNS: localhost (and *.localhost), 127.0.0.0/8 and ::1. */
export function isLoopback(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return name === 'localhost' || name.endsWith('.localhost') || name === '::1' || /^127(?:\.\d{1,3}){3}$/.test(name);
}

type Rules = { origins: '*' | AllowedOrigin[] | 'loopback'; hosts: '*' | AllowedHost[] | 'loopback' };

/** The rules in force: configured lists, else loopback origins, and loopback Host names when listening on loopback. */
export function rules(allowed: Config['allowed'], listenHost: string): Rules {
  return {
    origins: allowed.origins ?? 'loopback',
    hosts: allowed.hosts ?? (isLoopback(listenHost) ? 'loopback' : '*'),
  };
}

const portMatches = (allowed: string | undefined, port: string) => allowed === undefined || allowed === port;

function originAllowed(rule: Rules['origins'], origin: string): boolean {
  if (rule === '*') return true;
  const url = URL.canParse(origin) ? new URL(origin) : undefined;
  if (!url || !/^https?:$/.test(url.protocol)) return false;
  if (rule === 'loopback') return isLoopback(url.hostname);
  return rule.some((o) => o.protocol === url.protocol && o.hostname === url.hostname && portMatches(o.port, url.port));
}

function hostAllowed(rule: Rules['hosts'], host: string | undefined): boolean {
  if (rule === '*') return true;
  const url = host && URL.canParse(`http://${host}`) ? new URL(`http://${host}`) : undefined;
  if (!url || url.pathname !== '/' || url.username) return false;
  if (rule === 'loopback') return isLoopback(url.hostname);
  return rule.some((h) => h.hostname === url.hostname && portMatches(h.port, url.port));
}

/**
 * DNS-rebinding protection for every endpoint: a request whose `Origin` is not allowed, or whose `Host` is not (when
 * Host names are checked), is refused with 403 before its body is read. Requests without `Origin` (curl, server-side
 * agents, MCP hosts outside a browser) pass the origin check.
 */
export function create(allowed: Config['allowed'], listenHost: string) {
  const active = rules(allowed, listenHost);
  return (req: Request, _res: Response, next: NextFunction): void => {
    const host = req.get('host');
    if (!hostAllowed(active.hosts, host)) {
      const shown = host === undefined ? 'no Host header' : `Host "${host.slice(0, 200)}"`;
      next(new ServiceError('forbidden_host', `${shown} is not served here (DNS-rebinding protection); an operator can allow it with ALLOWED_HOSTS.`));
      return;
    }
    const origin = req.get('origin');
    if (origin !== undefined && !originAllowed(active.origins, origin)) {
      next(new ServiceError('forbidden_origin', `Origin "${origin.slice(0, 200)}" is not allowed (DNS-rebinding protection); an operator can allow it with ALLOWED_ORIGINS.`));
      return;
    }
    next();
  };
}
