import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { Rail } from '../contract/Quote.js';
import { projectRoot } from '../Version.js';
import { type Pooling, type PresetName, presetNames } from './EmbeddingPresets.js';

export { projectRoot };

/** Where the database lives unless DATABASE_PATH says otherwise. */
export const defaultDatabasePath = path.join(projectRoot, 'data', 'profile-edge.db');

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const optionalText = z.string().trim().transform((v) => (v === '' ? undefined : v)).optional();
const httpUrl = z.string().trim().url().refine((v) => /^https?:\/\//i.test(v), 'must be an http(s) URL').transform((v) => v.replace(/\/+$/, ''));
const privateKey = z
  .string()
  .trim()
  .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be a 32-byte hex private key')
  .transform((v) => (v.startsWith('0x') ? v : `0x${v}`) as `0x${string}`);

/** A comma-separated list; empty entries are dropped. */
const list = z.string().transform((v) => v.split(',').map((p) => p.trim()).filter(Boolean));

/** A host name pattern: a name, `*.` and a name (any subdomain), or a bracketed IPv6 address; lowercased. */
const hostPattern = String.raw`(\*\.)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])\.?`;
const originEntry = new RegExp(`^(https?)://${hostPattern}(?::(\\d{1,5}))?/?$`, 'i');
const hostEntry = new RegExp(`^${hostPattern}(?::(\\d{1,5}))?$`, 'i');

/** `*`, or origins as browsers send them (`scheme://host[:port]`, `*.` for any subdomain); no port means any port. */
const originList = list.transform((entries, ctx) => {
  if (entries.includes('*')) return '*' as const;
  return entries.map((entry): AllowedOrigin => {
    const m = originEntry.exec(entry);
    if (!m) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${entry}" is not an origin like https://app.example.com, https://*.example.com or http://localhost:5173 (or * for any)` });
      return z.NEVER;
    }
    return { protocol: `${m[1]!.toLowerCase()}:`, subdomains: m[2] !== undefined, hostname: m[3]!.toLowerCase(), port: m[4] };
  });
});

/** `*`, or Host header values (`name[:port]`, `*.` for any subdomain, IPv6 in brackets); no port means any port. */
const hostList = list.transform((entries, ctx) => {
  if (entries.includes('*')) return '*' as const;
  return entries.map((entry): AllowedHost => {
    const m = hostEntry.exec(entry);
    if (!m) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${entry}" is not a host like api.example.com, *.example.com or api.example.com:8443 (or * for any)` });
      return z.NEVER;
    }
    return { subdomains: m[1] !== undefined, hostname: m[2]!.toLowerCase(), port: m[3] };
  });
});

/** Every environment variable the service reads, with its default. `.env.example` lists the same set. */
const Environment = z.object({
  ENVIRONMENT: z.enum(['development', 'production', 'test']).default('development'),
  // An IPv6 address may be written as in a URL ([::1]); listen() takes it bare.
  HOST: z.string().trim().min(1).transform((v) => v.replace(/^\[(.*)\]$/, '$1')).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_PATH: z.string().min(1).optional(),
  DATABASE_URL: z
    .string()
    .trim()
    .refine((v) => /^postgres(ql)?:\/\/[^\s]+$/.test(v), 'must be a postgres:// (or postgresql://) URL')
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  DEMO_DATA: flag.optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  LOG_QUESTIONS: flag.default('false'),
  METRICS_TOKEN: optionalText.refine((v) => v === undefined || v.length >= 16, 'must be at least 16 characters (e.g. openssl rand -hex 16)'),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  BREAKER_FAILURES: z.coerce.number().int().min(1).max(100).default(3),
  BREAKER_COOL_SECONDS: z.coerce.number().min(0.05).max(3600).default(30),
  TRUST_PROXY: z
    .string()
    .trim()
    .refine((v) => v !== 'true', 'trusting every hop lets clients forge their address: give the number of proxy hops (e.g. 1) or the proxies\' addresses')
    .transform((v): false | number | string => (v === 'false' || v === '0' ? false : /^\d+$/.test(v) ? Number(v) : v))
    .default('false'),
  ALLOWED_ORIGINS: originList.optional(),
  ALLOWED_HOSTS: hostList.optional(),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(10_485_760).default(65_536),
  CHUNK_TARGET_TOKENS: z.coerce.number().int().min(50).max(2000).default(320),
  PRICE_USD_MILLICENTS: z.coerce.number().int().min(1).default(5_000),
  QUERY_COST_UNLOCKS: z.coerce.number().int().min(0).default(1),
  QUERY_COST_CREDITS: z.coerce.number().int().min(0).default(10),
  QUOTE_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  TEMPO_NETWORK: z.enum(['mainnet', 'testnet']).default('mainnet'),
  TEMPO_PAY_TO: address.optional(),
  TEMPO_CURRENCY: address.optional(),
  TEMPO_RPC_URL: httpUrl.optional(),
  TEMPO_FEE_PAYER_KEY: privateKey.optional(),
  X402_BASE_NETWORK: z.enum(['mainnet', 'sepolia']).default('mainnet'),
  X402_BASE_CHAIN_ID: z.coerce.number().int().min(1).optional(),
  X402_BASE_RPC_URL: httpUrl.optional(),
  X402_BASE_PAY_TO: address.optional(),
  X402_BASE_CURRENCY: address.optional(),
  X402_BASE_CURRENCY_NAME: optionalText,
  X402_BASE_CURRENCY_VERSION: optionalText,
  X402_FACILITATOR_URL: httpUrl.default('https://x402.org/facilitator'),
  X402_NONCE_BINDING: z.enum(['required', 'first_seen']).default('first_seen'),
  PAYMENT_SECRET: optionalText.refine((v) => v === undefined || Buffer.byteLength(v) >= 32, 'must be at least 32 bytes (e.g. openssl rand -hex 32)'),
  PAYMENT_CHALLENGE_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300),
  CITATION_LINK_SECRET: optionalText.refine((v) => v === undefined || v.length >= 32, 'must be at least 32 characters (e.g. openssl rand -hex 32)'),
  CITATION_LINK_TTL_SECONDS: z.coerce.number().int().min(60).max(604_800).default(3600),
  PROFILE_EDGE_CRASH_AT: z.enum(['before_broadcast', 'after_settle', 'after_hold']).optional(),
  INSTANCE_LEASE_SECONDS: z.coerce.number().int().min(2).max(600).default(20),
  SEARCH_SNAPSHOT_MIN_CHUNKS: z.coerce.number().int().min(0).default(50_000),
  SEARCH_THREADS: z.coerce.number().int().min(1).max(16).optional(),
  SEARCH_THREAD_MIN_CHUNKS: z.coerce.number().int().min(0).default(200_000),
  RECONCILE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3_600).default(300),
  SETTLEMENT_LANDING_MARGIN_SECONDS: z.coerce.number().int().min(1).max(3_600).default(60),
  SYNTHESIZER: z.enum(['extractive', 'anthropic']).default('extractive'),
  ANTHROPIC_API_KEY: optionalText,
  ANTHROPIC_BASE_URL: httpUrl.default('https://api.anthropic.com'),
  ANTHROPIC_MODEL: z.string().trim().min(1).default('claude-sonnet-4-5'),
  ANTHROPIC_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  ANTHROPIC_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  EMBEDDER: z.enum(['none', 'openai', 'transformers', 'use-lite']).default('none'),
  READER_ENCODER: z.enum(['use-lite', 'none']).default('use-lite'),
  EMBEDDING_BASE_URL: z.string().url().default('http://127.0.0.1:8080/v1'),
  EMBEDDING_API_KEY: optionalText,
  EMBEDDING_MODEL: z.string().min(1).default('text-embedding-3-small'),
  EMBEDDING_DIMENSIONS: z.coerce.number().int().min(1).max(8192).optional(),
  EMBEDDING_MODEL_DIR: optionalText,
  EMBEDDING_PRESET: z.enum(presetNames as [PresetName, ...PresetName[]]).optional(),
  EMBEDDING_POOLING: z.enum(['mean', 'cls']).optional(),
  // Not trimmed: a prefix usually ends in a space ("query: ").
  EMBEDDING_QUERY_PREFIX: z.string().max(500).optional(),
  EMBEDDING_DOCUMENT_PREFIX: z.string().max(500).optional(),
  EMBEDDING_PRECISION: z.enum(['fp32', 'q8']).optional(),
  EMBEDDING_BATCH_SIZE: z.coerce.number().int().min(1).max(2048).optional(),
  EMBEDDING_QUESTION_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(3000),
  // Replaced by the weight `profile-edge fit` stores with the vector index: named only to say so when set.
  EMBEDDING_WEIGHT: optionalText,
  EMBEDDING_MIN_SIMILARITY: optionalText,
  FETCH_ALLOW_PRIVATE: flag.default('false'),
  FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(20_000),
  FETCH_MAX_BYTES: z.coerce.number().int().min(1024).max(1_073_741_824).default(52_428_800),
  FETCH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  SYNC_SCHEDULE: flag.optional(),
  NOTION_BASE_URL: httpUrl.default('https://api.notion.com'),
  NOTION_TOKEN: optionalText,
  YOUTUBE_BASE_URL: httpUrl.default('https://www.youtube.com'),
  TRANSCRIBER: z.enum(['none', 'openai']).default('none'),
  TRANSCRIBE_BASE_URL: z.string().url().refine((v) => /^https?:\/\//i.test(v), 'must be an http(s) URL').default('https://api.openai.com/v1'),
  TRANSCRIBE_API_KEY: optionalText,
  TRANSCRIBE_MODEL: z.string().min(1).default('whisper-1'),
  TRANSCRIBE_MAX_BYTES: z.coerce.number().int().min(1024).max(2_147_483_648).default(26_214_400),
  SYNC_INTERVAL_MINUTES: z
    .string()
    .trim()
    .transform((v, ctx) => {
      const out: Record<string, number> = {};
      for (const part of v.split(',').map((p) => p.trim()).filter(Boolean)) {
        const m = /^(youtube|podcast_rss|rss|notion|subtext)\s*=\s*(\d+)$/.exec(part);
        if (!m || Number(m[2]) < 1) {
          ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${part}" is not KIND=MINUTES (kinds: youtube, podcast_rss, rss, notion, subtext; minutes >= 1)` });
          return z.NEVER;
        }
        out[m[1]!] = Number(m[2]);
      }
      return out;
    })
    .optional(),
  PROFILE_EDGE_API_KEY: optionalText,
  PROFILE_EDGE_BEARER_TOKEN: optionalText,
});

/** The names of every environment variable the service reads. */
/** Settings an earlier version read, refused now with what replaced them. */
const retired = ['EMBEDDING_WEIGHT', 'EMBEDDING_MIN_SIMILARITY'] as const;

/** The variables configuration reads (the retired ones, which it only refuses, left out). */
export const variables = Object.keys(Environment.shape).filter((name) => !(retired as readonly string[]).includes(name));

/** One on-chain rail as configured: where money goes, in which token, on which chain and through which node. */
export type RailConfig = {
  rail: Rail;
  chain: string;
  chainId: number;
  currency: string;
  payTo: string | undefined;
  rpcUrl: string;
};

/** Tempo (MPP): the fee payer that sponsors the payer's gas, when configured. Never logged. */
export type TempoConfig = RailConfig & { rail: 'tempo'; feePayerKey: `0x${string}` | undefined };

/** Base over x402: the token's EIP-712 domain (what payers sign) and the facilitator that verifies and settles. */
export type X402Config = RailConfig & {
  rail: 'x402_base';
  currencyName: string;
  currencyVersion: string;
  facilitatorUrl: string;
  /**
   * `first_seen` (the default): an authorization signed on the nonce its challenge announces pays for that challenge
   * only; one with a nonce of its own (what every stock x402 client signs) is bound to the first challenge it comes
   * with. `required`: only the announced nonce is taken, hardening for operators whose payers all sign it.
   */
  nonceBinding: 'required' | 'first_seen';
};

/**
 * How texts are given to an embedding model: a preset named or implied by the model's name (see EmbeddingPresets),
 * each part of which an explicit setting overrides; undefined where neither says.
 */
export type EmbeddingUsage = {
  preset: PresetName | undefined;
  queryPrefix: string | undefined;
  documentPrefix: string | undefined;
  batchSize: number | undefined;
  /** How long a question waits for its embedding before it is answered lexically. */
  questionTimeoutMs: number;
};

export type Config = {
  environment: 'development' | 'production' | 'test';
  host: string;
  port: number;
  /** Where the data lives: the SQLite file (DATABASE_PATH, the default), or a PostgreSQL database (DATABASE_URL). */
  database: { engine: 'sqlite'; path: string } | { engine: 'postgres'; url: string; /** The most connections this process keeps open (DATABASE_POOL_SIZE). */ connections: number };
  /** The SQLite file, or undefined on PostgreSQL. */
  databasePath: string | undefined;
  demoData: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** JSON lines, pretty lines, or pretty when stderr is a terminal (`auto`); and whether a query's log line holds its question. */
  log: { format: 'auto' | 'json' | 'pretty'; questions: boolean };
  /**
   * `/metrics` (Prometheus text): on the main port behind a bearer token, and/or on a port of its own bound to
   * loopback; off when neither is set. The token is never logged.
   */
  metrics: { token: string | undefined; port: number | undefined };
  /** When an outside party (embedder, model, facilitator, RPC) is skipped: after so many failures in a row, for so long. */
  breaker: { failures: number; coolMs: number };
  /** Express's `trust proxy`: false, a number of hops, or proxy addresses and subnets. */
  trustProxy: false | number | string;
  /**
   * Browser origins and Host names requests may come with (DNS-rebinding protection); undefined means the default:
   * no browser origin but the server's own, and loopback Host names when the server listens on loopback.
   */
  allowed: { origins: '*' | AllowedOrigin[] | undefined; hosts: '*' | AllowedHost[] | undefined };
  maxBodyBytes: number;
  chunkTargetTokens: number;
  pricing: {
    amountUsdMillicents: number;
    costUnlocks: number;
    costCredits: number;
  };
  quoteRateLimitPerMinute: number;
  rails: { tempo: TempoConfig; x402_base: X402Config };
  /**
   * On-chain payments: the secret challenges are bound with (undefined: a development server keeps a generated one in
   * its database; production refuses to take on-chain payment), how long a challenge lasts, and a crash point for tests.
   */
  payments: { secret: string | undefined; challengeTtlSeconds: number; crashAt: 'before_broadcast' | 'after_settle' | 'after_hold' | undefined };
  /**
   * How long an instance's lease lasts unrenewed (renewed every quarter of it): past it, what the instance left part-way
   * is settled by another. Shorter settles a killed instance's charges sooner; longer forgives longer pauses.
   */
  instanceLeaseSeconds: number;
  /**
   * Stores of at least this many chunks keep a snapshot of the search index, which instances start from in one read
   * rather than rebuilding from rows; smaller stores load from rows in under a second and keep none.
   */
  searchSnapshotMinChunks: number;
  /**
   * Threads one question's first stage may use, the serving thread included (default: 2, or 1 on a one-core machine),
   * on a store of at least `minChunks` chunks: the chunks are split into ranges searched side by side.
   */
  searchThreads: { threads: number; minChunks: number };
  /**
   * How often a serving process settles what was left part-way: charges and payments of processes that stopped, once
   * old enough, and its own settlements whose outcome was lost, once past their deadline.
   */
  reconcileIntervalSeconds: number;
  /** How long past its deadline a transfer not found on its chain is taken never to land, and its payment released. */
  landingMarginSeconds: number;
  /**
   * Signed links to private content in paid answers: the key they are signed with (undefined: one generated on first
   * use and kept in the database) and how long a link opens its item. The secret is never logged.
   */
  /**
   * The sentence encoder the offline reader weighs statements by their meaning with: USE-lite, shipped in an npm
   * package and run locally (none: by words alone).
   */
  reader: { encoder: 'use-lite' | 'none' };
  citationLinks: { secret: string | undefined; ttlSeconds: number };
  /**
   * Who writes synthesized answers: `extractive` (sentences of the evidence, offline, the default and the fallback) or
   * `anthropic` (Claude through the Messages API, with citations). The API key is never logged.
   */
  synthesis:
    | { provider: 'extractive' }
    | { provider: 'anthropic'; apiKey: string; baseUrl: string; model: string; timeoutMs: number; maxRetries: number };
  /** How chunks and questions become vectors; `none` is lexical retrieval only (the offline default). */
  embedding:
    | { provider: 'none' }
    | ({ provider: 'openai'; baseUrl: string; apiKey: string | undefined; model: string; dimensions: number | undefined } & EmbeddingUsage)
    | ({ provider: 'transformers'; modelDir: string; pooling: Pooling | undefined; precision: 'fp32' | 'q8' } & EmbeddingUsage)
    | ({ provider: 'use-lite'; precision: 'fp32' | 'q8' } & EmbeddingUsage);
  /** How connectors fetch from the web (see src/sources/Fetcher.ts). */
  fetch: { allowPrivate: boolean; timeoutMs: number; maxBytes: number; concurrency: number };
  /** Syncing channels with their sources: on a schedule inside `serve`, every so many minutes per channel kind. */
  sync: { schedule: boolean; intervalMinutes: Record<SyncedKind, number> };
  /**
   * Notion: the API's base URL, and integration tokens by environment variable name (NOTION_TOKEN and any
   * NOTION_TOKEN_<NAME>); a channel's `tokenVariable` setting picks one. Never logged.
   */
  notion: { baseUrl: string; tokens: Record<string, string> };
  /**
   * YouTube: where channel pages, feeds, the player endpoint and captions are read from (a stand-in or a proxy);
   * sources on youtube.com are read there too. Watch links in citations stay on youtube.com.
   */
  youtube: { baseUrl: string };
  /** Transcription of podcast audio without a publisher transcript; off unless configured. */
  transcription: { provider: 'none' } | { provider: 'openai'; baseUrl: string; apiKey: string | undefined; model: string; maxBytes: number };
  /** Credentials the stdio MCP server acts with; never logged. */
  stdioCredentials: { apiKey: string | undefined; bearerToken: string | undefined };
};

/** One allowed browser origin: `subdomains` matches any name under `hostname`; no port means any port. */
export type AllowedOrigin = { protocol: string; subdomains: boolean; hostname: string; port: string | undefined };

/** One allowed Host header value: `subdomains` matches any name under `hostname`; no port means any port. */
export type AllowedHost = { subdomains: boolean; hostname: string; port: string | undefined };

/** The channel kinds that sync from a remote source (uploads do not). */
export type SyncedKind = 'youtube' | 'podcast_rss' | 'rss' | 'notion' | 'subtext';

/** Minutes between syncs of one channel, by kind, unless SYNC_INTERVAL_MINUTES says otherwise. */
export const defaultSyncIntervals: Record<SyncedKind, number> = { youtube: 60, podcast_rss: 60, rss: 60, notion: 30, subtext: 30 };

/** USDC, chain ids and public RPC endpoints per rail and network; each can be overridden per rail. */
const networks = {
  tempo: {
    mainnet: { chain: 'tempo', chainId: 4217, currency: '0x20C000000000000000000000b9537d11c60E8b50', rpcUrl: 'https://rpc.tempo.xyz' },
    // The Moderato test network has no USDC; pathUSD is its canonical test stablecoin.
    testnet: { chain: 'tempo-moderato', chainId: 42431, currency: '0x20c0000000000000000000000000000000000000', rpcUrl: 'https://rpc.moderato.tempo.xyz' },
  },
  x402_base: {
    // The EIP-712 domain of each network's USDC, which payers sign transfer authorizations for.
    mainnet: { chain: 'base', chainId: 8453, currency: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', rpcUrl: 'https://mainnet.base.org', currencyName: 'USD Coin', currencyVersion: '2' },
    sepolia: { chain: 'base-sepolia', chainId: 84532, currency: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', rpcUrl: 'https://sepolia.base.org', currencyName: 'USDC', currencyVersion: '2' },
  },
} as const;

/** A configuration error, reported to the operator as one readable message. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** OpenAI's own endpoint needs a key; a self-hosted one may not. */
function requireTranscribeKey(baseUrl: string, key: string | undefined): string | undefined {
  if (!key && new URL(baseUrl).hostname === 'api.openai.com') {
    throw new ConfigError('invalid configuration:\n  TRANSCRIBE_API_KEY: required when TRANSCRIBER=openai uses api.openai.com');
  }
  return key;
}

/** Production takes on-chain payment only with a configured secret: a generated one would change on every deploy. */
function requirePaymentSecret(e: { ENVIRONMENT: string; PAYMENT_SECRET?: string; TEMPO_PAY_TO?: string; X402_BASE_PAY_TO?: string }): string | undefined {
  if (e.ENVIRONMENT === 'production' && !e.PAYMENT_SECRET && (e.TEMPO_PAY_TO || e.X402_BASE_PAY_TO)) {
    throw new ConfigError('invalid configuration:\n  PAYMENT_SECRET: required in production when an on-chain rail is configured (at least 32 bytes, e.g. openssl rand -hex 32)');
  }
  return e.PAYMENT_SECRET;
}

function requireAnthropicKey(key: string | undefined): string {
  if (!key) throw new ConfigError('invalid configuration:\n  ANTHROPIC_API_KEY: required when SYNTHESIZER=anthropic');
  return key;
}

/** An operator who sets a retired variable is told what replaced it, rather than finding it silently ignored. */
function rejectRetired(e: z.infer<typeof Environment>): void {
  for (const name of retired) {
    if (e[name] !== undefined) throw new ConfigError(`invalid configuration:\n  ${name}: no longer read; vector similarity is weighted per embedder by \`profile-edge fit\` (see README, Vectors)`);
  }
}

function embeddingUsage(e: z.infer<typeof Environment>): EmbeddingUsage {
  // The endpoint pools and picks its own precision, USE-lite pools as it was trained: saying otherwise here would be
  // silently ignored.
  if (e.EMBEDDER !== 'transformers' && e.EMBEDDING_POOLING !== undefined) throw new ConfigError('invalid configuration:\n  EMBEDDING_POOLING: applies to EMBEDDER=transformers only (an endpoint pools on its side)');
  if (e.EMBEDDER !== 'transformers' && e.EMBEDDER !== 'use-lite' && e.EMBEDDING_PRECISION !== undefined) {
    throw new ConfigError('invalid configuration:\n  EMBEDDING_PRECISION: applies to EMBEDDER=transformers and EMBEDDER=use-lite only (an endpoint quantizes on its side)');
  }
  return {
    preset: e.EMBEDDING_PRESET,
    queryPrefix: e.EMBEDDING_QUERY_PREFIX,
    documentPrefix: e.EMBEDDING_DOCUMENT_PREFIX,
    batchSize: e.EMBEDDING_BATCH_SIZE,
    questionTimeoutMs: e.EMBEDDING_QUESTION_TIMEOUT_MS,
  };
}

function requireModelDir(dir: string | undefined): string {
  if (!dir) throw new ConfigError('invalid configuration:\n  EMBEDDING_MODEL_DIR: required when EMBEDDER=transformers (a local directory with the ONNX model)');
  return path.resolve(dir);
}

/**
 * Reads and validates configuration from an environment (by default `process.env`).
 * This is the only place in the service that reads environment variables.
 */
export function load(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = Environment.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  rejectRetired(e);
  if (e.DATABASE_PATH !== undefined && e.DATABASE_URL !== undefined) {
    throw new ConfigError('invalid configuration:\n  DATABASE_URL: set DATABASE_URL (PostgreSQL) or DATABASE_PATH (SQLite), not both');
  }
  const databasePath = e.DATABASE_URL !== undefined ? undefined : e.DATABASE_PATH === ':memory:' ? e.DATABASE_PATH : path.resolve(e.DATABASE_PATH ?? defaultDatabasePath);
  const tempo = networks.tempo[e.TEMPO_NETWORK];
  const base = networks.x402_base[e.X402_BASE_NETWORK];
  return {
    environment: e.ENVIRONMENT,
    host: e.HOST,
    port: e.PORT,
    database: databasePath === undefined ? { engine: 'postgres', url: e.DATABASE_URL!, connections: e.DATABASE_POOL_SIZE } : { engine: 'sqlite', path: databasePath },
    databasePath,
    // Production never gets demo rows unless an operator asks for them.
    demoData: e.DEMO_DATA ?? e.ENVIRONMENT !== 'production',
    logLevel: e.LOG_LEVEL,
    log: { format: e.LOG_FORMAT, questions: e.LOG_QUESTIONS },
    metrics: { token: e.METRICS_TOKEN, port: e.METRICS_PORT },
    breaker: { failures: e.BREAKER_FAILURES, coolMs: Math.round(e.BREAKER_COOL_SECONDS * 1000) },
    trustProxy: e.TRUST_PROXY,
    allowed: { origins: e.ALLOWED_ORIGINS, hosts: e.ALLOWED_HOSTS },
    maxBodyBytes: e.MAX_BODY_BYTES,
    chunkTargetTokens: e.CHUNK_TARGET_TOKENS,
    pricing: {
      amountUsdMillicents: e.PRICE_USD_MILLICENTS,
      costUnlocks: e.QUERY_COST_UNLOCKS,
      costCredits: e.QUERY_COST_CREDITS,
    },
    quoteRateLimitPerMinute: e.QUOTE_RATE_LIMIT_PER_MINUTE,
    rails: {
      tempo: {
        rail: 'tempo',
        ...tempo,
        currency: e.TEMPO_CURRENCY ?? tempo.currency,
        payTo: e.TEMPO_PAY_TO,
        rpcUrl: e.TEMPO_RPC_URL ?? tempo.rpcUrl,
        feePayerKey: e.TEMPO_FEE_PAYER_KEY,
      },
      x402_base: {
        rail: 'x402_base',
        ...base,
        chainId: e.X402_BASE_CHAIN_ID ?? base.chainId,
        currency: e.X402_BASE_CURRENCY ?? base.currency,
        currencyName: e.X402_BASE_CURRENCY_NAME ?? base.currencyName,
        currencyVersion: e.X402_BASE_CURRENCY_VERSION ?? base.currencyVersion,
        payTo: e.X402_BASE_PAY_TO,
        rpcUrl: e.X402_BASE_RPC_URL ?? base.rpcUrl,
        facilitatorUrl: e.X402_FACILITATOR_URL,
        nonceBinding: e.X402_NONCE_BINDING,
      },
    },
    payments: { secret: requirePaymentSecret(e), challengeTtlSeconds: e.PAYMENT_CHALLENGE_TTL_SECONDS, crashAt: e.ENVIRONMENT === 'test' ? e.PROFILE_EDGE_CRASH_AT : undefined },
    instanceLeaseSeconds: e.INSTANCE_LEASE_SECONDS,
    searchSnapshotMinChunks: e.SEARCH_SNAPSHOT_MIN_CHUNKS,
    searchThreads: { threads: e.SEARCH_THREADS ?? Math.min(2, os.availableParallelism()), minChunks: e.SEARCH_THREAD_MIN_CHUNKS },
    reconcileIntervalSeconds: e.RECONCILE_INTERVAL_SECONDS,
    landingMarginSeconds: e.SETTLEMENT_LANDING_MARGIN_SECONDS,
    citationLinks: { secret: e.CITATION_LINK_SECRET, ttlSeconds: e.CITATION_LINK_TTL_SECONDS },
    reader: { encoder: e.READER_ENCODER },
    synthesis:
      e.SYNTHESIZER === 'anthropic'
        ? { provider: 'anthropic', apiKey: requireAnthropicKey(e.ANTHROPIC_API_KEY), baseUrl: e.ANTHROPIC_BASE_URL, model: e.ANTHROPIC_MODEL, timeoutMs: e.ANTHROPIC_TIMEOUT_MS, maxRetries: e.ANTHROPIC_MAX_RETRIES }
        : { provider: 'extractive' },
    embedding:
      e.EMBEDDER === 'openai'
        ? { provider: 'openai', baseUrl: e.EMBEDDING_BASE_URL.replace(/\/+$/, ''), apiKey: e.EMBEDDING_API_KEY, model: e.EMBEDDING_MODEL, dimensions: e.EMBEDDING_DIMENSIONS, ...embeddingUsage(e) }
        : e.EMBEDDER === 'transformers'
          ? {
              provider: 'transformers',
              modelDir: requireModelDir(e.EMBEDDING_MODEL_DIR),
              pooling: e.EMBEDDING_POOLING,
              precision: e.EMBEDDING_PRECISION ?? 'fp32',
              ...embeddingUsage(e),
            }
          : e.EMBEDDER === 'use-lite'
            ? { provider: 'use-lite', precision: e.EMBEDDING_PRECISION ?? 'fp32', ...embeddingUsage(e) }
            : { provider: 'none' },
    fetch: { allowPrivate: e.FETCH_ALLOW_PRIVATE, timeoutMs: e.FETCH_TIMEOUT_MS, maxBytes: e.FETCH_MAX_BYTES, concurrency: e.FETCH_CONCURRENCY },
    sync: { schedule: e.SYNC_SCHEDULE ?? e.ENVIRONMENT !== 'test', intervalMinutes: { ...defaultSyncIntervals, ...e.SYNC_INTERVAL_MINUTES } },
    notion: {
      baseUrl: e.NOTION_BASE_URL,
      tokens: Object.fromEntries(Object.entries(present).filter(([k, v]) => /^NOTION_TOKEN(_[A-Z0-9_]+)?$/.test(k) && v!.trim() !== '').map(([k, v]) => [k, v!.trim()])),
    },
    youtube: { baseUrl: e.YOUTUBE_BASE_URL },
    transcription:
      e.TRANSCRIBER === 'openai'
        ? { provider: 'openai', baseUrl: e.TRANSCRIBE_BASE_URL.replace(/\/+$/, ''), apiKey: requireTranscribeKey(e.TRANSCRIBE_BASE_URL, e.TRANSCRIBE_API_KEY), model: e.TRANSCRIBE_MODEL, maxBytes: e.TRANSCRIBE_MAX_BYTES }
        : { provider: 'none' },
    stdioCredentials: { apiKey: e.PROFILE_EDGE_API_KEY, bearerToken: e.PROFILE_EDGE_BEARER_TOKEN },
  };
}
