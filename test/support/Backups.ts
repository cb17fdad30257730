import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

/**
 * What a backup file says in bytes, to look for what it must not hold: a SQLite file as it is, a dump as the SQL
 * `pg_restore` reads out of it (a custom-format dump is compressed).
 */
export function readable(file: string): Buffer {
  const bytes = fs.readFileSync(file);
  if (bytes.subarray(0, 5).toString('latin1') !== 'PGDMP') return bytes;
  const script = spawnSync('pg_restore', ['--file=-', file], { maxBuffer: 1 << 28 });
  if (script.status !== 0) throw new Error(`pg_restore could not read ${file}: ${script.stderr.toString()}`);
  return script.stdout;
}
