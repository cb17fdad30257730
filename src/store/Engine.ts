import * as Postgres from './engines/Postgres.js';
import * as Sqlite from './engines/Sqlite.js';
import { migrate } from './Migrations.js';
import type { Sql } from './Sql.js';

/** A database the store runs on: the query layer, plus what opening, migrating and closing it need. */
export type Engine = Sql & {
  /** Which database this is, for messages: never a password. */
  describe(): string;
  /**
   * Runs `work` while holding the store-wide migration lock: several processes starting at once migrate once
   * (PostgreSQL: an advisory lock on one connection; SQLite: each migration's BEGIN IMMEDIATE).
   */
  migrating<T>(work: (sql: Sql) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial statement; rejects with `Unavailable` when it does not. */
  ping(): Promise<void>;
  close(): Promise<void>;
};

/** Where the data lives: a SQLite file (or `:memory:`), or a PostgreSQL URL. */
export type Target = { path: string } | { url: string };

/**
 * Opens the database at `target`, creating and migrating it as needed: the one way in for the Store and for a copy
 * between stores. `created` is true when this call made the data (a new SQLite file, or a PostgreSQL database that
 * held none of this program's tables).
 */
export async function open(target: Target): Promise<{ engine: Engine; created: boolean }> {
  if ('url' in target) {
    const engine = await Postgres.open(target.url);
    try {
      const applied = await migrate(engine);
      return { engine, created: applied.includes(1) };
    } catch (error) {
      await engine.close().catch(() => undefined);
      throw error;
    }
  }
  const { engine, created } = Sqlite.open(target.path);
  try {
    await migrate(engine);
  } catch (error) {
    await engine.close().catch(() => undefined);
    throw error;
  }
  return { engine, created };
}
