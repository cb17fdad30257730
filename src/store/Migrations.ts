import type { Database } from 'better-sqlite3';
import type { Dialect, Engine } from './Sql.js';
import { foundation } from './migrations/001_foundation.js';
import { pages } from './migrations/002_pages.js';
import { listings } from './migrations/003_listings.js';
import { answerMarkers } from './migrations/004_answer_markers.js';
import { onchainPayments } from './migrations/005_onchain_payments.js';
import { cueOffsets } from './migrations/006_cue_offsets.js';
import { searchIndex } from './migrations/007_search_index.js';
import { paymentBindings } from './migrations/008_payment_bindings.js';
import { termModel } from './migrations/009_term_model.js';
import { vectors } from './migrations/010_vectors.js';
import { rateBuckets } from './migrations/011_rate_buckets.js';
import { instances } from './migrations/012_instances.js';
import { credentialClaims } from './migrations/013_credential_claims.js';
import { jobLeases } from './migrations/014_job_leases.js';
import { queryDays } from './migrations/015_query_days.js';
import { secrets } from './migrations/016_secrets.js';
import { paymentStates } from './migrations/017_payment_states.js';
import { searchSnapshots } from './migrations/018_search_snapshots.js';
import { vectorSnapshots } from './migrations/019_vector_snapshots.js';
import * as Postgres from './migrations/postgres/Schema.js';

export type Migration = { version: number; name: string } & Record<Dialect, string>;

/** Numbered schema migrations, one text per engine; a later issue appends, never edits an applied one. */
export const migrations: readonly Migration[] = [
  { version: 1, name: 'foundation', sqlite: foundation, postgres: Postgres.foundation },
  { version: 2, name: 'pages', sqlite: pages, postgres: Postgres.pages },
  { version: 3, name: 'listings', sqlite: listings, postgres: Postgres.listings },
  { version: 4, name: 'answer_markers', sqlite: answerMarkers, postgres: Postgres.answerMarkers },
  { version: 5, name: 'onchain_payments', sqlite: onchainPayments, postgres: Postgres.onchainPayments },
  { version: 6, name: 'cue_offsets', sqlite: cueOffsets, postgres: Postgres.cueOffsets },
  { version: 7, name: 'search_index', sqlite: searchIndex, postgres: Postgres.searchIndex },
  { version: 8, name: 'payment_bindings', sqlite: paymentBindings, postgres: Postgres.paymentBindings },
  { version: 9, name: 'term_model', sqlite: termModel, postgres: Postgres.termModel },
  { version: 10, name: 'vectors', sqlite: vectors, postgres: Postgres.vectors },
  { version: 11, name: 'rate_buckets', sqlite: rateBuckets, postgres: Postgres.rateBuckets },
  { version: 12, name: 'instances', sqlite: instances, postgres: Postgres.instances },
  { version: 13, name: 'credential_claims', sqlite: credentialClaims, postgres: Postgres.credentialClaims },
  { version: 14, name: 'job_leases', sqlite: jobLeases, postgres: Postgres.jobLeases },
  { version: 15, name: 'query_days', sqlite: queryDays, postgres: Postgres.queryDays },
  { version: 16, name: 'secrets', sqlite: secrets, postgres: Postgres.secrets },
  { version: 17, name: 'payment_states', sqlite: paymentStates, postgres: Postgres.paymentStates },
  { version: 18, name: 'search_snapshots', sqlite: searchSnapshots, postgres: Postgres.searchSnapshots },
  { version: 19, name: 'vector_snapshots', sqlite: vectorSnapshots, postgres: Postgres.vectorSnapshots },
];

const ledgerTable: Record<Dialect, string> = {
  sqlite: 'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT',
  postgres: 'CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
};

/**
 * Applies every migration newer than the database, each in its own transaction, under the engine's migration lock:
 * several processes starting together apply each once. Returns the versions this call applied.
 */
export async function migrate(engine: Engine): Promise<number[]> {
  return engine.migrating(async (sql) => {
    await sql.script(ledgerTable[sql.dialect]);
    const done: number[] = [];
    for (const m of migrations) {
      const applied = await sql.transaction(async (tx) => {
        // Read inside the transaction: a process that migrated while this one waited is seen.
        if (await tx.get('SELECT 1 AS applied FROM schema_migrations WHERE version = ?', [m.version])) return false;
        await tx.script(m[tx.dialect]);
        await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [m.version, m.name, Date.now()]);
        return true;
      });
      if (applied) done.push(m.version);
    }
    return done;
  });
}

/** The same, synchronously, on a bare SQLite connection: for tests and benchmarks about SQLite itself, which open one. */
export function migrateSqlite(db: Database): number[] {
  db.exec(ledgerTable.sqlite);
  const done: number[] = [];
  for (const m of migrations) {
    const applied = db.transaction(() => {
      if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version)) return false;
      db.exec(m.sqlite);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
      return true;
    }).immediate();
    if (applied) done.push(m.version);
  }
  return done;
}
