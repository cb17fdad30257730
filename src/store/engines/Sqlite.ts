import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database, Statement } from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { bindable, Conflict, type Engine, type Param, type Sql } from '../Sql.js';

/**
 * The embedded engine: one better-sqlite3 connection in WAL mode with sqlite-vec loaded. Statements are synchronous,
 * so a transaction holds the connection from BEGIN to COMMIT and every other statement waits its turn (a queue), or
 * another request's write would land inside it.
 */
export type SqliteEngine = Engine & {
  /** The connection itself, for the modules under `src/store` that need SQLite's own features (sqlite-vec). */
  readonly db: Database;
  /**
   * Copies the whole database to `file` with SQLite's online backup API while other processes keep writing: after a
   * first step, the rest is copied in one step, under one read transaction (in WAL mode it blocks no writer), so the
   * copy is the database as of one moment. The copy is one self-contained file (rollback journal, not WAL), checked
   * with `PRAGMA integrity_check`: returns what that found ('ok' when whole). The tables named in `emptied` are
   * emptied in the copy first, with `secure_delete`, so their rows leave no trace in its free pages. `file` may exist
   * empty (made beforehand with the mode the copy must have): its journal files take its mode.
   */
  backup(file: string, options?: { emptied?: readonly string[] }): Promise<string[]>;
  /** `PRAGMA integrity_check`: 'ok', or what is damaged. */
  integrity(): string[];
};

/**
 * Opens (creating if needed) the database file; `:memory:` gives a private in-memory one. `readOnly` opens a file that
 * exists, writing nothing to it (its journal mode is left as it is).
 */
export function open(file: string, options: { readOnly?: boolean } = {}): { engine: SqliteEngine; created: boolean } {
  const memory = file === ':memory:';
  const created = !options.readOnly && (memory || !fs.existsSync(file));
  if (!memory && !options.readOnly) fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new BetterSqlite3(file, { readonly: options.readOnly === true, fileMustExist: options.readOnly === true });
  try {
    if (!options.readOnly) db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    sqliteVec.load(db);
  } catch (error) {
    // A file that is not a database fails here, at its first read.
    db.close();
    throw error;
  }
  return { engine: wrap(db, file), created };
}

const wrapped = new WeakMap<Database, SqliteEngine>();
const connections = new WeakMap<Sql, Database>();

/**
 * The SQLite connection under a query layer (the engine's, or one of its transactions'), for store modules that use
 * SQLite's own features; undefined on another engine.
 */
export function connectionOf(sql: Sql): Database | undefined {
  return connections.get(sql);
}

/** The engine over an open connection: one per connection, so everything on it waits in one queue. */
export function wrap(db: Database, file = db.name): SqliteEngine {
  let engine = wrapped.get(db);
  if (!engine) wrapped.set(db, (engine = over(db, file)));
  return engine;
}

function over(db: Database, file: string): SqliteEngine {
  const statements = new Map<string, Statement>();
  const prepared = (text: string): Statement => {
    let statement = statements.get(text);
    if (!statement) {
      statement = db.prepare(text);
      if (statements.size > 2_000) statements.clear();
      statements.set(text, statement);
    }
    return statement;
  };
  const args = (params: readonly Param[] | undefined) => (params ?? []).map((p) => (Array.isArray(p) ? JSON.stringify(p) : bindable(p as Param)));

  // The connection's turn: a transaction takes it until it ends; statements outside one wait behind it.
  let turn: Promise<void> = Promise.resolve();
  const exclusive = async <T>(work: () => Promise<T>): Promise<T> => {
    const before = turn;
    let release!: () => void;
    turn = new Promise((resolve) => (release = resolve));
    await before;
    try {
      return await work();
    } finally {
      release();
    }
  };
  let busy = false;
  const memo = new Map<string, unknown>();

  const runner = (depth: number, own: boolean): Sql => {
    // Outside a transaction a statement is one synchronous call: it waits only while a transaction holds the turn.
    const now = <T>(work: () => T): Promise<T> => (own || !busy ? Promise.resolve().then(() => translated(work)) : exclusive(async () => translated(work)));
    const sql: Sql = {
      dialect: 'sqlite',
      inTransaction: own,
      memo,
      all: <T>(text: string, params?: readonly Param[]) => now(() => prepared(text).all(...args(params)) as T[]),
      get: <T>(text: string, params?: readonly Param[]) => now(() => prepared(text).get(...args(params)) as T | undefined),
      blob: (text, params) =>
        now(() => {
          const row = prepared(text).get(...args(params)) as Record<string, Uint8Array> | undefined;
          // A NULL value is none, as on PostgreSQL.
          return (row && Object.values(row)[0]) ?? undefined;
        }),
      run: (text, params) => now(() => prepared(text).run(...args(params)).changes),
      script: (text) => now(() => void db.exec(text)),
      transaction: async <T>(work: (tx: Sql) => Promise<T>): Promise<T> => {
        if (own) {
          const name = `s${depth}`;
          db.exec(`SAVEPOINT ${name}`);
          try {
            const result = await work(runner(depth + 1, true));
            db.exec(`RELEASE ${name}`);
            return result;
          } catch (error) {
            db.exec(`ROLLBACK TO ${name}`);
            db.exec(`RELEASE ${name}`);
            throw translatedError(error);
          }
        }
        return exclusive(async () => {
          busy = true;
          try {
            // IMMEDIATE: the write lock is taken at BEGIN, so two processes on one file queue rather than deadlock.
            translated(() => db.exec('BEGIN IMMEDIATE'));
            try {
              const result = await work(runner(1, true));
              db.exec('COMMIT');
              return result;
            } catch (error) {
              if (db.inTransaction) db.exec('ROLLBACK');
              throw translatedError(error);
            }
          } finally {
            busy = false;
          }
        });
      },
    };
    connections.set(sql, db);
    return sql;
  };

  const sql = runner(0, false);
  const engine: SqliteEngine = {
    ...sql,
    db,
    urgent: sql,
    describe: () => (file === ':memory:' || file === '' ? 'SQLite in memory' : `SQLite at ${file}`),
    backup: async (to, options = {}) => {
      await db.backup(to, { progress: ({ totalPages }) => totalPages });
      const copy = new BetterSqlite3(to, { fileMustExist: true });
      try {
        copy.pragma('journal_mode = DELETE');
        if (options.emptied?.length) {
          copy.pragma('secure_delete = ON');
          copy.transaction(() => {
            for (const table of options.emptied ?? []) copy.prepare(`DELETE FROM "${table}"`).run();
          })();
        }
        return (copy.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check);
      } finally {
        copy.close();
      }
    },
    integrity: () => (db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check),
    // One file, one process at a time: BEGIN IMMEDIATE in each migration already keeps two starters apart.
    migrating: (work) => work(sql),
    ping: async () => {
      prepared('SELECT 1').get();
    },
    // A file in this process is never unreachable: there is nothing to tell.
    watch: () => () => undefined,
    close: async () => {
      await exclusive(async () => undefined);
      db.close();
    },
  };
  connections.set(engine, db);
  return engine;
}

function translated<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw translatedError(error);
  }
}

function translatedError(error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new Conflict((error as Error).message, { cause: error });
  return error;
}
