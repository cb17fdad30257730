import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import ipaddr from 'ipaddr.js';

/** How the fetcher behaves toward the hosts it reads. Comes from configuration (`FETCH_*`). */
export type Policy = {
  /** Allow private, loopback and link-local addresses (tests, or an operator's own network). */
  allowPrivate: boolean;
  /** Deadline of one request, headers and body together. */
  timeoutMs: number;
  /** Largest body accepted, after decompression. */
  maxBytes: number;
  maxRedirects: number;
  /** Requests in flight at once, across all hosts. */
  concurrency: number;
  /** Further attempts after a 429, a 5xx or a network failure. */
  retries: number;
  /** The longest Retry-After honoured by waiting; a longer one fails the request with its time. */
  maxRetryAfterMs: number;
  userAgent: string;
};

export type Validators = { etag?: string | undefined; lastModified?: string | undefined };

export type Response =
  | { status: 200; url: string; body: Buffer; contentType: string | undefined; validators: Validators }
  | { status: 304; url: string; validators: Validators };

/** A fetch that did not produce content: the reason is written for an operator reading the channel's last error. */
export class FetchError extends Error {
  override name = 'FetchError';
  constructor(
    message: string,
    readonly details: { url: string; status?: number | undefined; retryAfterMs?: number | undefined },
  ) {
    super(message);
  }
}

export type RequestOptions = {
  validators?: Validators | undefined;
  accept?: string;
  headers?: Record<string, string>;
  /** A JSON body: the request is a POST (an API such as YouTube's player endpoint); redirects are not followed. */
  json?: unknown;
};

export type Fetcher = {
  /** GET a URL (POST with `json`); with validators, a 304 when the resource has not changed. */
  get(url: string, options?: RequestOptions): Promise<Response>;
};

const retryable = (status: number) => status === 429 || status === 502 || status === 503 || status === 504 || status === 500;

/** Whether an address is one a public fetch must not reach. */
export function isPrivateAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() !== 'unicast';
}

/** Seconds or an HTTP date, as milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/**
 * A polite and safe HTTP client for connectors: http(s) only, a deadline and a size cap on every request, bounded
 * redirects (each hop checked again), a clear user agent, bounded concurrency, conditional requests, and Retry-After
 * honoured. Unless the policy allows it, no request reaches a private, loopback or link-local address: the check runs
 * on the addresses the connection actually uses, so a DNS answer cannot smuggle one in.
 */
export function create(policy: Policy): Fetcher {
  let active = 0;
  const waiting: (() => void)[] = [];
  const acquire = async () => {
    if (active >= policy.concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
  };
  const release = () => {
    active -= 1;
    waiting.shift()?.();
  };

  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as dns.LookupAddress[];
      const blocked = list.find((a) => isPrivateAddress(a.address));
      if (blocked && !policy.allowPrivate) {
        return callback(Object.assign(new Error(`${hostname} resolves to a private address (${blocked.address})`), { code: 'EPRIVATE' }), '', 0);
      }
      if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };

  const checkUrl = (raw: string): URL => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new FetchError(`"${raw}" is not a URL`, { url: raw });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchError(`only http and https URLs are fetched, not ${url.protocol}`, { url: raw });
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host) && isPrivateAddress(host) && !policy.allowPrivate) throw new FetchError(`${host} is a private address`, { url: raw });
    return url;
  };

  /** One request, no redirects followed. */
  const once = (url: URL, headers: Record<string, string>, signal: AbortSignal, body: string | undefined) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body?: Buffer }>((resolve, reject) => {
      const client = url.protocol === 'https:' ? https : http;
      const request = client.request(url, { method: body === undefined ? 'GET' : 'POST', headers, lookup, signal }, (response) => {
        const status = response.statusCode ?? 0;
        if (status !== 200) {
          response.resume();
          resolve({ status, headers: response.headers });
          return;
        }
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > policy.maxBytes) {
          request.destroy();
          reject(new FetchError(`the response is ${declared} bytes, over the ${policy.maxBytes}-byte limit`, { url: url.href, status }));
          return;
        }
        const encoding = String(response.headers['content-encoding'] ?? '').toLowerCase();
        const decoded =
          encoding === 'gzip' || encoding === 'x-gzip'
            ? response.pipe(zlib.createGunzip())
            : encoding === 'deflate'
              ? response.pipe(zlib.createInflate())
              : encoding === 'br'
                ? response.pipe(zlib.createBrotliDecompress())
                : response;
        const parts: Buffer[] = [];
        let size = 0;
        const fail = (error: Error) => {
          request.destroy();
          reject(error instanceof FetchError ? error : new FetchError(`the response was cut short (${error.message})`, { url: url.href, status }));
        };
        response.on('aborted', () => fail(new Error('connection closed mid-body')));
        response.on('error', fail);
        decoded.on('error', fail);
        decoded.on('data', (part: Buffer) => {
          size += part.length;
          if (size > policy.maxBytes) fail(new FetchError(`the response is over the ${policy.maxBytes}-byte limit`, { url: url.href, status }));
          else parts.push(part);
        });
        decoded.on('end', () => {
          if (!response.complete) return fail(new Error('connection closed mid-body'));
          resolve({ status, headers: response.headers, body: Buffer.concat(parts) });
        });
      });
      request.on('error', (error: Error & { code?: string }) => {
        if (signal.aborted) reject(new FetchError(`no complete response within ${policy.timeoutMs} ms`, { url: url.href }));
        else if (error.code === 'EPRIVATE') reject(new FetchError(error.message, { url: url.href }));
        else reject(new FetchError(`could not fetch: ${error.message}`, { url: url.href }));
      });
      request.end(body);
    });

  return {
    async get(raw, options = {}) {
      let url = checkUrl(raw);
      const headers: Record<string, string> = {
        'user-agent': policy.userAgent,
        accept: options.accept ?? '*/*',
        'accept-encoding': 'gzip, deflate, br',
        ...options.headers,
      };
      const body = options.json === undefined ? undefined : JSON.stringify(options.json);
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (options.validators?.etag) headers['if-none-match'] = options.validators.etag;
      if (options.validators?.lastModified) headers['if-modified-since'] = options.validators.lastModified;

      for (let attempt = 0; ; attempt++) {
        let redirects = 0;
        let result: Awaited<ReturnType<typeof once>>;
        await acquire();
        try {
          for (;;) {
            try {
              result = await once(url, headers, AbortSignal.timeout(policy.timeoutMs), body);
            } catch (error) {
              // A network failure or a deadline may pass; a private address or an oversized body will not.
              const transient = error instanceof FetchError && error.details.status === undefined && !/private address/.test(error.message);
              if (transient && attempt < policy.retries) throw Object.assign(error, { retry: true });
              throw error;
            }
            if (result.status >= 300 && result.status < 400 && result.status !== 304 && body === undefined) {
              const location = result.headers.location;
              if (!location) throw new FetchError(`${result.status} redirect without a Location`, { url: url.href, status: result.status });
              if (++redirects > policy.maxRedirects) throw new FetchError(`more than ${policy.maxRedirects} redirects`, { url: raw, status: result.status });
              url = checkUrl(new URL(location, url).href);
              continue;
            }
            break;
          }
        } catch (error) {
          if ((error as { retry?: boolean }).retry) {
            await sleep(250 * 2 ** attempt);
            continue;
          }
          throw error;
        } finally {
          release();
        }
        const validators: Validators = { etag: header(result.headers.etag), lastModified: header(result.headers['last-modified']) };
        if (result.status === 200) return { status: 200, url: url.href, body: result.body!, contentType: header(result.headers['content-type']), validators };
        if (result.status === 304) return { status: 304, url: url.href, validators: { ...options.validators, ...definedOnly(validators) } };
        const wait = retryAfterMs(header(result.headers['retry-after']));
        if (retryable(result.status) && attempt < policy.retries && (wait ?? 0) <= policy.maxRetryAfterMs) {
          await sleep(wait ?? 250 * 2 ** attempt);
          continue;
        }
        const reason = result.status === 429 ? 'rate limited (429)' : `answered ${result.status}`;
        const after = wait !== undefined ? `; retry after ${Math.ceil(wait / 1000)} s` : '';
        throw new FetchError(`${url.host} ${reason}${after}`, { url: url.href, status: result.status, retryAfterMs: wait });
      }
    },
  };
}

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
const definedOnly = (v: Validators): Validators => Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined));
