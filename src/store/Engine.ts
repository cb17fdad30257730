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
