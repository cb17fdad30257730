import { ServiceError } from '../errors/ServiceError.js';

/**
 * The query layer every store module is written against: SQL text with `?` placeholders, run on either engine. Only
 * modules under `src/store` see it; the rest of the code holds a `Store` (Store.ts).
 *
 * The text is written once in the subset both engines speak (`ON CONFLICT`, `RETURNING`, `coalesce`, window
 * functions); where they part, a module asks `sql.dialect`. Integers come back as numbers on both (PostgreSQL's
 * BIGINT is parsed), blobs as Buffers, and a unique-key violation as a `Conflict` whichever engine raised it.
 */
export type Dialect = 'sqlite' | 'postgres';

export type Param = string | number | bigint | boolean | null | undefined | Uint8Array | readonly number[] | readonly string[];

export type Sql = {
  readonly dialect: Dialect;
  /** True inside a transaction: what it wrote may still be rolled back. */
  readonly inTransaction: boolean;
  /**
   * Values a store module keeps about this database across calls (term ids, once committed): one map per open
   * database, the same inside its transactions.
   */
  readonly memo: Map<string, unknown>;
  /** Every row the statement returns. */
  all<T>(text: string, params?: readonly Param[]): Promise<T[]>;
  /** The first row, if any. */
  get<T>(text: string, params?: readonly Param[]): Promise<T | undefined>;
  /**
   * The one blob a statement selects (a single column of at most one row), or undefined when it selects no row: for
   * large values. PostgreSQL sends it raw, by a binary COPY, where a query would send bytea as text and read it at a
   * quarter of the speed. Its parameters are strings and whole numbers.
   */
  blob(text: string, params?: readonly (string | number)[]): Promise<Uint8Array | undefined>;
  /** Runs a statement that returns no rows; resolves to how many rows it changed. */
  run(text: string, params?: readonly Param[]): Promise<number>;
  /** Runs a script of several statements without parameters (migrations). */
  script(text: string): Promise<void>;
  /**
   * Runs `work` in one transaction on one connection: committed when it resolves, rolled back when it throws. A
   * transaction inside another is a savepoint. Nothing but statements is awaited inside: fetch first, then write.
   */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
};

/**
 * Runs `work` in the caller's transaction when there is one, else in a transaction of its own: for work whose only
 * write is one statement (what it locks or reads before is for that statement), which leaves nothing half done for a
 * savepoint to undo. A savepoint is a round trip each way on PostgreSQL.
 */
export function within<T>(sql: Sql, work: (tx: Sql) => Promise<T>): Promise<T> {
  return sql.inTransaction ? work(sql) : sql.transaction(work);
}

/**
 * `column` ordered by its bytes, as SQLite orders text: PostgreSQL's default collation would skip punctuation at first
 * (`a-c` after `ab`), so a list of equal creation times, or of slugs, would come back in another order on each engine.
 */
export function bytewise(sql: Pick<Sql, 'dialect'>, column: string): string {
  return sql.dialect === 'postgres' ? `${column} COLLATE "C"` : column;
}

/** A unique or primary key already held: the store's callers read it as "someone got there first". */
export class Conflict extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'Conflict';
  }
}

/**
 * Every connection to the database was taken for longer than a request may wait for one (a burst larger than the
 * pool drains in time): a 503 `service_unavailable` with a short Retry-After. The database is there, so nothing is
 * reported lost; nothing was written by the statement that waited.
 */
export class Busy extends ServiceError {
  readonly waitedMs: number;
  constructor(waitedMs: number) {
    super('service_unavailable', 'The service is busy: every database connection stayed taken while this request waited. Try again in a moment: anything this request charged is given back.', {
      headers: { 'Retry-After': '1' },
    });
    this.name = 'Busy';
    this.waitedMs = waitedMs;
  }
}

/** Seconds a caller is asked to wait before trying again when the database is away. */
const retryAfterSeconds = 5;

/**
 * The database cannot be reached, or was lost: a 503 `service_unavailable` with Retry-After to callers, who are told
 * nothing of where the database is; `detail` (host, database and cause, never a password) is for the operator.
 * Nothing was written by the statement that met it.
 */
export class Unavailable extends ServiceError {
  readonly detail: string;
  constructor(detail: string, options?: { cause?: unknown }) {
    super('service_unavailable', 'The service cannot reach its database. Try again shortly: anything this request charged is given back once it can.', {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause: options?.cause,
    });
    this.name = 'Unavailable';
    this.detail = detail;
  }
}

/** Named values as the engines bind them: booleans as 0 and 1, undefined as NULL. */
export function bindable(value: Param): unknown {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

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
