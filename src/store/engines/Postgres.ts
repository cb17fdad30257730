import crypto from 'node:crypto';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { bindable, Conflict, Unavailable, type Availability, type Engine, type Param, type Sql } from '../Sql.js';
import * as Turns from './Turns.js';

/**
 * The shared engine: a node-postgres pool. A statement takes any free connection; a transaction takes one for its
 * whole length (BEGIN ... COMMIT on that client, as node-postgres documents), savepoints inside it.
 */

/** PostgreSQL's BIGINT and NUMERIC come back as strings by default; every value the store keeps fits a double. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 || oid === 1700) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

/**
 * How long a statement may go unanswered before it fails as Unavailable and its connection is dropped: a server that
 * stopped answering without closing its connections (frozen, or a network that drops packets) must not hold a request
 * and a pool slot until TCP gives up. Migrations, which may rewrite large tables, are not bounded.
 */
const statementTimeoutMs = 30_000;
/** A health check wants an answer soon or none. */
const pingTimeoutMs = 3_000;
/**
 * How long a request waits for a connection while all are taken (a burst larger than the pool): as long as a
 * statement may run, so a burst is absorbed as latency before it is refused as busy.
 */
const turnWaitMs = statementTimeoutMs;

/**
 * How long a transaction may sit idle between its statements before the server ends its session: none of this
 * program's writing transactions waits on anything but the database, so one idle this long belongs to a process that
 * stopped (frozen, or SIGSTOPped) while it held row and advisory locks. Ended, its locks go and what it wrote rolls
 * back, so the others (and the instance that claims it once its lease runs out) are not held behind it. Read-only pools
 * are exempt: a backup keeps its snapshot's transaction open, idle, for as long as pg_dump runs. Set with each BEGIN
 * (SET LOCAL, in the same round trip), not as a connection option: that would replace PGOPTIONS and an `options` in
 * DATABASE_URL, and PgBouncer refuses startup options it was not told to ignore.
 */
export const idleInTransactionMs = 15_000;

/** The migration lock's key: any constant shared by every process of this program. */
const migrationLock = 0x70726f66; // "prof"

/**
 * Opens a pool on `url` and checks that the server answers; an unreachable server rejects with `Unavailable`.
 * `readOnly` makes every transaction on it read-only, so nothing can be written through it.
 */
export async function open(url: string, options: { max?: number; readOnly?: boolean; idleInTransactionMs?: number } = {}): Promise<Engine> {
  const size = options.max ?? 10;
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    // Reaching the server only: waiting for a free connection happens in `Turns`, which never lets the pool queue.
    connectionTimeoutMillis: 5_000,
    types,
    ...(options.readOnly && { options: '-c default_transaction_read_only=on' }),
  });
  // A client whose server went away, idle or checked out, must not crash the process: the statement it was running
  // (or the next one) reports it as Unavailable, and the pool makes new connections once the server is back.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const begin = options.readOnly ? 'BEGIN' : `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${Math.round(options.idleInTransactionMs ?? idleInTransactionMs)}`;
  const engine = wrap(pool, url, Turns.create({ size, waitMs: turnWaitMs }), begin);
  try {
    await engine.ping();
  } catch (error) {
    await pool.end().catch(() => undefined);
    // One line naming the database (never its password) and the cause.
    const cause = error instanceof Unavailable ? error.detail : error instanceof Error ? error.message : String(error);
    throw new Unavailable(`cannot reach ${describe(url)}: ${cause || (error as { code?: string }).code || 'no answer'}`, { cause: error });
  }
  return engine;
}

function wrap(pool: pg.Pool, url: string, turns: Turns.Turns, begin: string): Engine {
  const memo = new Map<string, unknown>();
  // Reachability, as statements find it: the first that finds the database gone tells, and the first answered after.
  const listeners = new Set<(event: Availability) => void>();
  let lostAt: number | undefined;
  const tell = (event: Availability) => listeners.forEach((listener) => listener(event));
  const failed = (error: unknown): unknown => {
    const translated = translatedError(error);
    if (translated instanceof Unavailable && lostAt === undefined) {
      lostAt = Date.now();
      tell({ state: 'lost', detail: `${describe(url)}: ${translated.detail}` });
    }
    return translated;
  };
  const answered = () => {
    if (lostAt === undefined) return;
    const downMs = Date.now() - lostAt;
    lostAt = undefined;
    tell({ state: 'back', downMs });
  };
  // `timeoutMs` undefined: statements unbounded and unprepared (a migration's), so it is never left to a default.
  const on = (client: pg.Pool | pg.PoolClient, depth: number, timeoutMs: number | undefined, lane: Turns.Lane = 'normal'): Sql => {
    const pooled = client instanceof pg.Pool;
    const query = async <T>(text: string, params: readonly Param[] | undefined, prepared = true): Promise<pg.QueryResult & { rows: T[] }> => {
      const translated = dialect(text);
      // Named, so each connection parses and plans a statement once (about 0.7 ms a question); never a script (one
      // statement per name) nor a migration's (tables change under it).
      const name = prepared && timeoutMs !== undefined ? statementName(translated) : undefined;
      // A statement on the pool takes a turn for its connection; one inside a transaction has its connection already.
      // A health check waits for a connection no longer than for its answer.
      const done = pooled ? await turns.take(lane, timeoutMs === pingTimeoutMs ? pingTimeoutMs : undefined) : undefined;
      try {
        const result = (await client.query({ text: translated, values: (params ?? []).map(textual), ...(name && { name }), ...(timeoutMs && { query_timeout: timeoutMs }) })) as pg.QueryResult & { rows: T[] };
        answered();
        return result;
      } catch (error) {
        throw failed(error);
      } finally {
        done?.();
      }
    };
    return {
      dialect: 'postgres',
      inTransaction: depth > 0,
      memo,
      all: async <T>(text: string, params?: readonly Param[]) => (await query<T>(text, params)).rows,
      get: async <T>(text: string, params?: readonly Param[]) => (await query<T>(text, params)).rows[0],
      blob: async (text, params) => {
        const statement = `COPY (${withLiterals(text, params ?? [])}) TO STDOUT (FORMAT binary)`;
        const done = pooled ? await turns.take(lane) : undefined;
        let connection: pg.PoolClient | undefined;
        let failure: Error | undefined;
        try {
          connection = pooled ? await connect(client) : client;
          const stream = connection.query(copyTo(statement));
          // COPY takes no statement timeout of its own: a server that stops answering is given up on as any other.
          const timer = setTimeout(() => stream.destroy(new Unavailable(`a COPY had no answer in ${timeoutMs ?? statementTimeoutMs} ms`)), timeoutMs ?? statementTimeoutMs);
          const chunks: Buffer[] = [];
          try {
            for await (const chunk of stream) chunks.push(chunk as Buffer);
          } finally {
            clearTimeout(timer);
          }
          answered();
          return copiedValue(Buffer.concat(chunks));
        } catch (error) {
          failure = error instanceof Error ? error : new Error(String(error));
          throw failed(error);
        } finally {
          // A connection whose COPY failed part-way is closed, not given to the next statement.
          if (pooled) connection?.release(failure);
          done?.();
        }
      },
      run: async (text, params) => (await query(text, params)).rowCount ?? 0,
      script: async (text) => {
        await query(text, undefined, false);
      },
      transaction: async <T>(work: (tx: Sql) => Promise<T>): Promise<T> => {
        if (depth > 0) {
          const name = `s${depth}`;
          await client.query(`SAVEPOINT ${name}`);
          try {
            const result = await work(on(client, depth + 1, timeoutMs));
            await client.query(`RELEASE SAVEPOINT ${name}`);
            return result;
          } catch (error) {
            await client.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => undefined);
            throw failed(error);
          }
        }
        // A pooled statement runner takes a turn and a connection for the transaction; a held one (migrations) runs it
        // in place.
        const done = pooled ? await turns.take(lane) : undefined;
        let connection: pg.PoolClient;
        try {
          connection = pooled ? await connect(client as pg.Pool) : (client as pg.PoolClient);
        } catch (error) {
          done?.();
          throw failed(error);
        }
        let broken: unknown;
        try {
          // Migrations (no statement timeout) may compute between statements for as long as they need.
          await connection.query({ text: timeoutMs === undefined ? 'BEGIN' : begin, ...(timeoutMs && { query_timeout: timeoutMs }) });
          const result = await work(on(connection, 1, timeoutMs));
          await connection.query({ text: 'COMMIT', ...(timeoutMs && { query_timeout: timeoutMs }) });
          answered();
          return result;
        } catch (error) {
          await connection.query({ text: 'ROLLBACK', ...(timeoutMs && { query_timeout: timeoutMs }) }).catch((lost: unknown) => (broken = lost));
          throw failed(error);
        } finally {
          // A connection whose rollback failed is not handed to the next caller.
          if (pooled) connection.release(broken instanceof Error ? broken : undefined);
          done?.();
        }
      },
    };
  };
  const sql = on(pool, 0, statementTimeoutMs);
  return {
    ...sql,
    urgent: on(pool, 0, statementTimeoutMs, 'urgent'),
    describe: () => describe(url),
    async migrating(work) {
      const done = await turns.take('normal');
      const connection = await connect(pool).catch((error: unknown) => {
        done();
        throw error;
      });
      try {
        await connection.query('SELECT pg_advisory_lock($1)', [migrationLock]);
        try {
          return await work(on(connection, 0, undefined));
        } finally {
          await connection.query('SELECT pg_advisory_unlock($1)', [migrationLock]).catch(() => undefined);
        }
      } finally {
        connection.release();
        done();
      }
    },
    async ping() {
      await on(pool, 0, pingTimeoutMs, 'urgent').get('SELECT 1');
    },
    watch(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => pool.end(),
  };
}

async function connect(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (error) {
    throw translatedError(error);
  }
}

/**
 * A new, empty database on the server `url` points at, for a store that lives only as long as one job (an
 * evaluation); `drop` removes it, closing whatever still holds it.
 */
export async function temporaryDatabase(url: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `profile_edge_tmp_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query(statement);
    } catch (error) {
      throw translatedError(error);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const made = new URL(url);
  made.pathname = `/${name}`;
  return { url: made.href, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * A value as PostgreSQL takes it. Its text cannot hold U+0000, which SQLite stores: a NUL in a question, a handle or
 * a file is kept as U+FFFD (a lookup by such a name finds nothing, as on SQLite) rather than failing the request.
 */
function textual(value: Param): unknown {
  const bound = bindable(value);
  return typeof bound === 'string' && bound.includes('\u0000') ? bound.replaceAll('\u0000', '\uFFFD') : bound;
}

/**
 * A statement with its `?` placeholders replaced by its parameters as literals (strings quoted by node-postgres's
 * escaping, whole numbers in parentheses, so a minus sign never meets another): for COPY, which takes no parameters.
 * Its text holds no quoted text of its own, where a `?` would not be a placeholder.
 */
function withLiterals(text: string, params: readonly (string | number)[]): string {
  if (/['"]/.test(text)) throw new Error('a COPY statement with quoted text of its own: put the values in as parameters');
  let next = 0;
  const written = text.replace(/\?/g, () => {
    const value = params[next++];
    if (typeof value === 'string') return pg.escapeLiteral(textual(value) as string);
    if (typeof value === 'number' && Number.isSafeInteger(value)) return `(${value})`;
    throw new Error(`a COPY parameter is a string or a whole number, not ${String(value)}`);
  });
  if (next !== params.length) throw new Error(`the statement has ${next} placeholders for ${params.length} parameters`);
  return written;
}

/** What opens every binary COPY: PGCOPY, newline, 0xFF, carriage return, newline, NUL. */
const copySignature = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * The one value of the one row a binary COPY sent (PostgreSQL's documented format: the signature, flags, a header
 * extension, then per row a field count and each field's length and bytes, and -1 to end), or undefined for no row.
 */
function copiedValue(data: Buffer): Buffer | undefined {
  if (data.length < 21 || !data.subarray(0, 11).equals(copySignature)) throw new Error('not a binary COPY');
  const at = 15 + 4 + data.readUInt32BE(15);
  const fields = data.readInt16BE(at);
  if (fields === -1) return undefined;
  if (fields !== 1) throw new Error(`a binary COPY of ${fields} columns where one was asked`);
  const length = data.readInt32BE(at + 2);
  return length < 0 ? undefined : data.subarray(at + 6, at + 6 + length);
}

/** The host and database of a URL, without its credentials. */
export function describe(url: string): string {
  try {
    const parsed = new URL(url);
    return `PostgreSQL at ${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
  } catch {
    return 'PostgreSQL (unparseable URL)';
  }
}

const names = new Map<string, string>();

/** A prepared statement's name: one per text, the same in every process (a digest of the text). */
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `pe_${crypto.createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    if (names.size > 5_000) names.clear();
    names.set(text, name);
  }
  return name;
}

const texts = new Map<string, string>();

/**
 * The store's SQL as PostgreSQL reads it: `?` placeholders numbered, and camelCase aliases quoted (PostgreSQL folds
 * unquoted names to lower case). String literals and quoted names are left alone.
 */
export function dialect(text: string): string {
  let translated = texts.get(text);
  if (translated !== undefined) return translated;
  let out = '';
  let n = 0;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      out += c;
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
      out += c;
    } else if (c === '?') out += `$${++n}`;
    else out += c;
  }
  translated = out.replace(/\b(AS)\s+([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)\b/g, '$1 "$2"');
  if (texts.size > 5_000) texts.clear();
  texts.set(text, translated);
  return translated;
}

/** Connection failures codes: the server is gone, refusing, shutting down, or the network between is. */
const lostCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', '57P01', '57P02', '57P03', '53300', '25P03']);

function translatedError(error: unknown): unknown {
  if (error instanceof Conflict || error instanceof Unavailable) return error;
  const code = (error as { code?: unknown }).code;
  const message = (error as Error)?.message ?? String(error);
  if (code === '23505') return new Conflict(message, { cause: error });
  if (
    (typeof code === 'string' && (lostCodes.has(code) || code.startsWith('08'))) ||
    // A database refusing connections (ALLOW_CONNECTIONS false, SQLSTATE 55000, a code other failures share) is away.
    (code === '55000' && /not currently accepting connections/i.test(message)) ||
    /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Cannot use a pool after calling end/i.test(message)
  ) {
    return new Unavailable(`${message}${code && typeof code === 'string' && !message.includes(code) ? ` (${code})` : ''}`, { cause: error });
  }
  return error;
}
