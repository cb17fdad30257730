import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { setTimeout as timer } from 'node:timers/promises';
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
  /** How host names resolve: the system's resolver unless given (tests answer names without the network). */
  resolver?: Resolver | undefined;
  /** How a pause between attempts is waited out: a timer unless given (tests note what was asked, and go on at once). */
  sleep?: ((ms: number) => Promise<void>) | undefined;
};

/** Resolves a host name to its addresses, as `dns.lookup` with `all: true` does. */
export type Resolver = (hostname: string, callback: (error: (Error & { code?: string }) | null, addresses?: dns.LookupAddress[]) => void) => void;

const systemResolver: Resolver = (hostname, callback) => dns.lookup(hostname, { all: true }, (error, addresses) => callback(error, addresses));

export type Validators = { etag?: string | undefined; lastModified?: string | undefined };

export type Response =
  | { status: 200; url: string; body: Buffer; contentType: string | undefined; validators: Validators }
  | { status: 304; url: string; validators: Validators };

/**
 * A fetch that did not produce content: the reason is written for an operator reading the channel's last error.
 * `transient` failures (network, deadline, cut-short body, 429, 5xx) may pass on a later try; the others (refused
 * URL, 4xx, over the size cap) will not.
 */
export class FetchError extends Error {
  override name = 'FetchError';
  constructor(
    message: string,
    readonly details: {
      url: string;
      transient: boolean;
      status?: number | undefined;
      retryAfterMs?: number | undefined;
      /** No answer came: the name did not resolve, the connection or TLS failed. */
      network?: boolean | undefined;
    },
  ) {
    super(message);
  }
}

/** Whether an error is a fetch failure that may pass on a later try. */
export const isTransient = (error: unknown): boolean => error instanceof FetchError && error.details.transient;

/**
 * Whether a linked resource (a transcript, captions, an article) may still arrive: anything but a definite answer
 * that it is not there (a 4xx) or a URL this fetcher refuses. A name that does not resolve or a certificate that is
 * wrong is not worth retrying within a request, but a host comes back from those; a later sync tries again.
 */
export const mayPass = (error: unknown): boolean => error instanceof FetchError && (error.details.transient || error.details.network === true);

export type RequestOptions = {
  validators?: Validators | undefined;
  accept?: string;
  headers?: Record<string, string>;
  /** A JSON body: the request is a POST (an API such as YouTube's player endpoint); redirects are not followed. */
  json?: unknown;
  /** A larger cap or a longer deadline for one request than the policy's (an episode's audio). */
  maxBytes?: number;
  timeoutMs?: number;
};

export type Fetcher = {
  /** GET a URL (POST with `json`); with validators, a 304 when the resource has not changed. */
  get(url: string, options?: RequestOptions): Promise<Response>;
};

/** Statuses worth another try: rate limits and server trouble (501 Not Implemented will not change). */
const retryable = (status: number) => status === 429 || (status >= 500 && status !== 501);

/** Network errors that will not pass by waiting: a name that does not resolve, a certificate that is wrong. */
export const lasting = (code: string | undefined): boolean => code !== undefined && /^(ENOTFOUND|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_SSL_|HOSTNAME_MISMATCH)/.test(code);

/** Whether an address is one a public fetch must not reach. */
export function isPrivateAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    // IPv4-compatible addresses (::a.b.c.d, deprecated) are no public destination either.
    else if (v6.parts.slice(0, 6).every((p) => p === 0)) return true;
  }
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
  // A released slot passes straight to the next waiter, so the count never goes over the limit.
  const acquire = async () => {
    if (active < policy.concurrency) active += 1;
    else await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else active -= 1;
  };

  const resolve = policy.resolver ?? systemResolver;
  const sleep = policy.sleep ?? ((ms: number) => timer(ms));
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    resolve(hostname, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const family = (options as dns.LookupOptions).family;
      const list = (addresses ?? []).filter((a) => !family || a.family === family);
      if (list.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      const blocked = list.find((a) => isPrivateAddress(a.address));
      if (blocked && !policy.allowPrivate) {
        return callback(Object.assign(new Error(`${hostname} resolves to a private address (${blocked.address}; set FETCH_ALLOW_PRIVATE=true to allow it)`), { code: 'EPRIVATE' }), '', 0);
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
      throw new FetchError(`"${raw}" is not a URL`, { url: raw, transient: false });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchError(`only http and https URLs are fetched, not ${url.protocol}`, { url: raw, transient: false });
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host) && isPrivateAddress(host) && !policy.allowPrivate) throw new FetchError(`${host} is a private address (set FETCH_ALLOW_PRIVATE=true to allow it)`, { url: raw, transient: false });
    return url;
  };

  /** One request, no redirects followed. */
  const once = (url: URL, headers: Record<string, string>, limits: { maxBytes: number; timeoutMs: number }, body: string | undefined) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body?: Buffer }>((resolve, reject) => {
      const client = url.protocol === 'https:' ? https : http;
      const signal = AbortSignal.timeout(limits.timeoutMs);
      const request = client.request(url, { method: body === undefined ? 'GET' : 'POST', headers, lookup, signal }, (response) => {
        const status = response.statusCode ?? 0;
        if (status !== 200) {
          response.resume();
          resolve({ status, headers: response.headers });
          return;
        }
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > limits.maxBytes) {
          request.destroy();
          reject(new FetchError(`the response is ${declared} bytes, over the ${limits.maxBytes}-byte limit`, { url: url.href, status, transient: false }));
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
          reject(error instanceof FetchError ? error : new FetchError(`the response was cut short (${error.message})`, { url: url.href, status, transient: true }));
        };
        response.on('aborted', () => fail(new Error('connection closed mid-body')));
        response.on('error', fail);
        decoded.on('error', fail);
        decoded.on('data', (part: Buffer) => {
          size += part.length;
          if (size > limits.maxBytes) fail(new FetchError(`the response is over the ${limits.maxBytes}-byte limit`, { url: url.href, status, transient: false }));
          else parts.push(part);
        });
        decoded.on('end', () => {
          if (!response.complete) return fail(new Error('connection closed mid-body'));
          let body = Buffer.concat(parts);
          // Gzip bytes served without Content-Encoding (a feed.xml.gz, a misconfigured server): a reader gets the text.
          if (decoded === response && isGzip(body) && !/^(audio|video)\//i.test(String(response.headers['content-type'] ?? ''))) {
            try {
              body = zlib.gunzipSync(body, { maxOutputLength: limits.maxBytes });
            } catch (error) {
              if (error instanceof RangeError) return fail(new FetchError(`the response is over the ${limits.maxBytes}-byte limit`, { url: url.href, status, transient: false }));
              // Not gzip after all: the bytes as they came.
            }
          }
          resolve({ status, headers: response.headers, body });
        });
      });
      request.on('error', (error: Error & { code?: string }) => {
        if (signal.aborted) reject(new FetchError(`no complete response within ${limits.timeoutMs} ms`, { url: url.href, transient: true }));
        else if (error.code === 'EPRIVATE') reject(new FetchError(error.message, { url: url.href, transient: false }));
        else reject(new FetchError(`could not fetch: ${error.message}`, { url: url.href, transient: !lasting(error.code), network: true }));
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

      const limits = { maxBytes: options.maxBytes ?? policy.maxBytes, timeoutMs: options.timeoutMs ?? policy.timeoutMs };
      for (let attempt = 0; ; attempt++) {
        let redirects = 0;
        let result: Awaited<ReturnType<typeof once>> | undefined;
        await acquire();
        try {
          for (;;) {
            try {
              result = await once(url, headers, limits, body);
            } catch (error) {
              if (isTransient(error) && attempt < policy.retries) {
                result = undefined;
                break;
              }
              throw error;
            }
            if (result.status >= 300 && result.status < 400 && result.status !== 304 && body === undefined) {
              const location = result.headers.location;
              if (!location) throw new FetchError(`${result.status} redirect without a Location`, { url: url.href, status: result.status, transient: false });
              if (++redirects > policy.maxRedirects) throw new FetchError(`more than ${policy.maxRedirects} redirects`, { url: raw, status: result.status, transient: false });
              url = checkUrl(new URL(location, url).href);
              continue;
            }
            break;
          }
        } finally {
          release();
        }
        // A transient failure is tried again after a pause that holds no concurrency slot.
        if (!result) {
          await sleep(250 * 2 ** attempt);
          continue;
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
        throw new FetchError(`${url.host} ${reason}${after}`, { url: url.href, status: result.status, retryAfterMs: wait, transient: retryable(result.status) });
      }
    },
  };
}

/** Whether bytes start with gzip's magic number and its one compression method (deflate). */
const isGzip = (body: Buffer): boolean => body.length > 18 && body[0] === 0x1f && body[1] === 0x8b && body[2] === 0x08;

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
const definedOnly = (v: Validators): Validators => Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined));
