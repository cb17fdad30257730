import crypto from 'node:crypto';
import type { Sql } from './Sql.js';

/**
 * Secrets the service makes for itself when configuration names none, kept in a table of their own so that backups
 * can leave them out: the key that signs citation links (CITATION_LINK_SECRET unset) and the payment secret of a
 * development server (PAYMENT_SECRET unset). A store restored from a backup has none, and makes new ones on first use.
 */

/** The secrets a store may keep. */
export const generated = ['citation_link_secret', 'payment_secret'] as const;

export type Name = (typeof generated)[number];

/** Whether `name` is one of the kept secrets (which `meta` hands on here). */
export const isSecret = (name: string): name is Name => (generated as readonly string[]).includes(name);

/** A secret, if one was made. */
export async function get(sql: Sql, name: Name): Promise<string | undefined> {
  return (await sql.get<{ value: string }>('SELECT value FROM secrets WHERE name = ?', [name]))?.value;
}

/** Keeps `value` unless a secret of that name is kept already, and returns the one that holds: racing processes agree on one. */
export async function claim(sql: Sql, name: Name, value: string): Promise<string> {
  await sql.run('INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING', [name, value, Date.now()]);
  return (await get(sql, name))!;
}

/**
 * Replaces every kept secret with a new random one (32 bytes, hex, as they are made), in one transaction: what an old
 * backup holds no longer signs anything. Returns the names replaced; a secret not made yet is made on first use.
 */
export async function rotate(sql: Sql): Promise<Name[]> {
  return sql.transaction(async (tx) => {
    const kept = (await tx.all<{ name: string }>('SELECT name FROM secrets ORDER BY name')).map((r) => r.name).filter(isSecret);
    for (const name of kept) await tx.run('UPDATE secrets SET value = ?, created_at = ? WHERE name = ?', [crypto.randomBytes(32).toString('hex'), Date.now(), name]);
    return kept;
  });
}
