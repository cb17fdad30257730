import { afterAll, beforeAll } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import * as Config from '../../src/config/Config.js';
import * as Demo from '../../src/demo/Demo.js';
import * as Log from '../../src/log/Logger.js';
import * as Services from '../../src/Services.js';
import * as Issuing from '../../src/auth/Keys.js';
import * as HttpServer from '../../src/transport/http/Server.js';
import * as Engines from './Engines.js';
import * as Peek from './Peek.js';

/** Receiving addresses used by tests; never real wallets. */
export const payTo = {
  tempo: '0x1111111111111111111111111111111111111111',
  x402_base: '0x2222222222222222222222222222222222222222',
};

/** Credentials minted for the demo's accounts, by role. */
export type Keys = {
  /** An account with no relation to any profile. */
  callerKey: string;
  /** Owner of the private profile `sunniva-bratt` and of `owen-halvorsen`'s private channel: their bearer tokens and keys. */
  sunnivaBearer: string;
  sunnivaKey: string;
  kaiBearer: string;
  owenBearer: string;
  /** A bearer token of an account with no relation to the private profile. */
  outsiderBearer: string;
  /** An API key of an account the private profile's owner authorized. */
  partnerKey: string;
  revokedKey: string;
  /** An API key of an account with no balance. */
  brokeKey: string;
  /** The API key of owen, owner of `owen-halvorsen` and its private channel. */
  owenKey: string;
};

export type Environment = {
  directory: string;
  env: Record<string, string>;
  services: Services.Services;
  /** The store's tables, read directly on whichever engine holds them. */
  peek: Peek.Peek;
  keys: Keys;
  close(): Promise<void>;
};

/**
 * A fresh store, loaded with the demo dataset and a set of accounts and credentials: a SQLite file in a temporary
 * directory, or a PostgreSQL database made for it when this run's engine is PostgreSQL (Engines.current) or the
 * overrides name one, dropped on close.
 */
export async function create(overrides: Record<string, string> = {}, options: { /** Receives the service's log lines (level info and up). */ logLines?: string[] } = {}): Promise<Environment> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-test-'));
  const database = overrides.DATABASE_URL === undefined && overrides.DATABASE_PATH === undefined && Engines.current === 'postgres' ? await Engines.fresh('postgres') : undefined;
  const env: Record<string, string> = {
    ENVIRONMENT: 'test',
    DATABASE_PATH: path.join(directory, 'test.db'),
    ...database?.env,
    // Two test files run at once, each with several instances (this one, HTTP servers, stdio children) on a server
    // that takes 100 connections: each keeps at most 2 here (and one for its lease), 10 in production.
    ...(database && { DATABASE_POOL_SIZE: '2' }),
    LOG_LEVEL: 'silent',
    DEMO_DATA: 'false',
    TEMPO_PAY_TO: payTo.tempo,
    X402_BASE_PAY_TO: payTo.x402_base,
    // Nothing leaves loopback: a test that needs a chain or a facilitator starts the sandbox (support/Chains.ts).
    TEMPO_RPC_URL: 'http://127.0.0.1:9',
    X402_BASE_RPC_URL: 'http://127.0.0.1:9',
    X402_FACILITATOR_URL: 'http://127.0.0.1:9',
    ...overrides,
  };
  // On PostgreSQL (DATABASE_URL given) there is no file.
  if (env.DATABASE_URL !== undefined) delete env.DATABASE_PATH;
  const config = Config.load(env);
  const logLines = options.logLines;
  const services = await Services.create(config, logLines ? { logger: Log.create({ level: 'info', write: (line) => logLines.push(line) }) } : {});
  const peek = await Peek.open(env);
  const { store } = services;
  await Demo.load({ store }, { chunkTargetTokens: config.chunkTargetTokens });

  const account = async (name: string) => (await store.accounts.find(name)) ?? (await store.accounts.create({ name }));
  const key = async (name: string) => (await Issuing.issue(store, { kind: 'api_key', accountId: (await account(name)).id })).token;
  const bearer = async (name: string) => (await Issuing.issue(store, { kind: 'bearer_token', accountId: (await account(name)).id })).token;
  const partner = await account('partner');
  await store.profiles.grantAccess((await store.profiles.get('sunniva-bratt')).id, partner.id);
  const revoked = await Issuing.issue(store, { kind: 'api_key', accountId: (await account('caller')).id });
  await store.credentials.revoke('api_key', revoked.credential.id);

  // Balances for paid queries; the "broke" account has none.
  for (const name of ['caller', 'partner', 'owen', 'sunniva']) await store.ledger.move({ accountId: (await account(name)).id, kind: 'grant', unlocksDelta: 1000, creditsDelta: 100_000 });
  const keys: Keys = {
    callerKey: await key('caller'),
    brokeKey: await key('broke'),
    owenKey: await key('owen'),
    sunnivaBearer: await bearer('sunniva'),
    sunnivaKey: await key('sunniva'),
    kaiBearer: await bearer('kai'),
    owenBearer: await bearer('owen'),
    outsiderBearer: await bearer('outsider'),
    partnerKey: await key('partner'),
    revokedKey: revoked.token,
  };
  return {
    directory,
    env,
    services,
    peek,
    keys,
    async close() {
      await peek.close();
      await services.close();
      await database?.drop();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Serves an environment over HTTP on a free loopback port. */
export async function serve(environment: Environment): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const { server, url } = await HttpServer.listen(environment.services, { host: '127.0.0.1', port: 0 });
  return { url, server, close: () => HttpServer.close(server) };
}

/** Registers hooks that create and serve an environment for the whole test file, and tear it down after. */
export function useServed(overrides: Record<string, string> = {}): { readonly environment: Environment; readonly url: string } {
  let environment: Environment | undefined;
  let http: Awaited<ReturnType<typeof serve>> | undefined;
  beforeAll(async () => {
    environment = await create(overrides);
    http = await serve(environment);
  });
  afterAll(async () => {
    await http?.close();
    await environment?.close();
  });
  return {
    get environment() {
      return environment!;
    },
    get url() {
      return http!.url;
    },
  };
}
