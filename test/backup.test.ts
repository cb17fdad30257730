import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Sqlite from '../src/store/engines/Sqlite.js';
import * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import type { EngineName } from './support/Engines.js';
import { readable } from './support/Backups.js';
import * as Environment from './support/Environment.js';
import * as Peek from './support/Peek.js';
import { cli } from './support/Transports.js';

/**
 * Runs the CLI as its own process (as an operator would, beside the server), with the store's environment; `umask`
 * starts it under that file mode mask.
 */
function run(env: Record<string, string>, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return runUnder(undefined, env, ...argv);
}

function runUnder(umask: string | undefined, env: Record<string, string>, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const [command, args] = umask === undefined ? [cli.command, [...cli.args, ...argv]] : ['/bin/sh', ['-c', `umask ${umask} && exec "$0" "$@"`, cli.command, ...cli.args, ...argv]];
    const child = spawn(command, args, { env: { ...process.env, ...env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Every account's balances are the sum of its ledger entries, and none is below zero: the accounts that are not. */
const drift = (peek: Peek.Peek) =>
  peek.all(
    `SELECT a.name FROM accounts a LEFT JOIN (SELECT account_id, sum(credits_delta) AS credits, sum(unlocks_delta) AS unlocks FROM ledger GROUP BY account_id) l ON l.account_id = a.id
     WHERE a.credit_balance <> coalesce(l.credits, 0) OR a.unlock_balance <> coalesce(l.unlocks, 0) OR a.credit_balance < 0 OR a.unlock_balance < 0`,
  );

describe(`backup and restore (${Engines.current})`, () => {
  let environment: Environment.Environment;
  let http: Awaited<ReturnType<typeof Environment.serve>>;
  let directory: string;

  beforeAll(async () => {
    environment = await Environment.create();
    http = await Environment.serve(environment);
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-backup-'));
  });
  afterAll(async () => {
    await http?.close();
    await environment?.close();
    fs.rmSync(directory, { recursive: true, force: true });
  });

  test('behavior: a backup taken during 200 concurrent paid queries restores to a store whose ledger balances (and passes the integrity check)', async () => {
    const { keys } = environment;
    const payers = [keys.callerKey, keys.partnerKey, keys.owenKey, keys.sunnivaKey];
    const questions = ['How warm should a sourdough starter be?', 'What makes a good OKR retrospective?', 'How long should dough rest?'];
    const ask = (i: number) =>
      fetch(`${http.url}/api/ask/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'service-api-key': payers[i % payers.length]! },
        body: JSON.stringify({ question: questions[i % questions.length], paymentMode: i % 2 === 0 ? 'credits' : 'unlocks', mode: i % 3 === 0 ? 'raw' : 'synthesized' }),
      }).then((res) => res.status);
    const file = path.join(directory, 'during-load.backup');
    // 200 callers ask at once, and each asks again until the backup is done. The backup starts, in a process of its
    // own, once answers are coming back (on a busy machine the first 200 can take longer than a whole backup): it is
    // taken under load from start to end, and answers are counted while it runs.
    let backingUp = true;
    let answeredDuring: number | undefined;
    const statuses: number[] = [];
    const callers = Array.from({ length: 200 }, async (_, i) => {
      do {
        statuses.push(await ask(i));
        if (answeredDuring !== undefined) answeredDuring += 1;
      } while (backingUp);
    });
    while (statuses.length < 20) await new Promise((resolve) => setTimeout(resolve, 20));
    answeredDuring = 0;
    const backedUp = await run(environment.env, 'backup', '--to', file, '--json');
    const whileBackingUp = answeredDuring;
    backingUp = false;
    await Promise.all(callers);
    expect(whileBackingUp).toBeGreaterThan(0);
    expect(statuses.length).toBeGreaterThan(200);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(backedUp.code, backedUp.stderr).toBe(0);
    const result = JSON.parse(backedUp.stdout);
    expect(result).toMatchObject({ format: Engines.current === 'sqlite' ? 'sqlite' : 'pg_dump', rows: { accounts: expect.any(Number), ledger: expect.any(Number) } });
    expect(result.rows.ledger).toBeGreaterThan(0);
    // Taken while queries were charged: the store went on after it.
    await environment.services.pending.idle();
    expect(Number(await environment.peek.value('SELECT count(*) FROM ledger'))).toBeGreaterThan(result.rows.ledger);
    if (Engines.current === 'sqlite') {
      // One self-contained file, whole.
      expect(fs.existsSync(`${file}-wal`)).toBe(false);
      const copy = Sqlite.open(file, { readOnly: true }).engine;
      expect(copy.integrity()).toEqual(['ok']);
      await copy.close();
    }

    const place = await Engines.fresh(Engines.current, 'restored');
    try {
      const restored = await run(place.env, 'restore', '--from', file, '--json');
      expect(restored.code, restored.stderr).toBe(0);
      expect(JSON.parse(restored.stdout).rows).toEqual(result.rows);
      // Its books add up, so nothing was said about them.
      expect(JSON.parse(restored.stdout).problems).toEqual([]);
      expect(restored.stderr).not.toContain('warning');
      const peek = await Peek.open(place.env);
      try {
        expect(await drift(peek)).toEqual([]);
        if (peek.engine === 'sqlite') expect(await peek.column('PRAGMA integrity_check')).toEqual(['ok']);
        // The restored store is one whole moment: a query's answer or reversal never stands without its charge.
        expect(await peek.all("SELECT r.query_id FROM ledger r WHERE r.kind IN ('query_answered', 'query_reversal') AND NOT EXISTS (SELECT 1 FROM ledger c WHERE c.query_id = r.query_id AND c.kind = 'query_charge')")).toEqual([]);
        expect(Number(await peek.value('SELECT count(*) FROM ledger'))).toBe(result.rows.ledger);
      } finally {
        await peek.close();
      }
      // The live store balances too, once every answer's payment landed.
      await environment.services.pending.idle();
      expect(await drift(environment.peek)).toEqual([]);
    } finally {
      await place.drop();
    }
  }, 120_000);

  test('error: a restore into a store that holds anything is refused with exit 1 and a message, and changes nothing', async () => {
    const file = path.join(directory, 'for-refusal.backup');
    expect((await run(environment.env, 'backup', '--to', file)).code).toBe(0);
    const before = await environment.peek.snapshot();
    const refused = await run(environment.env, 'restore', '--from', file);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error: .*(already holds data|is not empty).*(restore into an empty store|restore into a new, empty database)/);
    expect(await environment.peek.snapshot()).toEqual(before);
    const json = await run(environment.env, 'restore', '--from', file, '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: 'refused', message: expect.any(String) });
  }, 60_000);

  test('error: a backup never overwrites a file, and a file that is no backup is refused', async () => {
    const existing = path.join(directory, 'existing.backup');
    fs.writeFileSync(existing, 'keep me');
    const again = await run(environment.env, 'backup', '--to', existing);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('exists already: back up to a new file');
    expect(fs.readFileSync(existing, 'utf8')).toBe('keep me');
    const place = await Engines.fresh(Engines.current, 'not-a-backup');
    try {
      const refused = await run(place.env, 'restore', '--from', existing);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('is neither a SQLite backup nor a pg_dump custom-format dump');
      // A backup cut short is refused as damaged, plainly (no stack trace), and leaves no store behind.
      const whole = path.join(directory, 'whole.backup');
      expect((await run(environment.env, 'backup', '--to', whole)).code).toBe(0);
      const cut = path.join(directory, 'cut.backup');
      fs.writeFileSync(cut, fs.readFileSync(whole).subarray(0, 100_000));
      const damaged = await run(place.env, 'restore', '--from', cut);
      expect(damaged.code).toBe(1);
      expect(damaged.stderr).toMatch(/^error: .*(is damaged|is neither|pg_restore exited with)/m);
      expect(damaged.stderr).not.toMatch(/\n\s+at /);
      // Restored once, the store holds data: the same restore again is refused, not resumed.
      expect((await run(place.env, 'restore', '--from', whole)).code).toBe(0);
      const again = await run(place.env, 'restore', '--from', whole);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/already holds data|is not empty/);
      const missing = await run(place.env, 'restore', '--from', path.join(directory, 'nothing-here'));
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('there is no backup at');
    } finally {
      await place.drop();
    }
  }, 60_000);

  test.skipIf(Engines.current !== 'postgres')('error: on PostgreSQL without pg_dump installed, backup says how to take one by hand', async () => {
    const file = path.join(directory, 'no-pg-dump.backup');
    // A PATH with nothing on it: no client tools.
    const refused = await run({ ...environment.env, PATH: fs.mkdtempSync(path.join(directory, 'empty-path-')) }, 'backup', '--to', file);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('pg_dump is not installed here');
    expect(refused.stderr).toContain(`(umask 077 && pg_dump -Fc --no-owner --exclude-table-data=secrets --exclude-table-data=search_snapshot --exclude-table-data=search_snapshot_parts --exclude-table-data=vector_snapshot --exclude-table-data=vector_snapshot_parts -f ${file} "$DATABASE_URL")`);
    expect(fs.existsSync(file)).toBe(false);
  });

  test('behavior: a backup is readable by its owner only, whatever the umask, and holds none of the secrets the service made for itself; a store restored from it makes new ones', async () => {
    const linkSecret = await environment.services.store.meta.claim('citation_link_secret', crypto.randomBytes(32).toString('hex'));
    const paymentSecret = await environment.services.store.meta.claim('payment_secret', crypto.randomBytes(32).toString('hex'));
    const file = path.join(directory, 'owner-only.backup');
    const backedUp = await runUnder('000', environment.env, 'backup', '--to', file);
    expect(backedUp.code, backedUp.stderr).toBe(0);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // Nothing was left on the way (the partial file, SQLite's journals).
    expect(fs.readdirSync(directory).filter((name) => name.includes('owner-only'))).toEqual(['owner-only.backup']);
    for (const secret of [linkSecret, paymentSecret]) expect(readable(file).includes(secret)).toBe(false);
    // The store backed up keeps them.
    expect(await environment.services.store.meta.get('citation_link_secret')).toBe(linkSecret);

    const place = await Engines.fresh(Engines.current, 'without-secrets');
    try {
      const restored = await run(place.env, 'restore', '--from', file);
      expect(restored.code, restored.stderr).toBe(0);
      const { store } = await Stores.open(place.target);
      try {
        expect(await store.meta.get('citation_link_secret')).toBeUndefined();
        expect(await store.meta.get('payment_secret')).toBeUndefined();
        const made = await store.meta.claim('citation_link_secret', crypto.randomBytes(32).toString('hex'));
        expect(made).not.toBe(linkSecret);
      } finally {
        await store.close();
      }
    } finally {
      await place.drop();
    }
  }, 60_000);

  test('behavior: a backup taken before secrets were left out still holds them, and a restore of it leaves them behind', async () => {
    const linkSecret = await environment.services.store.meta.claim('citation_link_secret', crypto.randomBytes(32).toString('hex'));
    const file = path.join(directory, 'old-style.backup');
    if (Engines.current === 'sqlite') {
      const { engine } = Sqlite.open(environment.env.DATABASE_PATH!, { readOnly: true });
      try {
        await engine.backup(file);
      } finally {
        await engine.close();
      }
    } else {
      const dumped = spawnSync('pg_dump', ['--format=custom', '--no-owner', `--file=${file}`, `--dbname=${environment.env.DATABASE_URL}`]);
      expect(dumped.status, dumped.stderr.toString()).toBe(0);
    }
    expect(readable(file).includes(linkSecret)).toBe(true);
    const place = await Engines.fresh(Engines.current, 'old-style');
    try {
      const restored = await run(place.env, 'restore', '--from', file);
      expect(restored.code, restored.stderr).toBe(0);
      const peek = await Peek.open(place.env);
      try {
        expect(await peek.all('SELECT name FROM secrets')).toEqual([]);
      } finally {
        await peek.close();
      }
    } finally {
      await place.drop();
    }
  }, 60_000);

  // A forged store's backup restored into each engine it can go to: a dump into PostgreSQL, a SQLite file into both.
  const routes: [EngineName, EngineName][] = Engines.current === 'sqlite' ? [['sqlite', 'sqlite']] : [['postgres', 'postgres'], ['sqlite', 'postgres']];
  test.each(routes)('error: a forged %s backup whose books do not add up is refused into %s (exit 1, figures, the store left empty); --accept-discrepancies restores it with warnings', async (from, into) => {
    const source = await Engines.fresh(from, 'forged');
    const place = await Engines.fresh(into, 'forged-into');
    try {
      const file = await forgedBackup(source, path.join(directory, `forged-${from}-into-${into}.backup`));
      const refused = await run(place.env, 'restore', '--from', file);
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toMatch(new RegExp(`^error: the books in ${file} do not add up \\(24 problems\\): nothing (was written to|was restored, and)`, 'm'));
      expect(refused.stderr).toContain('\n  account forger: credit balance 999,999,999, but its ledger rows sum to 9,990\n');
      expect(refused.stderr).toContain('\n  account ghost-00: unlock balance 1, but its ledger rows sum to 0\n');
      expect(refused.stderr).toContain('\n  … and 4 more\n');
      expect(refused.stderr).toContain('--accept-discrepancies');
      expect(refused.stderr).not.toMatch(/\n\s+at /);
      expect(await tablesIn(place)).toEqual([]);

      const json = await run(place.env, 'restore', '--from', file, '--json');
      expect(json.code).toBe(1);
      const body = JSON.parse(json.stdout);
      expect(body).toMatchObject({ error: 'discrepancies', count: 24 });
      expect(body.problems).toContainEqual({
        rule: 'payment',
        subject: 'payment pay_released',
        message: 'payment pay_released is answered, but its query q_released has 0 onchain_payment/onchain_credit_spent ledger rows (an answered payment has 1)',
      });
      expect(await tablesIn(place)).toEqual([]);

      const accepted = await run(place.env, 'restore', '--from', file, '--accept-discrepancies');
      expect(accepted.code, accepted.stderr).toBe(0);
      expect(accepted.stderr).toContain('warning: THE RESTORED BOOKS DO NOT ADD UP: 24 problems, restored anyway (--accept-discrepancies):\n');
      expect(accepted.stderr).toContain('warning:   account forger: credit balance 999,999,999, but its ledger rows sum to 9,990\n');
      const peek = await Peek.open(place.env);
      try {
        expect(Number(await peek.value("SELECT credit_balance FROM accounts WHERE name = 'forger'"))).toBe(999_999_999);
      } finally {
        await peek.close();
      }
    } finally {
      await source.drop();
      await place.drop();
    }
  }, 90_000);
});

/** What a place holds: nothing in a SQLite file that does not exist; no table and no function in an empty database. */
async function tablesIn(place: Awaited<ReturnType<typeof Engines.fresh>>): Promise<string[]> {
  if ('path' in place.target && !fs.existsSync(place.target.path)) return [];
  const peek = await Peek.open(place.env);
  try {
    return await peek.column<string>(
      peek.engine === 'sqlite'
        ? "SELECT name FROM sqlite_master WHERE type = 'table'"
        : `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
           UNION ALL SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace`,
    );
  } finally {
    await peek.close();
  }
}

/**
 * A store whose books were forged as the issue found them, backed up: a balance of 999,999,999 whose ledger sums to
 * 9,990, a released payment set to answered, and 22 accounts given a balance no ledger row gave (24 problems).
 */
async function forgedBackup(place: Awaited<ReturnType<typeof Engines.fresh>>, file: string): Promise<string> {
  const { store } = await Stores.open(place.target);
  try {
    const forger = await store.accounts.create({ name: 'forger' });
    await store.ledger.move({ accountId: forger.id, kind: 'grant', creditsDelta: 9_000 });
    await store.ledger.move({ accountId: forger.id, kind: 'grant', creditsDelta: 990 });
    for (let i = 0; i < 22; i++) await store.accounts.create({ name: `ghost-${String(i).padStart(2, '0')}` });
  } finally {
    await store.close();
  }
  const peek = await Peek.open(place.env);
  try {
    await peek.run("UPDATE accounts SET credit_balance = 999999999 WHERE name = 'forger'");
    await peek.run("UPDATE accounts SET unlock_balance = 1 WHERE name LIKE 'ghost-%'");
    // Written as the forger left it: released, then set to answered (the database refuses that move, a forger edits rows).
    await peek.run(
      `INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, note, created_at, updated_at)
       VALUES ('pay_released', 'spend-released', 'tempo', '0xabc', 'q_released', 'digest', 5000, 'answered', 'released: answer failed', 1, 1)`,
    );
  } finally {
    await peek.close();
  }
  const backedUp = await run(place.env, 'backup', '--to', file);
  expect(backedUp.code, backedUp.stderr).toBe(0);
  return file;
}
