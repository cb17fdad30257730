import type { Database as Db, Statement } from 'better-sqlite3';
import * as Sqlite from './engines/Sqlite.js';
import { migrateSqlite } from './Migrations.js';

export type Database = Db;

/**
 * Opens (creating if needed) the embedded store and migrates it, handing out the connection itself: for the code not
 * yet on the Store (Store.ts), which shares this connection through `Store.overSqlite`.
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

const compiled = new WeakMap<Database, Map<string, Statement>>();

/**
 * A statement compiled once per connection, for those run at every question; SQLite recompiles one whose tables
 * changed since. A mode set on it (`pluck`, `raw`) holds for every caller of the same text.
 */
export function statement(db: Database, sql: string): Statement {
  let statements = compiled.get(db);
  if (!statements) compiled.set(db, (statements = new Map()));
  let prepared = statements.get(sql);
  if (!prepared) statements.set(sql, (prepared = db.prepare(sql)));
  return prepared;
}

/** Reads a value from the meta table. */
export function getMeta(db: Database, key: string): string | undefined {
  const row = statement(db, 'SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
  return row?.value;
}

/** Writes a value to the meta table. */
export function setMeta(db: Database, key: string, value: string): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
}
