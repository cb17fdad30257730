import * as Secrets from './Secrets.js';
import type { Sql } from './Sql.js';

/**
 * Small named values the service keeps beside its tables: markers and versions. The secrets it makes for itself live
 * in their own table (Secrets.ts), out of backups; their names are handed on there, so callers may ask either.
 */

/** A value, if set. */
export async function get(sql: Sql, key: string): Promise<string | undefined> {
  if (Secrets.isSecret(key)) return Secrets.get(sql, key);
  return (await sql.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key]))?.value;
}

/** Sets a value, replacing any before. */
export async function set(sql: Sql, key: string, value: string): Promise<void> {
  if (Secrets.isSecret(key)) throw new Error(`${key} is a secret the store makes on first use or rotates (Secrets.rotate); it is not set by name`);
  await sql.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
}

/** Sets a value unless one is set already, and returns the one that holds: two processes racing agree on one. */
export async function claim(sql: Sql, key: string, value: string): Promise<string> {
  if (Secrets.isSecret(key)) return Secrets.claim(sql, key, value);
  await sql.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING', [key, value]);
  return (await get(sql, key))!;
}
