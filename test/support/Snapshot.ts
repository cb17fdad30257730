import type { Database } from '../../src/store/Database.js';

/** Every row of every table that holds state a request could change, except when a credential was last used. */
export function snapshot(db: Database): Record<string, unknown[]> {
  const tables = db
    // Derived indexes (full text, vectors, the term model) follow the tables they are built from.
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'chunk_fts%' AND name NOT LIKE 'chunk_vectors%' AND name NOT LIKE 'term_model%' ORDER BY name",
    )
    .pluck()
    .all() as string[];
  return Object.fromEntries(
    tables.map((t) => {
      const rows = db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all() as Record<string, unknown>[];
      return [t, rows.map(({ last_used_at: _lastUsed, ...row }) => row)];
    }),
  );
}
