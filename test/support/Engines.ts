import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import * as Stores from '../../src/store/Store.js';
import type { OpenStore } from '../../src/store/Store.js';

/**
 * The engines a store suite runs on: SQLite in a temporary file, and PostgreSQL in a database made for the run and
 * dropped after. PostgreSQL is the one at PROFILE_EDGE_TEST_POSTGRES (default postgres://postgres@127.0.0.1:5432/postgres);
 * when none answers, its cases fail with how to start one, never skip silently.
 */
export type EngineName = 'sqlite' | 'postgres';

export const engines: EngineName[] = ['sqlite', 'postgres'];

/**
 * The engine the end-to-end suites run on in this process: SQLite unless PROFILE_EDGE_TEST_ENGINE says postgres
 * (vitest.config.ts runs them once per engine).
 */
export const current: EngineName = (() => {
  const named = process.env.PROFILE_EDGE_TEST_ENGINE ?? 'sqlite';
  if (named !== 'sqlite' && named !== 'postgres') throw new Error(`PROFILE_EDGE_TEST_ENGINE must be sqlite or postgres, not ${named}`);
  return named;
})();

export const adminUrl = process.env.PROFILE_EDGE_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const howToStart = 'start one with `pg_ctlcluster --skip-systemctl-redirect 15 main start` or point PROFILE_EDGE_TEST_POSTGRES at one';

/** A fresh, empty store location on `engine`, with what removes it. */
export async function fresh(engine: EngineName, prefix = 'store'): Promise<{ target: { path: string } | { url: string }; env: Record<string, string>; drop(): Promise<void> }> {
  if (engine === 'sqlite') {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), `profile-edge-${prefix}-`));
    const file = path.join(directory, 'store.db');
    return { target: { path: file }, env: { DATABASE_PATH: file }, drop: async () => fs.rmSync(directory, { recursive: true, force: true }) };
  }
  const name = `profile_edge_test_${Date.now().toString(36)}_${crypto.randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    target: { url: url.href },
    env: { DATABASE_URL: url.href },
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`no PostgreSQL answers at ${new URL(adminUrl).host} (${(error as Error).message}): ${howToStart}`);
  }
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * Two store connections on one fresh store on `engine`, made before the suite's tests and closed (and the store
 * dropped) after them: two processes on one database, as far as the store can tell.
 */
export function twoProcesses(engine: EngineName, prefix: string): { readonly a: OpenStore; readonly b: OpenStore; readonly place: Awaited<ReturnType<typeof fresh>> } {
  let place: Awaited<ReturnType<typeof fresh>> | undefined;
  let a: OpenStore | undefined;
  let b: OpenStore | undefined;
  beforeAll(async () => {
    place = await fresh(engine, prefix);
    a = (await Stores.open(place.target)).store;
    b = (await Stores.open(place.target)).store;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await place?.drop();
  });
  return {
    get a() {
      return a!;
    },
    get b() {
      return b!;
    },
    get place() {
      return place!;
    },
  };
}
