import { lazy } from '../errors/Lazy.js';
import * as Sqlite from './engines/Sqlite.js';
import { migrate } from './Migrations.js';
import type { Engine } from './Sql.js';

export type { Availability, Engine } from './Sql.js';

/** PostgreSQL's engine (and node-postgres), loaded by the first PostgreSQL target: SQLite, the default, never needs it. */
export const postgres = lazy('The PostgreSQL engine (pg)', () => import('./engines/Postgres.js'));

/** Where the data lives: a SQLite file (or `:memory:`), or a PostgreSQL URL. */
export type Target = { path: string } | { url: string };

/**
 * Opens the database at `target`, creating and migrating it as needed: the one way in for the Store and for a copy
 * between stores. `created` is true when this call made the data (a new SQLite file, or a PostgreSQL database that
 * held none of this program's tables). `before` runs on the database before it is migrated (before anything is
 * written to it): a throw there closes it and is the caller's.
 */
export async function open(target: Target, options: { before?: (engine: Engine) => Promise<void>; connections?: number | undefined } = {}): Promise<{ engine: Engine; created: boolean }> {
  const { engine, created } = await connect(target, { connections: options.connections });
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
 * not be one, without changing it. `connections` caps a PostgreSQL pool (SQLite is one connection).
 */
export async function connect(target: Target, options: { readOnly?: boolean; connections?: number } = {}): Promise<{ engine: Engine; created: boolean }> {
  if ('url' in target) return { engine: await (await postgres()).open(target.url, { readOnly: options.readOnly, max: options.connections }), created: false };
  return Sqlite.open(target.path, { readOnly: options.readOnly });
}
