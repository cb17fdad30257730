import type { Sql } from './Sql.js';

/** Small named values the service keeps beside its tables: markers, keys made on first use, versions. */

/** A value, if set. */
export async function get(sql: Sql, key: string): Promise<string | undefined> {
  return (await sql.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key]))?.value;
}

/** Sets a value, replacing any before. */
export async function set(sql: Sql, key: string, value: string): Promise<void> {
  await sql.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
}

/** Sets a value unless one is set already, and returns the one that holds: two processes racing agree on one. */
export async function claim(sql: Sql, key: string, value: string): Promise<string> {
  await sql.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING', [key, value]);
  return (await get(sql, key))!;
}
