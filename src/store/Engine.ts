import * as Postgres from './engines/Postgres.js';
import * as Sqlite from './engines/Sqlite.js';
import { migrate } from './Migrations.js';
import type { Sql } from './Sql.js';

/** What an engine says of its database's reachability: lost (with what the operator needs to know), and back. */
export type Availability = { state: 'lost'; detail: string } | { state: 'back'; downMs: number };

/** A database the store runs on: the query layer, plus what opening, migrating and closing it need. */
export type Engine = Sql & {
  /**
   * The same query layer, served before requests waiting for a connection: for what must not wait behind a burst of
   * them (an instance renewing its lease, a health check). The embedded engine has no line: it is the same.
   */
  urgent: Sql;
  /** Which database this is, for messages: never a password. */
  describe(): string;
  /**
   * Runs `work` while holding the store-wide migration lock: several processes starting at once migrate once
   * (PostgreSQL: an advisory lock on one connection; SQLite: each migration's BEGIN IMMEDIATE).
   */
  migrating<T>(work: (sql: Sql) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial statement; rejects with `Unavailable` when it does not. */
  ping(): Promise<void>;
  /**
   * Tells `listener` when a statement first finds the database unreachable, and when one is answered again (an
   * embedded file is never lost: SQLite never tells). Returns what stops telling.
   */
  watch(listener: (event: Availability) => void): () => void;
  close(): Promise<void>;
};

/** Where the data lives: a SQLite file (or `:memory:`), or a PostgreSQL URL. */
export type Target = { path: string } | { url: string };

/**
 * Opens the database at `target`, creating and migrating it as needed: the one way in for the Store and for a copy
 * between stores. `created` is true when this call made the data (a new SQLite file, or a PostgreSQL database that
 * held none of this program's tables). `before` runs on the database before it is migrated (before anything is
 * written to it): a throw there closes it and is the caller's.
 */
export async function open(target: Target, options: { before?: (engine: Engine) => Promise<void> } = {}): Promise<{ engine: Engine; created: boolean }> {
  const { engine, created } = await connect(target);
  try {
    await options.before?.(engine);
    const applied = await migrate(engine);
    return { engine, created: 'url' in target ? applied.includes(1) : created };
  } catch (error) {
    await engine.close().catch(() => undefined);
    throw error;
  }
}

/**
 * Opens the database at `target` as it is, not migrated. `readOnly` writes nothing to it (a SQLite file must exist
 * and keeps its journal mode; PostgreSQL's transactions are read-only): for reading a store, or a database that may
 * not be one, without changing it.
 */
export async function connect(target: Target, options: { readOnly?: boolean } = {}): Promise<{ engine: Engine; created: boolean }> {
  if ('url' in target) return { engine: await Postgres.open(target.url, { readOnly: options.readOnly }), created: false };
  return Sqlite.open(target.path, { readOnly: options.readOnly });
}
