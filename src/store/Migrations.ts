import type { Database } from 'better-sqlite3';
import { foundation } from './migrations/001_foundation.js';
import { pages } from './migrations/002_pages.js';
import { listings } from './migrations/003_listings.js';
import { answerMarkers } from './migrations/004_answer_markers.js';
import { onchainPayments } from './migrations/005_onchain_payments.js';
import { cueOffsets } from './migrations/006_cue_offsets.js';
import { searchIndex } from './migrations/007_search_index.js';
import { paymentBindings } from './migrations/008_payment_bindings.js';

/** Numbered schema migrations; a later issue appends, never edits an applied one. */
export const migrations: readonly { version: number; name: string; sql: string }[] = [
  { version: 1, name: 'foundation', sql: foundation },
  { version: 2, name: 'pages', sql: pages },
  { version: 3, name: 'listings', sql: listings },
  { version: 4, name: 'answer_markers', sql: answerMarkers },
  { version: 5, name: 'onchain_payments', sql: onchainPayments },
  { version: 6, name: 'cue_offsets', sql: cueOffsets },
  { version: 7, name: 'search_index', sql: searchIndex },
  { version: 8, name: 'payment_bindings', sql: paymentBindings },
];

/** Applies every migration newer than the database, each in its own transaction. Returns the versions applied. */
export function migrate(db: Database): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const applied = new Set(
    db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[],
  );
  const done: number[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    })();
    done.push(m.version);
  }
  return done;
}
