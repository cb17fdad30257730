/**
 * Secrets the service generates for itself when configuration gives none (the key that signs citation links, a
 * development payment secret), moved out of `meta` into a table of their own: a backup leaves this table's rows out
 * (pg_dump cannot leave out rows of a table, only a table's data), so whoever holds a backup cannot sign with them.
 * `secure_delete` zeroes the moved rows where they were, so the file keeps no copy of them in its free space.
 */
export const secrets = `
CREATE TABLE IF NOT EXISTS secrets (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
INSERT INTO secrets (name, value, created_at)
  SELECT key, value, CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM meta WHERE key IN ('citation_link_secret', 'payment_secret')
  ON CONFLICT (name) DO NOTHING;
PRAGMA secure_delete = ON;
DELETE FROM meta WHERE key IN ('citation_link_secret', 'payment_secret');
PRAGMA secure_delete = OFF;
`;
