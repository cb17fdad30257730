import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

/** Every TypeScript file under a folder, as paths relative to the project. */
function sources(folder: string): string[] {
  return fs.readdirSync(folder, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => path.join(folder, f));
}

const outside = [...sources('src'), ...sources('tools')].filter((f) => !f.startsWith(`src${path.sep}store${path.sep}`));
const inside = sources(path.join('src', 'store'));

/** The modules a file imports (static and dynamic), as written. */
const importsOf = (file: string): string[] => [...fs.readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!);

/** String literals that are SQL statements: a keyword that starts one, then what it acts on. */
const sqlPattern = /['`]\s*(SELECT\s[\s\S]*?\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(TABLE|INDEX|TRIGGER)\s)/;

/** Where a file names better-sqlite3's connection type: imports a `Database`, or gives something that type. */
const connectionType = /\bimport\s+(type\s+)?\{[^}]*\bDatabase\b[^}]*\}|[:<|]\s*Database\b/;

describe('the storage boundary', () => {
  test('behavior: no code outside src/store imports a database client', () => {
    const clients = ['better-sqlite3', 'sqlite-vec', 'pg'];
    const offenders = outside.flatMap((file) => importsOf(file).filter((m) => clients.includes(m)).map((m) => `${file} imports ${m}`));
    expect(offenders).toEqual([]);
  });

  test('behavior: no SQL is written outside src/store', () => {
    const offenders = outside.filter((file) => sqlPattern.test(fs.readFileSync(file, 'utf8')));
    expect(offenders).toEqual([]);
  });

  test('behavior: no code outside src/store opens an engine or holds a database handle', () => {
    const offenders = outside.filter((file) => importsOf(file).some((m) => /store\/(Database|Engine)\.js$/.test(m) || m.includes('store/engines/')));
    expect(offenders).toEqual([]);
  });

  test('behavior: no code outside src/store names the SQLite connection', () => {
    const offenders = outside.filter((file) => connectionType.test(fs.readFileSync(file, 'utf8')));
    expect(offenders).toEqual([]);
  });

  test('behavior: src/store imports nothing from retrieval, auth or payments', () => {
    const offenders = inside.flatMap((file) => importsOf(file).filter((m) => /\/(retrieval|auth|payments)\//.test(m)).map((m) => `${file} imports ${m}`));
    expect(offenders).toEqual([]);
  });

  test('behavior: the check sees SQL and imports where they are', () => {
    // A check that finds nothing anywhere could not fail: it finds what src/store holds.
    expect(inside.some((file) => sqlPattern.test(fs.readFileSync(file, 'utf8')))).toBe(true);
    expect(inside.some((file) => importsOf(file).includes('pg'))).toBe(true);
    expect(inside.some((file) => importsOf(file).some((m) => m.includes('engines/')))).toBe(true);
    expect(inside.some((file) => connectionType.test(fs.readFileSync(file, 'utf8')))).toBe(true);
  });
});
