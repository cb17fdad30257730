import type { Database } from 'better-sqlite3';
import * as Engines from './Engine.js';
import type { Availability, Engine, Target } from './Engine.js';
import * as Sqlite from './engines/Sqlite.js';
import type { Dialect, Sql } from './Sql.js';
import * as Accounts from './Accounts.js';
import * as Books from './Books.js';
import * as Channels from './Channels.js';
import * as Charges from './Charges.js';
import * as Chunks from './Chunks.js';
import * as Collections from './Collections.js';
import * as Copy from './Copy.js';
import * as Credentials from './Credentials.js';
import * as Ledger from './Ledger.js';
import * as Instances from './Instances.js';
import * as Items from './Items.js';
import * as JobLeases from './JobLeases.js';
import * as QueryDays from './QueryDays.js';
import * as Meta from './Meta.js';
import * as Payments from './Payments.js';
import * as Profiles from './Profiles.js';
import * as RateLimits from './RateLimits.js';
import * as SearchDocs from './SearchDocs.js';
import * as Snapshots from './Snapshots.js';
import * as Secrets from './Secrets.js';
import * as TermModelRows from './TermModelRows.js';
import * as VectorIndex from './VectorIndex.js';

export { Conflict, Unavailable } from './Sql.js';
export type { Availability, Target } from './Engine.js';

/** A module of queries as its callers see it: each function without the query layer it is run on. */
type Bound<M> = {
  [K in keyof M as M[K] extends (sql: Sql, ...args: never[]) => Promise<unknown> ? K : never]: M[K] extends (sql: Sql, ...args: infer A) => infer R
    ? (...args: A) => R
    : never;
};

/**
 * Everything the service keeps, behind one async interface: typed records in and out, a transaction as a callback
 * (whose `tx` is a Store too), nothing of the engine showing. It alone holds a database handle.
 */
export type Store = {
  /** Which engine holds the data; callers never branch on it but to report it. */
  readonly engine: Dialect;
  accounts: Bound<typeof Accounts>;
  /** Whether balances, payments, credits and the ledger agree (read only). */
  books: Bound<typeof Books>;
  channels: Bound<typeof Channels>;
  charges: Bound<typeof Charges>;
  chunks: Bound<typeof Chunks>;
  collections: Bound<typeof Collections>;
  credentials: Bound<typeof Credentials>;
  instances: Bound<typeof Instances>;
  items: Bound<typeof Items>;
  jobs: Bound<typeof JobLeases>;
  queryDays: Bound<typeof QueryDays>;
  ledger: Bound<typeof Ledger>;
  meta: Bound<typeof Meta>;
  payments: Bound<typeof Payments>;
  profiles: Bound<typeof Profiles>;
  rateLimits: Bound<typeof RateLimits>;
  search: Bound<typeof SearchDocs>;
  /** The search index's snapshot, for instances to start from. */
  snapshots: Bound<typeof Snapshots>;
  /** Secrets the service made for itself (link signing, a development payment secret): never in a backup. */
  secrets: Bound<typeof Secrets>;
  termModel: Bound<typeof TermModelRows>;
  vectors: Bound<typeof VectorIndex>;
  /**
   * The same store, served before requests waiting for a database connection: for short bookkeeping that must not
   * wait behind a burst (a payment captured once its answer left: the longer that waits, the wider the window in
   * which a killed process leaves an answer unpaid). Inside a transaction, and on SQLite, it is the store itself.
   */
  readonly urgent: Store;
  /**
   * Runs `work` in one transaction: all its writes land or none do. Keep it short and name what it guards; fetch,
   * embed and call models before it, never inside.
   */
  transaction<T>(work: (tx: Store) => Promise<T>): Promise<T>;
};

/** A store with its lifetime: what `open` hands the process that owns it. */
export type OpenStore = Store & {
  /** Which database, for messages: host and name, never a password. */
  describe(): string;
  /** Resolves when the database answers; rejects with `Unavailable` when it does not. */
  ping(): Promise<void>;
  /**
   * The same store, telling `listener` each statement it runs with the rows it read or changed: for checks that two
   * requests did the same work (a refusal must not tell what exists by what it reads), and for tracing.
   */
  observed(listener: (statement: { text: string; rows: number }) => void): Store;
  /** Tells `listener` when the database is lost (a statement found it unreachable) and when it answers again. */
  watch(listener: (event: Availability) => void): () => void;
  close(): Promise<void>;
};

function bind<M extends object>(module: M, sql: Sql): Bound<M> {
  const bound: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(module)) {
    if (typeof value === 'function') bound[name] = (...args: unknown[]) => (value as (sql: Sql, ...a: unknown[]) => unknown)(sql, ...args);
  }
  return bound as Bound<M>;
}

/**
 * The Store over a query layer: the same shape outside a transaction and inside one. An instance's lease runs on
 * `urgent`, ahead of requests waiting for a connection, so a burst of them cannot make a live instance look gone.
 */
function over(sql: Sql, urgent: Sql = sql): Store {
  const store: Omit<Store, 'urgent'> & { urgent?: Store } = {
    engine: sql.dialect,
    accounts: bind(Accounts, sql),
    books: bind(Books, sql),
    channels: bind(Channels, sql),
    charges: bind(Charges, sql),
    chunks: bind(Chunks, sql),
    collections: bind(Collections, sql),
    credentials: bind(Credentials, sql),
    instances: bind(Instances, urgent),
    items: bind(Items, sql),
    jobs: bind(JobLeases, urgent),
    queryDays: bind(QueryDays, sql),
    ledger: bind(Ledger, sql),
    meta: bind(Meta, sql),
    payments: bind(Payments, sql),
    profiles: bind(Profiles, sql),
    rateLimits: bind(RateLimits, sql),
    search: bind(SearchDocs, sql),
    snapshots: bind(Snapshots, sql),
    secrets: bind(Secrets, sql),
    termModel: bind(TermModelRows, sql),
    vectors: bind(VectorIndex, sql),
    transaction: (work) => sql.transaction((tx) => work(over(tx))),
  };
  store.urgent = urgent === sql ? (store as Store) : over(urgent);
  return store as Store;
}

/** A query layer that reports each statement it runs. */
function reporting(sql: Sql, listener: (statement: { text: string; rows: number }) => void): Sql {
  const told = <T>(text: string, result: T, rows: number): T => {
    listener({ text, rows });
    return result;
  };
  return {
    dialect: sql.dialect,
    inTransaction: sql.inTransaction,
    memo: sql.memo,
    all: async (text, params) => {
      const rows = await sql.all(text, params);
      return told(text, rows as never, rows.length);
    },
    get: async (text, params) => {
      const row = await sql.get(text, params);
      return told(text, row as never, row === undefined ? 0 : 1);
    },
    blob: async (text, params) => {
      const value = await sql.blob(text, params);
      return told(text, value, value === undefined ? 0 : 1);
    },
    run: async (text, params) => {
      const changed = await sql.run(text, params);
      return told(text, changed, changed);
    },
    script: (text) => sql.script(text),
    transaction: (work) => sql.transaction((tx) => work(reporting(tx, listener))),
  };
}

function owning(engine: Engine): OpenStore {
  return {
    ...over(engine, engine.urgent),
    describe: () => engine.describe(),
    ping: () => engine.ping(),
    observed: (listener) => over(reporting(engine, listener)),
    watch: (listener) => engine.watch(listener),
    close: () => engine.close(),
  };
}

/**
 * Opens the store at `target`, creating and migrating it as needed. `created` is true when this call made the data
 * (a new SQLite file, or a PostgreSQL database that held none of this program's tables). A store a copy is still
 * writing into is refused (`Copy.Unfinished`) before anything is written to it.
 */
export async function open(target: Target, options: { /** The most connections a PostgreSQL pool keeps (default 10). */ connections?: number | undefined } = {}): Promise<{ store: OpenStore; created: boolean }> {
  const { engine, created } = await Engines.open(target, { before: Copy.refuseUnfinished, connections: options.connections });
  return { store: owning(engine), created };
}

/**
 * A second handle on a store this process already opened (and migrated), on a connection of its own: for a thread whose
 * few statements must never wait behind the process's requests (an instance's lease). Nothing is created or migrated.
 */
export async function attach(target: Target): Promise<OpenStore> {
  const { engine } = await Engines.connect(target, { connections: 1 });
  return owning(engine);
}

/** A new, empty PostgreSQL database beside the one `url` names, dropped by `drop`: a store for one job. */
export function temporaryDatabase(url: string): Promise<{ url: string; drop(): Promise<void> }> {
  return Engines.postgres().then((Postgres) => Postgres.temporaryDatabase(url));
}

const overConnections = new WeakMap<Database, OpenStore>();

/**
 * The Store over a SQLite connection already open and migrated, for tests that open SQLite's connection themselves
 * (a handle passed in, none handed out); one per connection, so what is kept per store (codes in memory) is kept once.
 */
export function overSqlite(db: Database): OpenStore {
  let store = overConnections.get(db);
  if (!store) overConnections.set(db, (store = owning(Sqlite.wrap(db))));
  return store;
}
