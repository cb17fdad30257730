import type { Engine } from '../../src/store/Engine.js';
import type { Param } from '../../src/store/Sql.js';
import * as Postgres from '../../src/store/engines/Postgres.js';
import * as Sqlite from '../../src/store/engines/Sqlite.js';

/**
 * A second connection to a store's database, on either engine, for tests that check what a request left behind the
 * way an auditor would: committed rows, read with SQL written once (`?` placeholders, camelCase aliases work on both).
 * Tests write through it only to set up a state the service itself would never reach.
 */
export type Peek = {
  readonly engine: 'sqlite' | 'postgres';
  all<T = Record<string, unknown>>(text: string, ...params: Param[]): Promise<T[]>;
  get<T = Record<string, unknown>>(text: string, ...params: Param[]): Promise<T | undefined>;
  /** The first column of the first row (a count, an id), or undefined when there is no row. */
  value<T = unknown>(text: string, ...params: Param[]): Promise<T | undefined>;
  /** The first column of every row. */
  column<T = unknown>(text: string, ...params: Param[]): Promise<T[]>;
  run(text: string, ...params: Param[]): Promise<number>;
  /** Every row of every table a request could change, except when a credential was last used. */
  snapshot(): Promise<Record<string, unknown[]>>;
  close(): Promise<void>;
};

/** Where a store lives, as the configuration names it. */
export type Place = { DATABASE_PATH?: string; DATABASE_URL?: string };

export async function open(place: Place): Promise<Peek> {
  const engine: Engine = place.DATABASE_URL !== undefined ? await Postgres.open(place.DATABASE_URL, { max: 2 }) : Sqlite.open(requirePath(place)).engine;
  const first = (row: Record<string, unknown> | undefined) => (row === undefined ? undefined : Object.values(row)[0]);
  const peek: Peek = {
    engine: engine.dialect,
    all: (text, ...params) => engine.all(text, params),
    get: (text, ...params) => engine.get(text, params),
    value: async (text, ...params) => first(await engine.get<Record<string, unknown>>(text, params)) as never,
    column: async (text, ...params) => (await engine.all<Record<string, unknown>>(text, params)).map(first) as never,
    run: (text, ...params) => engine.run(text, params),
    async snapshot() {
      const tables = (await peek.column<string>(tableList[engine.dialect])).filter((t) => !derived.some((prefix) => t.startsWith(prefix))).sort();
      const state: Record<string, unknown[]> = {};
      for (const table of tables) {
        const rows = (await engine.all<Record<string, unknown>>(`SELECT * FROM ${table}`)).map(({ last_used_at: _lastUsed, ...row }) => row);
        // Neither engine promises an order without ORDER BY; rows are compared as a set.
        state[table] = rows.map((row) => [JSON.stringify(row), row] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
      }
      return state;
    },
    close: () => engine.close(),
  };
  return peek;
}

const tableList = {
  sqlite: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
  postgres: 'SELECT tablename FROM pg_tables WHERE schemaname = current_schema()',
};

/**
 * Left out of a snapshot: derived indexes (full text, vectors, the term model) follow the tables they are built from;
 * the quote limit's buckets count every request, refused ones too (that is what a limit is for); instances' leases
 * and credentials being redeemed are the running processes' bookkeeping, not data a request changes; the operator's
 * query counts count every query, refused ones too (as the metrics do).
 */
const derived = ['chunk_fts', 'chunk_vectors', 'search_snapshot', 'term_model', 'rate_buckets', 'instances', 'credential_claims', 'job_leases', 'query_days'];

function requirePath(place: Place): string {
  if (place.DATABASE_PATH === undefined) throw new Error('a peek needs DATABASE_PATH or DATABASE_URL');
  return place.DATABASE_PATH;
}
