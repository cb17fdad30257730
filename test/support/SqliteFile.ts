import type { Database } from 'better-sqlite3';
import * as Sqlite from '../../src/store/engines/Sqlite.js';
import { migrateSqlite } from '../../src/store/Migrations.js';
import * as Stores from '../../src/store/Store.js';

/**
 * SQLite's own connection to a store file, for the tests and benchmarks about what SQLite itself keeps (WAL, sqlite-vec
 * and its tables of before). Everything else reads a store through the Store or a Peek, on either engine.
 */
export type Connection = Database;

/**
 * Opens (creating if needed) a SQLite store at `file` (`:memory:` for a private one) and migrates it synchronously.
 * `store` is the Store over that same connection; closing it closes the connection.
 */
export function open(file: string): { db: Connection; store: Stores.OpenStore; created: boolean } {
  const { engine, created } = Sqlite.open(file);
  migrateSqlite(engine.db);
  return { db: engine.db, store: Stores.overSqlite(engine.db), created };
}

/** The versions of SQLite and of sqlite-vec on a connection. */
export function versions(db: Connection): { sqlite: string; sqliteVec: string } {
  const row = db.prepare('SELECT sqlite_version() AS sqlite, vec_version() AS vec').get() as { sqlite: string; vec: string };
  return { sqlite: row.sqlite, sqliteVec: row.vec };
}
