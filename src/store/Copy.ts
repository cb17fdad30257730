import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ServiceError } from '../errors/ServiceError.js';
import * as Engines from './Engine.js';
import type { Engine, Target } from './Engine.js';
import * as Meta from './Meta.js';
import { migrations } from './Migrations.js';
import { Conflict, type Param, type Sql } from './Sql.js';

/**
 * Moving a store from one database to another, either engine to either: every table the service keeps, row for row
 * with its ids, in batches cut by primary key. Each batch lands in one transaction on the target together with the
 * copy's mark (how far it got), so a copy killed at any moment resumes after the last batch that landed and never
 * writes a row twice. It ends by counting and checksumming every table on both sides.
 */

/** A table the copy moves, and the primary key its batches are cut by. */
type Table = { name: string; key: readonly string[] };

/** What is copied, in an order where every row's references (foreign keys) are copied before it. */
export const tables: readonly Table[] = [
  { name: 'accounts', key: ['id'] },
  { name: 'credentials', key: ['id'] },
  { name: 'profiles', key: ['id'] },
  { name: 'handles', key: ['handle'] },
  { name: 'profile_members', key: ['profile_id', 'account_id'] },
  { name: 'profile_grants', key: ['profile_id', 'account_id'] },
  { name: 'channels', key: ['id'] },
  { name: 'channel_listings', key: ['channel_id', 'origin'] },
  { name: 'collections', key: ['id'] },
  { name: 'collection_channels', key: ['collection_id', 'channel_id'] },
  { name: 'items', key: ['id'] },
  { name: 'chunks', key: ['rowid'] },
  { name: 'ledger', key: ['id'] },
  { name: 'payments', key: ['id'] },
  { name: 'wallet_credits', key: ['id'] },
  { name: 'credential_bindings', key: ['spend_key'] },
  { name: 'search_terms', key: ['id'] },
  { name: 'search_docs', key: ['rowid'] },
  { name: 'term_model_terms', key: ['term'] },
  { name: 'chunk_embeddings', key: ['rowid'] },
  { name: 'query_days', key: ['day', 'profile_id', 'outcome', 'pay'] },
];

/** Named values (markers, versions): replaced as a whole at the end, since migrations write some of them. */
const meta: Table = { name: 'meta', key: ['key'] };

/**
 * The secrets the service made for itself: replaced as a whole at the end too, since a process that opened the target
 * may have made its own. A move carries them (links and challenges the source gave stay good); a restore does not.
 */
const secrets: Table = { name: 'secrets', key: ['name'] };

/** Tables a store has that are not copied, and why. A table in neither list stops the copy before it starts. */
export const leftOut: readonly { table: RegExp; why: string }[] = [
  { table: /^schema_migrations$/, why: 'each store records the migrations it applied itself' },
  { table: /^instances$/, why: "the source's serving processes and their leases: the target's register themselves when they start" },
  { table: /^job_leases$/, why: 'rebuilds running at this moment on the source: none runs in a store being copied' },
  { table: /^credential_claims$/, why: 'credentials being redeemed at this moment by a running process: none is, in a store being copied' },
  { table: /^rate_buckets$/, why: 'requests counted in the last minute: a copied store starts every caller afresh' },
  { table: /^(search_log|vector_log)$/, why: 'write logs for processes that hold an index in memory; a new store has none behind it' },
  { table: /^(search|vector)_snapshot(_parts)?$/, why: "the search index and vector codes as an instance held them: the target's instances build their own from the rows" },
  { table: /^(chunk_fts(_\w+)?|chunk_vocab)$/, why: "SQLite's full-text tables, written by trigger as chunks are" },
];

/** The meta key of a copy's mark on its target: which source, and how far the copy got. */
const markKey = 'store_copy';

type Mark = { from: string; source: string; table: string; after: unknown[] | null; finished?: boolean };

/** Rows a batch reads and writes, unless the caller says otherwise. */
export const defaultBatch = 2_000;

/** Parameters in one INSERT: below SQLite's limit (32,766) and PostgreSQL's (65,535). */
const maxParams = 30_000;

/** A copy that cannot start as asked; nothing was copied. */
export class Refused extends Error {
  override name = 'Refused';
}

/** A copy that stopped part-way for a reason running it again will not mend: its target was written outside it. */
export class Stopped extends Error {
  override name = 'Stopped';
}

/** A store a copy is still writing into, opened as a store: it holds part of the source, and none of its indexes. */
export class Unfinished extends ServiceError {
  override name = 'Unfinished';
  constructor(message: string) {
    super('service_unavailable', message);
  }
}

export type Progress = {
  phase: 'copy' | 'verify';
  /** The table being copied or compared. */
  table: string;
  /** Rows copied (or compared) so far, of all tables, and how many there are in the source. */
  done: number;
  total: number;
};

/** One table on both sides after the copy. */
export type TableCheck = { table: string; rows: { source: number; target: number }; checksum: { source: string; target: string }; same: boolean };

export type Result = {
  /** Both databases, as messages name them (never a password). */
  from: string;
  to: string;
  /** True when this run took up a copy an earlier one left unfinished. */
  resumed: boolean;
  /** Rows this run wrote. */
  copied: number;
  seconds: number;
  tables: TableCheck[];
  /** Every table has the same rows on both sides. */
  same: boolean;
};

export type Options = {
  from: Target;
  to: Target;
  /** Rows a batch reads and writes (default 2,000). */
  batch?: number;
  /** Told after every batch that landed, and as the comparison goes; a throw stops the copy there (it resumes). */
  onProgress?: (progress: Progress) => void;
  /**
   * Whether the source's secrets go with its rows (default true: a move). A restore says false: the target is left
   * with none, and makes new ones on first use.
   */
  secrets?: boolean;
  /**
   * Asked about the source once it is known to be a store of this version, before anything is written to the target:
   * a throw refuses the copy (a restore checks the backup's books here).
   */
  vet?: (source: Sql) => Promise<void>;
};

/**
 * Refuses to open a database a copy has written into but not finished: it holds part of the source, and what a
 * service would write into it (the demo, its indexes) meets the rows still to come. Run before the store is migrated,
 * so a refused store is left as it was.
 */
export async function refuseUnfinished(engine: Engine): Promise<void> {
  if (!(await hasTable(engine, meta.name))) return;
  const raw = await Meta.get(engine, markKey);
  if (raw === undefined) return;
  const mark = JSON.parse(raw) as Mark;
  if (mark.finished) return;
  throw new Unfinished(
    `${engine.describe()} holds a copy of ${mark.source} that has not finished: run the same \`profile-edge store copy\` again to finish it (or drop this database and copy again)`,
  );
}

/** Whether a copy finished into the store at `target` (a new file, or one no copy wrote into, is false). */
export async function finishedInto(target: Target): Promise<boolean> {
  if ('path' in target && !fs.existsSync(target.path)) return false;
  const { engine } = await Engines.connect(target, { readOnly: true });
  try {
    if (!(await hasTable(engine, meta.name))) return false;
    const raw = await Meta.get(engine, markKey);
    return raw !== undefined && (JSON.parse(raw) as Mark).finished === true;
  } finally {
    await engine.close();
  }
}

/**
 * Copies the store at `from` into the one at `to`, then compares them table by table. The source is only read: it
 * must be a store at this version's schema, and is never migrated. The target is opened (and so migrated) as the
 * service opens it. Refused, before anything is written to either, when both name one database, when the source is no
 * store or of another version, or when the target holds another application's tables or data other than an
 * unfinished copy of the same source.
 */
export async function copy(options: Options): Promise<Result> {
  const started = performance.now();
  const batch = options.batch ?? defaultBatch;
  const tell = options.onProgress ?? (() => undefined);
  const carried = options.secrets ?? true;
  for (const target of [options.from, options.to]) if ('path' in target && target.path === ':memory:') throw new Refused('a copy needs a SQLite file or a PostgreSQL URL, not :memory:');
  if ('path' in options.from && !fs.existsSync(options.from.path)) throw new Refused(`there is no store at ${options.from.path}`);
  if (place(options.from) === place(options.to)) throw new Refused('the source and the target are one database');

  const source = await openToRead(options.from);
  let target: Engine | undefined;
  try {
    const from = source.engine;
    await checkSource(from, source.tables);
    const sourceId = await identity(from, options.from);
    await checkTarget(options.to, sourceId);
    await options.vet?.(from);
    target = (await Engines.open(options.to)).engine;
    const to = target;
    const mark = await check(from, to, sourceId);
    const plan = await planned(from, to);

    let copied = 0;
    if (!mark?.finished) {
      const already = await Promise.all(tables.map((t) => count(to, t)));
      let done = already.reduce((a, b) => a + b, 0);
      const total = plan.rows.reduce((a, b) => a + b, 0);
      const resumeAt = mark ? tables.findIndex((t) => t.name === mark.table) : 0;
      for (const [n, table] of tables.entries()) {
        if (n < resumeAt) continue;
        const columns = plan.columns.get(table.name)!;
        let after = n === resumeAt ? (mark?.after ?? null) : null;
        let reading = page(from, { table, columns, after, limit: batch });
        for (;;) {
          const rows = await reading;
          if (rows.length === 0) break;
          after = table.key.map((k) => rows.at(-1)![k]);
          // The next batch is read while this one is written.
          reading = page(from, { table, columns, after, limit: batch });
          reading.catch(() => undefined);
          const next: Mark = { from: sourceId, source: from.describe(), table: table.name, after };
          await to
            .transaction(async (tx) => {
              await insert(tx, table.name, columns, rows);
              await clearLogs(tx);
              await Meta.set(tx, markKey, JSON.stringify(next));
            })
            .catch((error: unknown) => {
              // A batch and the mark land together, so a row already there came from elsewhere.
              if (!(error instanceof Conflict)) throw error;
              throw new Stopped(`${to.describe()} already has a row of ${table.name} this copy was about to write, so it was written outside the copy: drop it and copy again`, { cause: error });
            });
          copied += rows.length;
          done += rows.length;
          tell({ phase: 'copy', table: table.name, done, total });
        }
      }
      await finish(from, to, { mark: { from: sourceId, source: from.describe(), table: meta.name, after: null, finished: true }, secrets: carried });
    }

    const checks = await compare(from, to, { ...plan, secrets: carried }, tell);
    return {
      from: from.describe(),
      to: to.describe(),
      resumed: mark !== undefined,
      copied,
      seconds: (performance.now() - started) / 1000,
      tables: checks,
      same: checks.every((c) => c.same),
    };
  } finally {
    await target?.close().catch(() => undefined);
    await source.engine.close().catch(() => undefined);
  }
}

/** A target as given, for the check before opening: the same file by another relative path is caught later. */
function place(target: Target): string {
  return 'url' in target ? target.url : path.resolve(target.path);
}

/** Which database this is, however it was named: the file itself, or the PostgreSQL cluster and database. */
async function identity(engine: Engine, target: Target): Promise<string> {
  if ('path' in target) return `sqlite:${fs.realpathSync(target.path)}`;
  const row = await engine.get<{ cluster: string; database: string }>(
    `SELECT CAST(system_identifier AS TEXT) AS cluster, (SELECT CAST(oid AS TEXT) FROM pg_database WHERE datname = current_database()) AS database
     FROM pg_control_system()`,
  );
  return `postgres:${row!.cluster}:${row!.database}`;
}

/**
 * A database opened to be read and nothing else, with its tables: a file that is not a SQLite database is refused
 * in one line.
 */
async function openToRead(target: Target): Promise<{ engine: Engine; tables: string[] }> {
  if ('path' in target && !fs.statSync(target.path).isFile()) throw new Refused(`${target.path} is not a SQLite database`);
  let engine: Engine | undefined;
  try {
    engine = (await Engines.connect(target, { readOnly: true })).engine;
    return { engine, tables: await tableNames(engine) };
  } catch (error) {
    await engine?.close().catch(() => undefined);
    const code = (error as { code?: unknown }).code;
    if ('path' in target && code === 'SQLITE_NOTADB') throw new Refused(`${target.path} is not a SQLite database`);
    if ('path' in target && code === 'SQLITE_CORRUPT') throw new Refused(`${target.path} is a damaged SQLite database`);
    throw error;
  }
}

/** The schema versions a store's migrations reached, in order. */
async function versions(sql: Sql): Promise<number[]> {
  return (await sql.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map((r) => r.version);
}

/** This program's schema version: the last migration it has. */
const currentVersion = migrations.at(-1)!.version;

/**
 * Refuses a source that is not a store of this version, reading it only: a copy never migrates its source (it may
 * be another application's database, or a store a service of another version still runs on).
 */
async function checkSource(from: Engine, names: string[]): Promise<void> {
  const ledger = names.includes('schema_migrations') ? await columnNames(from, 'schema_migrations') : [];
  const foundation = ['version', 'name'].every((c) => ledger.includes(c))
    ? await from.get<{ name: string }>('SELECT name FROM schema_migrations WHERE version = ?', [migrations[0]!.version])
    : undefined;
  if (foundation?.name !== migrations[0]!.name || !names.includes(meta.name)) throw new Refused(`${from.describe()} holds no profile-edge store`);
  const reached = await versions(from);
  if (reached.join() !== migrations.map((m) => m.version).join()) {
    // Newer when it has a migration this program lacks; else at the last of an unbroken run from the first.
    const newer = reached.at(-1)! > currentVersion;
    const at = newer ? reached.at(-1)! : (migrations.find((m, i) => reached[i] !== m.version)?.version ?? currentVersion + 1) - 1;
    throw new Refused(
      newer
        ? `${from.describe()} is at schema version ${at}, newer than this profile-edge's ${currentVersion}: copy with the version of profile-edge that migrated it`
        : `${from.describe()} is at schema version ${at}, not this profile-edge's ${currentVersion}: start the service or any command of this version on it once to migrate it, then copy`,
    );
  }
  // A SQLite store from before the vector tables keeps its vectors in sqlite-vec's table; its next use moves them.
  if (names.includes('chunk_vectors')) {
    throw new Refused(
      `${from.describe()} keeps its vectors in the sqlite-vec table of an earlier version: start the service on it once with the embedder that built them, or run \`profile-edge reindex\` on it, then copy`,
    );
  }
}

/**
 * Refuses, before anything is written to it, a target that is the source under another name or that holds tables
 * not profile-edge's (another application's): a new SQLite file, an empty database and a store pass.
 */
async function checkTarget(target: Target, sourceId: string): Promise<void> {
  if ('path' in target && !fs.existsSync(target.path)) return;
  const { engine, tables: names } = await openToRead(target);
  try {
    if ((await identity(engine, target)) === sourceId) throw new Refused(`the source and the target are one database (${engine.describe()})`);
    const foreign = names.filter((name) => !known(name)).sort();
    if (foreign.length > 0) {
      const named = foreign.length > 5 ? `${foreign.slice(0, 5).join(', ')} and ${foreign.length - 5} more` : foreign.join(', ');
      throw new Refused(`${engine.describe()} holds tables that are not profile-edge's (${named}): copy into a new, empty database`);
    }
  } finally {
    await engine.close().catch(() => undefined);
  }
}

/**
 * The refusals once the target is open, before anything is copied; returns the mark of a copy to resume. The target
 * was migrated to this version, so the two differ only when the target is newer.
 */
async function check(from: Engine, to: Engine, sourceId: string): Promise<Mark | undefined> {
  const [sourceVersions, targetVersions] = await Promise.all([versions(from), versions(to)]);
  if (sourceVersions.join() !== targetVersions.join()) {
    throw new Refused(
      `${from.describe()} is at schema version ${sourceVersions.at(-1)} and ${to.describe()} at ${targetVersions.at(-1)}: copy with the version of profile-edge that migrated the target`,
    );
  }
  const raw = await Meta.get(to, markKey);
  if (raw !== undefined) {
    const mark = JSON.parse(raw) as Mark;
    if (mark.from === sourceId) return mark;
    throw new Refused(`${to.describe()} holds a copy of another store (${mark.source}); copy into an empty database`);
  }
  const held = (await Promise.all(tables.map(async (t) => ({ table: t.name, rows: await count(to, t) })))).filter((t) => t.rows > 0);
  if (held.length > 0) {
    const listed = held.map((t) => `${t.rows} ${t.table}`).join(', ');
    throw new Refused(`${to.describe()} already holds data (${listed}); copy into an empty database`);
  }
  return undefined;
}

/** A table of profile-edge's: copied, `meta` and `secrets`, or one it leaves out. */
const known = (name: string) => name === meta.name || name === secrets.name || tables.some((t) => t.name === name) || leftOut.some((l) => l.table.test(name));

/** The columns of every copied table (the source's, all of which the target has), and the source's row counts. */
async function planned(from: Engine, to: Engine): Promise<{ columns: Map<string, string[]>; rows: number[] }> {
  const [sourceTables, targetTables] = await Promise.all([tableNames(from), tableNames(to)]);
  const unknown = sourceTables.filter((name) => !known(name));
  if (unknown.length > 0) throw new Refused(`${from.describe()} has tables this copy does not know (${unknown.join(', ')}): copy with the version of profile-edge that made them`);
  const columns = new Map<string, string[]>();
  for (const table of [...tables, meta, secrets]) {
    const missingTable = [sourceTables, targetTables].find((names) => !names.includes(table.name));
    if (missingTable) throw new Refused(`${missingTable === sourceTables ? from.describe() : to.describe()} has no table ${table.name}`);
    const [sourceColumns, targetColumns] = await Promise.all([columnNames(from, table.name), columnNames(to, table.name)]);
    const missing = sourceColumns.filter((c) => !targetColumns.includes(c));
    if (missing.length > 0) throw new Refused(`${to.describe()} has no column ${missing.map((c) => `${table.name}.${c}`).join(', ')}`);
    columns.set(table.name, sourceColumns);
  }
  return { columns, rows: await Promise.all(tables.map((t) => count(from, t))) };
}

async function tableNames(sql: Sql): Promise<string[]> {
  const text =
    sql.dialect === 'sqlite'
      ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
      : 'SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()';
  return (await sql.all<{ name: string }>(text)).map((r) => r.name);
}

async function hasTable(sql: Sql, name: string): Promise<boolean> {
  const text =
    sql.dialect === 'sqlite'
      ? "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?"
      : 'SELECT 1 AS found FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?';
  return (await sql.get(text, [name])) !== undefined;
}

async function columnNames(sql: Sql, table: string): Promise<string[]> {
  const text =
    sql.dialect === 'sqlite'
      ? 'SELECT name FROM pragma_table_info(?) ORDER BY cid'
      : 'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position';
  return (await sql.all<{ name: string }>(text, [table])).map((r) => r.name);
}

const quoted = (name: string) => `"${name}"`;

/** Rows a table holds; meta without the copy's own mark. */
async function count(sql: Sql, table: Table): Promise<number> {
  return (await sql.get<{ n: number }>(`SELECT count(*) AS n FROM ${quoted(table.name)}${table === meta ? ' WHERE "key" <> ?' : ''}`, table === meta ? [markKey] : []))!.n;
}

/**
 * Up to `limit` rows after the key `after`, in key order as the engine sorts it (its primary key's index): a batch
 * boundary is a key, so rows written or removed elsewhere in the table never shift it.
 */
async function page(sql: Sql, input: { table: Table; columns: string[]; after: unknown[] | null; limit: number }): Promise<Record<string, unknown>[]> {
  const { table, after } = input;
  const key = table.key.map(quoted);
  const conditions: string[] = [];
  const params: Param[] = [];
  if (after) {
    conditions.push(key.length === 1 ? `${key[0]} > ?` : `(${key.join(', ')}) > (${key.map(() => '?').join(', ')})`);
    params.push(...(after as Param[]));
  }
  if (table === meta) {
    conditions.push('"key" <> ?');
    params.push(markKey);
  }
  const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
  return sql.all(`SELECT ${input.columns.map(quoted).join(', ')} FROM ${quoted(table.name)}${where} ORDER BY ${key.join(', ')} LIMIT ?`, [...params, input.limit]);
}

/** Inserts rows as they came, ids included, in as few statements as the engines' parameter limits allow. */
async function insert(sql: Sql, table: string, columns: string[], rows: Record<string, unknown>[]): Promise<void> {
  const perStatement = Math.max(1, Math.floor(maxParams / columns.length));
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let at = 0; at < rows.length; at += perStatement) {
    const part = rows.slice(at, at + perStatement);
    await sql.run(
      `INSERT INTO ${quoted(table)} (${columns.map(quoted).join(', ')}) VALUES ${part.map(() => tuple).join(', ')}`,
      part.flatMap((row) => columns.map((c) => row[c] as Param)),
    );
  }
}

/**
 * The target's write logs, filled by its triggers as rows arrive: no process follows a store being copied into, so
 * all but the last entry go. The last stays as the log's position: an index loaded from the copy starts there and
 * follows the writes after it, where an empty log whose numbering had run on would read as entries missed, and
 * make every index reload in full at the first write (seconds per million chunks). Applying it again is harmless.
 */
async function clearLogs(sql: Sql): Promise<void> {
  await sql.run('DELETE FROM search_log WHERE seq < (SELECT max(seq) FROM search_log)');
  await sql.run('DELETE FROM vector_log WHERE seq < (SELECT max(seq) FROM vector_log)');
}

/**
 * The last step, in one transaction: the source's named values replace the target's (the demo's markers, so it is not
 * loaded again; the versions its rows were written with), and its secrets the target's when they are carried (so
 * links and challenges the source gave stay good; else the target keeps none), PostgreSQL's identity counters move
 * past the copied ids, and the mark says the copy is finished.
 */
async function finish(from: Engine, to: Engine, input: { mark: Mark; secrets: boolean }): Promise<void> {
  const values = await from.all<{ key: string; value: string }>('SELECT "key", "value" FROM meta WHERE "key" <> ?', [markKey]);
  const kept = input.secrets ? await from.all<Record<string, unknown>>('SELECT name, value, created_at FROM secrets') : [];
  const identities =
    to.dialect === 'postgres'
      ? await to.all<{ table: string; column: string }>(
          `SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'`,
        )
      : [];
  await to.transaction(async (tx) => {
    await tx.run('DELETE FROM meta');
    if (values.length > 0) await insert(tx, meta.name, ['key', 'value'], values);
    await tx.run('DELETE FROM secrets');
    if (kept.length > 0) await insert(tx, secrets.name, ['name', 'value', 'created_at'], kept);
    await Meta.set(tx, markKey, JSON.stringify(input.mark));
    await clearLogs(tx);
    for (const { table, column } of identities.filter((i) => tables.some((t) => t.name === i.table))) {
      await tx.get(`SELECT setval(pg_get_serial_sequence(?, ?), coalesce((SELECT max(${quoted(column)}) FROM ${quoted(table)}), 0) + 1, false)`, [table, column]);
    }
  });
}

/** Counts and checksums every copied table on both sides, at once. */
async function compare(from: Engine, to: Engine, plan: { columns: Map<string, string[]>; rows: number[]; secrets: boolean }, tell: (progress: Progress) => void): Promise<TableCheck[]> {
  const checks: TableCheck[] = [];
  const total = plan.rows.reduce((a, b) => a + b, 0);
  let done = 0;
  for (const table of [...tables, meta, ...(plan.secrets ? [secrets] : [])]) {
    const columns = plan.columns.get(table.name)!;
    const [source, target] = await Promise.all([
      checksum(from, table, columns, (rows) => tell({ phase: 'verify', table: table.name, done: Math.min((done += rows), total), total })),
      checksum(to, table, columns),
    ]);
    checks.push({ table: table.name, rows: { source: source.rows, target: target.rows }, checksum: { source: source.sum, target: target.sum }, same: source.rows === target.rows && source.sum === target.sum });
  }
  return checks;
}

const modulus = 1n << 256n;

/**
 * A table's row count and checksum: the sum, modulo 2^256, of each row's SHA-256 over its values in column-name
 * order. A sum does not depend on the order rows are read in, so each engine reads in its own key order (their text
 * orders differ), and the same rows give the same sum on both.
 */
export async function checksum(sql: Sql, table: Table, columns: string[], onPage?: (rows: number) => void): Promise<{ rows: number; sum: string }> {
  const ordered = [...columns].sort();
  let sum = 0n;
  let rows = 0;
  let after: unknown[] | null = null;
  for (;;) {
    const got = await page(sql, { table, columns, after, limit: defaultBatch * 5 });
    if (got.length === 0) break;
    for (const row of got) {
      const hash = crypto.createHash('sha256');
      for (const column of ordered) hash.update(encoded(row[column]));
      sum = (sum + BigInt(`0x${hash.digest('hex')}`)) % modulus;
    }
    rows += got.length;
    after = table.key.map((k) => got.at(-1)![k]);
    onPage?.(got.length);
  }
  return { rows, sum: sum.toString(16).padStart(64, '0') };
}

/**
 * A value as the checksum reads it, the same from either engine: a tag for its kind, then numbers as IEEE doubles
 * (an integer and a double of equal value are one number, as both engines hand them to JavaScript), text as UTF-8 and
 * blobs as their bytes, each with its length. Text has NUL read as U+FFFD: PostgreSQL's text holds no NUL, and its
 * engine keeps one as U+FFFD, so text a SQLite source holds with NUL is the same on both sides.
 */
function encoded(value: unknown): Buffer {
  if (value === null || value === undefined) return Buffer.from([0]);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    const out = Buffer.alloc(9);
    out[0] = 1;
    out.writeDoubleBE(Number(value), 1);
    return out;
  }
  const bytes = typeof value === 'string' ? Buffer.from(value.replaceAll('\u0000', '\uFFFD'), 'utf8') : value instanceof Uint8Array ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : undefined;
  if (!bytes) throw new Error(`a value of type ${typeof value} cannot be checksummed`);
  const head = Buffer.alloc(5);
  head[0] = typeof value === 'string' ? 2 : 3;
  head.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([head, bytes]);
}
