import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database as Db, Statement } from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { migrate } from './Migrations.js';

export type Database = Db;

/**
 * Opens (creating if needed) the embedded store: WAL mode, foreign keys on, sqlite-vec loaded, migrations applied.
 * This module and its siblings in `store/` are the only importers of better-sqlite3 and sqlite-vec.
 */
export function open(file: string): { db: Database; created: boolean } {
  const memory = file === ':memory:';
  const created = memory || !fs.existsSync(file);
  if (!memory) fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  sqliteVec.load(db);
  migrate(db);
  return { db, created };
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
