import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as Books from './Books.js';
import * as Copy from './Copy.js';
import * as Engines from './Engine.js';
import type { Target } from './Engine.js';
import * as Sqlite from './engines/Sqlite.js';
import type { Sql } from './Sql.js';

/**
 * Backups of a whole store, taken while it serves, and restores into an empty one. SQLite: the online backup API
 * copies the file as of one moment. PostgreSQL: `pg_dump` in its custom format. A SQLite backup restores into either
 * engine (through the store copy, which checks every table); a dump restores into PostgreSQL with `pg_restore`.
 * A backup is the owner's alone (mode 0600) and holds none of the secrets the service made for itself; a restore
 * makes sure the books add up before it says it is done.
 */

/** A backup or restore that cannot go ahead as asked; nothing was written. */
export class Refused extends Error {
  override name = 'Refused';
}

/** A backup or restore that went wrong part-way, said plainly: what it left and what to do. */
export class Failed extends Error {
  override name = 'Failed';
}

/**
 * A restore whose books do not add up (balances against the ledger, payments against their ledger rows and credits):
 * refused, with the target left as it was, unless the caller accepts them.
 */
export class Discrepant extends Error {
  override name = 'Discrepant';
  constructor(
    message: string,
    readonly problems: Books.Problem[],
  ) {
    super(message);
  }
}

/** The table of the secrets the service made for itself: its rows stay out of every backup. */
const secretsTable = 'secrets';
/** The search index's and vector codes' snapshots: derived from rows, hundreds of megabytes at a million chunks, made again by the restored store's instances. */
const derivedTables = ['search_snapshot', 'search_snapshot_parts', 'vector_snapshot', 'vector_snapshot_parts'];
const leftOutData = [secretsTable, ...derivedTables].map((table) => `--exclude-table-data=${table}`);

/** What a backup holds, counted in it: what an operator checks before relying on it. */
export const counted = ['accounts', 'credentials', 'profiles', 'channels', 'items', 'chunks', 'ledger', 'payments', 'wallet_credits'] as const;

export type BackupResult = {
  file: string;
  format: 'sqlite' | 'pg_dump';
  bytes: number;
  seconds: number;
  /** Rows per table in the backup (SQLite; a dump is counted on the database as it was dumped). */
  rows: Record<string, number>;
};

/** The kind of backup a file is, by its first bytes; undefined for anything else. */
export function formatOf(file: string): 'sqlite' | 'pg_dump' | undefined {
  const head = Buffer.alloc(16);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, head, 0, 16, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (head.toString('latin1') === 'SQLite format 3\0') return 'sqlite';
  if (head.subarray(0, 5).toString('latin1') === 'PGDMP') return 'pg_dump';
  return undefined;
}

async function rowsIn(target: Target): Promise<Record<string, number>> {
  const { engine } = await Engines.connect(target, { readOnly: true });
  try {
    return await counts(engine);
  } finally {
    await engine.close();
  }
}

async function counts(sql: Sql): Promise<Record<string, number>> {
  const rows: Record<string, number> = {};
  for (const table of counted) rows[table] = Number((await sql.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${table}`))?.n ?? 0);
  return rows;
}

/** The written file is put in place only once whole: a failed backup leaves nothing at `file`. */
function partialOf(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.partial`);
}

/**
 * Makes `file`, empty, readable and writable by its owner alone whatever the umask: what is then written into it
 * keeps that mode (pg_dump truncates it; SQLite gives its journals the mode of their database).
 */
function ownerOnly(file: string): void {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
  } finally {
    fs.closeSync(fd);
  }
}

/** Makes a consistent copy of the store at `target` in `file`, which must not exist yet, while the store serves. */
export async function backup(target: Target, file: string): Promise<BackupResult> {
  const started = performance.now();
  const to = path.resolve(file);
  if (fs.existsSync(to)) throw new Refused(`${file} exists already: back up to a new file (a backup never overwrites one)`);
  if (!fs.existsSync(path.dirname(to))) throw new Refused(`the directory of ${file} does not exist`);
  const partial = partialOf(to);
  fs.rmSync(partial, { force: true });
  try {
    ownerOnly(partial);
    if ('url' in target) {
      // The rows are counted in the snapshot pg_dump dumps: the transaction exports it and stays open until the dump ends.
      const { engine } = await Engines.connect(target, { readOnly: true });
      let rows: Record<string, number>;
      try {
        rows = await engine.transaction(async (tx) => {
          await tx.run('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
          const snapshot = (await tx.get<{ id: string }>('SELECT pg_export_snapshot() AS id'))!.id;
          const counted = await counts(tx);
          await run(
            'pg_dump',
            ['--format=custom', '--no-owner', ...leftOutData, `--snapshot=${snapshot}`, `--file=${partial}`],
            target.url,
            `(umask 077 && pg_dump -Fc --no-owner ${leftOutData.join(' ')} -f ${file} "$DATABASE_URL")`,
          );
          return counted;
        });
      } finally {
        await engine.close();
      }
      fs.renameSync(partial, to);
      return { file: to, format: 'pg_dump', bytes: fs.statSync(to).size, seconds: (performance.now() - started) / 1000, rows };
    }
    if (target.path === ':memory:') throw new Refused('an in-memory store has nothing to back up');
    if (!fs.existsSync(target.path)) throw new Refused(`there is no store at ${target.path}`);
    const { engine } = Sqlite.open(target.path, { readOnly: true });
    let integrity: string[];
    try {
      integrity = await engine.backup(partial, { emptied: [secretsTable, ...derivedTables] });
    } finally {
      await engine.close();
    }
    // The copy is checked before it is called a backup.
    const problems = integrity.filter((line) => line !== 'ok');
    if (problems.length > 0) throw new Failed(`the backup failed its integrity check (${problems.slice(0, 3).join('; ')}), so it was not kept: the store itself may be damaged; run PRAGMA integrity_check on it`);
    const rows = await rowsIn({ path: partial });
    fs.renameSync(partial, to);
    return { file: to, format: 'sqlite', bytes: fs.statSync(to).size, seconds: (performance.now() - started) / 1000, rows };
  } finally {
    fs.rmSync(partial, { force: true });
  }
}

export type RestoreResult = {
  from: string;
  to: string;
  format: 'sqlite' | 'pg_dump';
  seconds: number;
  rows: Record<string, number>;
  resumed: boolean;
  /** What does not add up in the restored books: none, unless the caller accepted them. */
  problems: Books.Problem[];
};

export type RestoreOptions = {
  onProgress?: (progress: Copy.Progress) => void;
  /** Restore even when the books do not add up (the problems are returned); otherwise such a restore is refused. */
  acceptDiscrepancies?: boolean;
};

/** The refusal of books that do not add up, saying what was left, or nothing when they do or the caller accepts them. */
function refusal(problems: Books.Problem[], options: RestoreOptions, input: { file: string; left: string }): Discrepant | undefined {
  if (problems.length === 0 || options.acceptDiscrepancies) return undefined;
  return new Discrepant(`the books in ${input.file} do not add up (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${input.left}`, problems);
}

/**
 * Restores the backup in `file` into the store at `target`, which must be empty (a new SQLite file, or a database with
 * no tables, or one only migrated): a store holding anything is refused. A SQLite backup is checked (integrity) and
 * copied table by table, counted and checksummed on both sides; a restore stopped part-way resumes when run again.
 * The books must add up (`Books.check`): a SQLite backup's are checked before anything is copied, a dump's once
 * restored, and a dump whose books do not is removed again; either way the target is left as it was, unless the
 * caller accepts them. The restored store holds none of the secrets the service makes for itself: it makes new ones.
 */
export async function restore(file: string, target: Target, options: RestoreOptions = {}): Promise<RestoreResult> {
  const started = performance.now();
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw new Refused(`there is no backup at ${file}`);
  const format = formatOf(file);
  if (format === undefined) throw new Refused(`${file} is neither a SQLite backup nor a pg_dump custom-format dump`);
  if (format === 'pg_dump') {
    if (!('url' in target)) throw new Refused(`${file} is a PostgreSQL dump: restore it into PostgreSQL (set DATABASE_URL to an empty database), then \`profile-edge store copy\` it to SQLite if you want it there`);
    let before: Set<string>;
    const { engine } = await Engines.connect(target);
    try {
      const tables = await engine.all<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()');
      if (tables.length > 0) throw new Refused(`${engine.describe()} is not empty (${tables.length} tables): restore into a new, empty database`);
      before = new Set((await schemaObjects(engine)).map((o) => `${o.kind} ${o.name}`));
    } finally {
      await engine.close();
    }
    await run('pg_restore', ['--no-owner', '--exit-on-error', '--single-transaction', file], target.url, `pg_restore --no-owner --single-transaction -d "$DATABASE_URL" ${file}`);
    // A dump from an earlier version is brought up to this one.
    const opened = await Engines.open(target);
    let problems: Books.Problem[];
    try {
      // A dump from before secrets had a table of their own holds them among the named values: the migration moved them.
      await opened.engine.run(`DELETE FROM ${secretsTable}`);
      problems = await Books.check(opened.engine);
      const refused = refusal(problems, options, { file, left: `nothing was restored, and ${describe(target)} holds no tables again` });
      if (refused) {
        await dropRestored(opened.engine, before);
        throw refused;
      }
    } finally {
      await opened.engine.close();
    }
    return { from: path.resolve(file), to: describe(target), format, seconds: (performance.now() - started) / 1000, rows: await rowsIn(target), resumed: false, problems };
  }
  let damage: string[];
  try {
    const copy = Sqlite.open(file, { readOnly: true }).engine;
    try {
      damage = copy.integrity().filter((line) => line !== 'ok');
    } finally {
      await copy.close();
    }
  } catch (error) {
    // A truncated or overwritten file fails as it is opened.
    damage = [error instanceof Error ? error.message : String(error)];
  }
  if (damage.length > 0) throw new Refused(`${file} is damaged (${damage.slice(0, 3).join('; ')}): restore from another backup`);
  // A store a restore (or copy) finished into holds data now, like any other: only an unfinished one is taken up again.
  if (await Copy.finishedInto(target)) throw new Refused(`${describe(target)} already holds data (a finished restore or copy); restore into an empty store`);
  let result: Copy.Result;
  let problems: Books.Problem[] = [];
  try {
    result = await Copy.copy({
      from: { path: path.resolve(file) },
      to: target,
      onProgress: options.onProgress,
      // The backup's own books, before anything is written: the copy then makes the target equal to it, table by table.
      vet: async (source) => {
        problems = await Books.check(source);
        const refused = refusal(problems, options, { file, left: `nothing was written to ${describe(target)}` });
        if (refused) throw refused;
      },
      secrets: false,
    });
  } catch (error) {
    if (error instanceof Copy.Refused) throw new Refused(error.message.replace('copy into an empty database', 'restore into an empty store'));
    if (error instanceof Copy.Stopped) throw new Failed(error.message);
    throw error;
  }
  if (!result.same) {
    throw new Failed(`the restored store differs from the backup in ${result.tables.filter((t) => !t.same).map((t) => t.table).join(', ')}: it was written while it was restored; restore again into a new, empty store`);
  }
  return { from: path.resolve(file), to: result.to, format, seconds: (performance.now() - started) / 1000, rows: await rowsIn(target), resumed: result.resumed, problems };
}

/** What the current PostgreSQL schema holds, each as the kind and name a DROP takes: to tell what a pg_restore made. */
async function schemaObjects(sql: Sql): Promise<{ kind: string; name: string }[]> {
  return sql.all<{ kind: string; name: string }>(
    `SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END AS kind, quote_ident(c.relname) AS name
     FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'S', 'v', 'm')
     UNION ALL
     SELECT 'FUNCTION' AS kind, CAST(p.oid::regprocedure AS TEXT) AS name FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace`,
  );
}

/** Drops, in one transaction, what the schema holds beyond `before`: the tables a refused pg_restore made, and their functions. */
async function dropRestored(sql: Sql, before: Set<string>): Promise<void> {
  const made = (await schemaObjects(sql)).filter((o) => !before.has(`${o.kind} ${o.name}`));
  await sql.transaction(async (tx) => {
    for (const kind of ['MATERIALIZED VIEW', 'VIEW', 'TABLE', 'SEQUENCE', 'FUNCTION']) {
      const names = made.filter((o) => o.kind === kind).map((o) => o.name);
      if (names.length > 0) await tx.run(`DROP ${kind} IF EXISTS ${names.join(', ')} CASCADE`);
    }
  });
}

function describe(target: Target): string {
  if ('path' in target) return `SQLite at ${target.path}`;
  const url = new URL(target.url);
  return `PostgreSQL at ${url.host}${url.pathname}`;
}

/**
 * Runs a PostgreSQL client tool against `url`, its password (if any) passed in the environment rather than on the
 * command line (where `ps` shows it). Refused, with the command to run by hand, when the tool is not installed.
 */
function run(tool: string, args: string[], url: string, byHand: string): Promise<void> {
  const parsed = new URL(url);
  const password = decodeURIComponent(parsed.password);
  parsed.password = '';
  const env = { ...process.env, ...(password !== '' && { PGPASSWORD: password }) };
  return new Promise((resolve, reject) => {
    const child = spawn(tool, [...args, `--dbname=${parsed.href}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') reject(new Refused(`${tool} is not installed here: install the PostgreSQL client tools (Debian: apt-get install postgresql-client), or run by hand: ${byHand}`));
      else reject(error);
    });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Failed(`${tool} exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' ')}`))));
  });
}
