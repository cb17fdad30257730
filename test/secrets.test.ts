import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import * as Backup from '../src/store/Backup.js';
import * as Stores from '../src/store/Store.js';
import type { OpenStore } from '../src/store/Store.js';
import { readable } from './support/Backups.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';

const linkSecret = 'a1'.repeat(32);
const paymentSecret = 'b2'.repeat(32);

describe.each(Engines.engines)('secrets the service makes for itself, on %s', (engine) => {
  let place: Awaited<ReturnType<typeof Engines.fresh>>;
  let store: OpenStore;
  let directory: string;

  beforeEach(async () => {
    place = await Engines.fresh(engine, 'secrets');
    store = (await Stores.open(place.target)).store;
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-secrets-'));
  });
  afterEach(async () => {
    await store?.close();
    await place?.drop();
    fs.rmSync(directory, { recursive: true, force: true });
  });

  test('behavior: kept in a table of their own, read and claimed under their names through meta as before', async () => {
    expect(await store.meta.get('citation_link_secret')).toBeUndefined();
    expect(await store.meta.claim('citation_link_secret', linkSecret)).toBe(linkSecret);
    // Two processes racing agree on the first.
    expect(await store.meta.claim('citation_link_secret', 'another')).toBe(linkSecret);
    expect(await store.secrets.get('citation_link_secret')).toBe(linkSecret);
    const peek = await Peek.open(place.env);
    try {
      expect(await peek.column("SELECT name FROM secrets")).toEqual(['citation_link_secret']);
      expect(await peek.column("SELECT key FROM meta WHERE key LIKE '%secret%'")).toEqual([]);
    } finally {
      await peek.close();
    }
    await expect(store.meta.set('payment_secret', 'x')).rejects.toThrow(/is a secret the store makes on first use or rotates/);
  });

  test('behavior: a store from before moves its secrets out of meta when migrated, and a backup of it holds neither', async () => {
    const peek = await Peek.open(place.env);
    try {
      // The store as version 15 left it: the secrets among the named values.
      await peek.run('DROP TABLE secrets');
      await peek.run('DELETE FROM schema_migrations WHERE version = 16');
      await peek.run("INSERT INTO meta (key, value) VALUES ('citation_link_secret', ?), ('payment_secret', ?)", linkSecret, paymentSecret);
      await store.close();
      store = (await Stores.open(place.target)).store;
      expect(await store.meta.get('citation_link_secret')).toBe(linkSecret);
      expect(await store.meta.get('payment_secret')).toBe(paymentSecret);
      expect(await peek.column("SELECT key FROM meta WHERE key IN ('citation_link_secret', 'payment_secret')")).toEqual([]);
    } finally {
      await peek.close();
    }
    const file = path.join(directory, 'migrated.backup');
    await Backup.backup(place.target, file);
    const bytes = readable(file);
    // The file holds no trace of either, not even in SQLite's free space where meta's rows were.
    for (const secret of [linkSecret, paymentSecret]) expect(bytes.includes(secret)).toBe(false);
    // The store itself keeps them.
    expect(await store.secrets.get('payment_secret')).toBe(paymentSecret);
  });

  test('behavior: `secrets rotate` replaces each kept secret, says what that ends, and leaves one not made yet to first use', async () => {
    await store.meta.claim('citation_link_secret', linkSecret);
    const rotated = await Cli.run({ ...place.env, LOG_LEVEL: 'silent' }, 'secrets', 'rotate');
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain('rotated citation_link_secret');
    expect(rotated.stdout).toContain('citation links signed before no longer open');
    expect(rotated.stdout).toContain('restart every serving process');
    expect(rotated.stdout).not.toContain(linkSecret);
    const now = await store.secrets.get('citation_link_secret');
    expect(now).toMatch(/^[0-9a-f]{64}$/);
    expect(now).not.toBe(linkSecret);
    expect(await store.secrets.get('payment_secret')).toBeUndefined();
    // A configured secret is what signs: the operator is told to change that one.
    const json = await Cli.run({ ...place.env, LOG_LEVEL: 'silent', CITATION_LINK_SECRET: 'c'.repeat(40) }, 'secrets', 'rotate', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ rotated: ['citation_link_secret'], configured: ['CITATION_LINK_SECRET'] });
    expect(json.stderr).toContain('warning: CITATION_LINK_SECRET is set, so it signs, not the secret kept in the store');
    expect(json.stdout + json.stderr).not.toContain('c'.repeat(40));
  });

  test('behavior: on a store that keeps none yet, `secrets rotate` says there is nothing to rotate and makes none', async () => {
    const result = await Cli.run({ ...place.env, LOG_LEVEL: 'silent' }, 'secrets', 'rotate');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('nothing to rotate');
    expect(await store.secrets.get('citation_link_secret')).toBeUndefined();
  });
});
