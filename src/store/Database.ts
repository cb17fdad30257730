import type { Database as Db } from 'better-sqlite3';
import * as Sqlite from './engines/Sqlite.js';
import { migrateSqlite } from './Migrations.js';

export type Database = Db;

/**
 * Opens (creating if needed) an embedded store and migrates it synchronously, handing out the connection itself: for
 * tests and benchmarks that read SQLite directly; `Store.overSqlite` gives the Store over the same connection.
 */
export function open(file: string): { db: Database; created: boolean } {
  const { engine, created } = Sqlite.open(file);
  migrateSqlite(engine.db);
  return { db: engine.db, created };
}

/** Versions of the embedded engines, for diagnostics. */
export function versions(db: Database): { sqlite: string; sqliteVec: string } {
  const row = db.prepare('SELECT sqlite_version() AS sqlite, vec_version() AS vec').get() as { sqlite: string; vec: string };
  return { sqlite: row.sqlite, sqliteVec: row.vec };
}

/** Reads a value from the meta table (tests). */
export function getMeta(db: Database, key: string): string | undefined {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
  return row?.value;
}
