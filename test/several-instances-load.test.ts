import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import type { Param } from '../src/store/Sql.js';
import { credentialFor } from './support/Chains.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';
import * as Served from './support/Served.js';

/**
 * Three `profile-edge serve` processes on one PostgreSQL, behind a load balancer in miniature that sends each request
 * to the next instance and, when a connection fails (refused, or reset before an answer), sends it again to the
 * following one, as a real one would. Paid queries of every kind arrive at once or steadily while instances are killed
 * or restarted; then the books are audited: the ledger, every balance, every payment and the chains agree.
 */

const children: ChildProcess[] = [];
let sandbox: Sandbox.Sandbox;
let database: Awaited<ReturnType<typeof Engines.fresh>>;
let peek: Peek.Peek;
/** The instances the balancer sends to: a killed or restarted one is replaced here by its successor. */
const pool: Served.Served[] = [];
const question = 'How warm should a sourdough starter be?';
const price = 50_000n; // the demo's answer price on either rail, in USDC base units (0.05 USD)

// A lease of 10 s: long enough that a burst's hold on each process's event loop never outlasts it, short enough that a
// killed instance's charges are settled soon after.
const env = () => ({ ENVIRONMENT: 'test', ...database.env, SYNC_SCHEDULE: 'false', LOG_LEVEL: 'warn', INSTANCE_LEASE_SECONDS: '10', ...sandbox.environment });
/** Every instance started, killed and restarted ones included, for what they logged. */
const all: Served.Served[] = [];
const serve = async () => {
  const served = await Served.serve(env(), children);
  all.push(served);
  return served;
};
const cli = (...argv: string[]) => Cli.run({ ...database.env, ENVIRONMENT: 'test', LOG_LEVEL: 'silent' }, ...argv);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds, asking every 200 ms for up to `ms`. */
async function within(ms: number, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms`);
    await sleep(200);
  }
}

/** Why a connection failed (ECONNREFUSED, ECONNRESET, …), for each request the balancer sent again. */
const resent: string[] = [];
let turn = 0;

/** Sends a request to the next instance; on a failed connection, to the one after it, until one answers. */
async function send(route: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const target = pool[turn++ % pool.length]!;
    try {
      return await fetch(`${target.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? String(error);
      resent.push(cause);
      if (attempt === 50) throw error;
      await sleep(100);
    }
  }
}

type Outcome = { who: string; status: number; body: Record<string, unknown> };

/** A paid query with an API key. */
async function withKey(who: string, key: string): Promise<Outcome> {
  const response = await send('/api/ask/query', { question, mode: 'raw', paymentMode: 'credits' }, { 'service-api-key': key });
  return { who, status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * A paid query on a rail, paid by its real client: challenged, paid, sent. A credential refused because the instance
 * that took it first is gone (its claim still stands) is replaced by a new one for a new challenge, as a wallet would.
 */
async function onChain(rail: 'tempo' | 'x402_base', key: `0x${string}`): Promise<Outcome> {
  const body = { question, rail };
  let challenge = await send('/api/ask/query', body);
  for (let attempt = 1; ; attempt++) {
    expect(challenge.status).toBe(402);
    const credential = await credentialFor(sandbox, rail, challenge, key);
    const paid = await send('/api/ask/query', body, credential);
    if (paid.status !== 402 || attempt === 3) return { who: rail, status: paid.status, body: (await paid.json()) as Record<string, unknown> };
    challenge = paid;
  }
}

const count = async (sql: string, ...params: Param[]) => Number(await peek.value(sql, ...params));

/** Charges that are neither answered nor given back. */
const openCharges = () =>
  count(`SELECT count(*) FROM ledger c WHERE c.kind = 'query_charge'
    AND NOT EXISTS (SELECT 1 FROM ledger m WHERE m.query_id = c.query_id AND m.kind IN ('query_answered', 'query_reversal'))`);
/** On-chain payments still part-way (verified, or money possibly moving). */
const openPayments = () => count("SELECT count(*) FROM payments WHERE state IN ('verified', 'settling', 'settled')");

/** What every audit checks: the books agree with themselves, whatever happened to the processes. */
async function audit(): Promise<void> {
  // Every account's balances are the sum of its ledger entries, and none is below zero.
  const drift = await peek.all<{ name: string }>(
    `SELECT a.name FROM accounts a LEFT JOIN (SELECT account_id, sum(credits_delta) AS credits, sum(unlocks_delta) AS unlocks FROM ledger GROUP BY account_id) l ON l.account_id = a.id
     WHERE a.credit_balance <> coalesce(l.credits, 0) OR a.unlock_balance <> coalesce(l.unlocks, 0) OR a.credit_balance < 0 OR a.unlock_balance < 0`,
  );
  expect(drift).toEqual([]);
  // A query is charged at most once, and its charge is answered or given back, never both; each channel earns once.
  const twice = await peek.all(
    `SELECT query_id, kind, count(*) AS n FROM ledger WHERE query_id IS NOT NULL AND kind IN ('query_charge', 'query_answered', 'query_reversal', 'creator_earning')
     GROUP BY query_id, kind, channel_id HAVING count(*) > 1`,
  );
  expect(twice).toEqual([]);
  expect(await count("SELECT count(*) FROM ledger a JOIN ledger r ON r.query_id = a.query_id AND r.kind = 'query_reversal' WHERE a.kind = 'query_answered'")).toBe(0);
  expect(await openCharges()).toBe(0);
  // Every on-chain payment ended answered, credited or released, and no transfer pays for two.
  expect(await openPayments()).toBe(0);
  expect(await count("SELECT count(*) FROM payments WHERE state = 'credited' AND id NOT IN (SELECT payment_id FROM wallet_credits)")).toBe(0);
  expect(await count("SELECT count(*) - count(DISTINCT lower(tx_hash)) FROM payments WHERE tx_hash LIKE '0x%'")).toBe(0);
}

/**
 * How many of an account's answers are charged and stand. Every answer it received was charged: one whose charge does
 * not stand is an answer a killed instance sent in the moment before it recorded the capture, given back when its
 * lease ran out (never charged for nothing, at worst an answer free).
 */
async function charged(account: string, answers: Outcome[]): Promise<number> {
  const accountId = await peek.value<string>('SELECT id FROM accounts WHERE name = ?', account);
  const standing = new Set(
    await peek.column<string>(
      "SELECT c.query_id FROM ledger c WHERE c.account_id = ? AND c.kind = 'query_charge' AND EXISTS (SELECT 1 FROM ledger a WHERE a.query_id = c.query_id AND a.kind = 'query_answered')",
      accountId,
    ),
  );
  const free = answers.filter((o) => o.status === 200 && !standing.has(o.body.queryId as string));
  for (const answer of free) {
    expect(await peek.value("SELECT memo FROM ledger WHERE query_id = ? AND kind = 'query_reversal'", answer.body.queryId as string)).toMatch(/its lease ran out/);
  }
  expect(answers.filter((o) => o.status === 200).length - free.length).toBe(standing.size);
  return standing.size;
}

/** Money that reached the service on a rail: one price per answered or credited payment that moved a transfer. */
const moved = (rail: string) => count("SELECT count(*) FROM payments WHERE rail = ? AND state IN ('answered', 'credited') AND tx_hash LIKE '0x%' AND credit_id IS NULL", rail);

beforeAll(async () => {
  sandbox = await Sandbox.start();
  database = await Engines.fresh('postgres', 'load');
  // The first loads the demo dataset; the others find it there.
  pool.push(await serve());
  pool.push(...(await Promise.all([serve(), serve()])));
  peek = await Peek.open(database.env);
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await peek?.close();
  await database?.drop();
  await sandbox?.close();
});

/** An API key for a new account holding `credits`. */
async function key(account: string, credits: number): Promise<string> {
  const made = await cli('keys', 'create', '--account', account, '--create', ...(credits > 0 ? ['--credits', String(credits)] : []), '--json');
  expect(made.code, made.stderr).toBe(0);
  return (JSON.parse(made.stdout) as { token: string }).token;
}

describe('three instances under paid load', () => {
  test('behavior: 1,000 paid queries at once (API keys and both rails), one instance killed -9 mid-burst and restarted: the books balance', async () => {
    const capped = await key('capped', 0);
    const quote = (await (await send('/api/ask/quote', {}, { 'service-api-key': capped })).json()) as { costCredits: number };
    // One account holds exactly 300 answers' worth; four others plenty.
    expect((await cli('credits', 'grant', 'capped', '--credits', String(300 * quote.costCredits))).code).toBe(0);
    const others = await Promise.all([1, 2, 3, 4].map((i) => key(`steady-${i}`, 1_000 * quote.costCredits)));
    // Minted one after another: the sandbox's minter has one nonce.
    const payers: Record<'tempo' | 'x402_base', Awaited<ReturnType<Sandbox.Sandbox['newPayer']>>[]> = { tempo: [], x402_base: [] };
    for (let i = 0; i < 4; i++) for (const rail of ['tempo', 'x402_base'] as const) payers[rail].push(await sandbox.newPayer(5));
    const received = { tempo: await sandbox.balance('tempo', sandbox.payTo.tempo), x402_base: await sandbox.balance('x402_base', sandbox.payTo.x402_base) };

    // 400 from the capped account, 100 from each other, 100 on each rail: interleaved, all sent at once.
    const tasks: (() => Promise<Outcome>)[] = [];
    for (let i = 0; i < 100; i++) {
      for (let j = 0; j < 4; j++) tasks.push(() => withKey('capped', capped));
      for (let j = 0; j < 4; j++) tasks.push(() => withKey(`steady-${j + 1}`, others[j]!));
      tasks.push(() => onChain('tempo', payers.tempo[i % 4]!.key));
      tasks.push(() => onChain('x402_base', payers.x402_base[i % 4]!.key));
    }
    expect(tasks).toHaveLength(1_000);
    let done = 0;
    const burst = Promise.all(tasks.map((task) => task().finally(() => (done += 1))));
    // Mid-burst, the third instance is killed outright; a new one takes its place in the pool once it listens.
    await within(120_000, async () => done >= 250);
    const victim = pool[2]!;
    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');
    expect(done).toBeLessThan(1_000);
    pool[2] = await serve();
    const outcomes = await burst;

    // Nobody is refused for any reason but the capped account running out.
    const unexpected = outcomes.filter((o) => o.status !== 200 && !(o.who === 'capped' && o.status === 402));
    expect(unexpected.map((o) => `${o.who} ${o.status} ${JSON.stringify(o.body).slice(0, 200)}`)).toEqual([]);
    expect(new Set(outcomes.filter((o) => o.status === 402).map((o) => o.body.error))).toEqual(new Set(['insufficient_balance']));
    expect(resent.length).toBeGreaterThan(0);
    expect(resent.every((cause) => ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE'].includes(cause))).toBe(true);

    // What the killed instance held is settled by the others once its lease runs out.
    await within(60_000, async () => (await openCharges()) === 0 && (await openPayments()) === 0);
    // Charges it took for answers it never sent were given back: the capped account spends them now.
    const cappedAnswers = outcomes.filter((o) => o.who === 'capped' && o.status === 200);
    for (;;) {
      const next = await withKey('capped', capped);
      if (next.status !== 200) {
        expect(next.body.error).toBe('insufficient_balance');
        break;
      }
      cappedAnswers.push(next);
    }
    // 300 answers' worth is charged and stands: the balance is spent to the last credit.
    expect(await count("SELECT credit_balance FROM accounts WHERE name = 'capped'")).toBe(0);
    expect(await charged('capped', cappedAnswers)).toBe(300);
    for (let j = 1; j <= 4; j++) {
      const name = `steady-${j}`;
      expect(outcomes.filter((o) => o.who === name && o.status === 200)).toHaveLength(100);
      expect(await charged(name, outcomes.filter((o) => o.who === name))).toBeLessThanOrEqual(100);
    }

    // On each rail: 100 answers, each paid once; the money that moved is what the answers and credits account for.
    for (const rail of ['tempo', 'x402_base'] as const) {
      const answers = outcomes.filter((o) => o.who === rail && o.status === 200);
      expect(answers).toHaveLength(100);
      const settled = new Set(await peek.column<string>("SELECT query_id FROM payments WHERE rail = ? AND state = 'answered'", rail));
      for (const answer of answers.filter((o) => !settled.has(o.body.queryId as string))) {
        expect(await peek.value('SELECT state FROM payments WHERE query_id = ?', answer.body.queryId as string)).toBe('credited');
      }
      const paid = (await sandbox.balance(rail, sandbox.payTo[rail])) - received[rail];
      expect(paid).toBe(BigInt(await moved(rail)) * price);
      let spent = 0n;
      for (const payer of payers[rail]) spent += 5_000_000n - (await sandbox.balance(rail, payer.address));
      expect(spent).toBe(paid);
    }
    // No live instance was taken for gone: the burst never held a lease's renewal back past its end.
    expect(all.filter((s) => s.log().includes('taken for gone'))).toEqual([]);
    await audit();
  }, 300_000);

  test('behavior: a rolling restart of all three under steady paid load: no paid query fails but a refused connection sent again, and no charge is left open', async () => {
    const steady = await key('rolling', 100_000);
    const payers = { tempo: await sandbox.newPayer(5), x402_base: await sandbox.newPayer(5) };
    const received = { tempo: await sandbox.balance('tempo', sandbox.payTo.tempo), x402_base: await sandbox.balance('x402_base', sandbox.payTo.x402_base) };
    const resentBefore = resent.length;
    let stopping = false;
    const outcomes: Outcome[] = [];
    const loop = async (query: () => Promise<Outcome>) => {
      while (!stopping) outcomes.push(await query());
    };
    const load = Promise.all([
      ...[1, 2, 3, 4].map(() => loop(() => withKey('rolling', steady))),
      loop(() => onChain('tempo', payers.tempo.key)),
      loop(() => onChain('x402_base', payers.x402_base.key)),
    ]);
    // One at a time, as a deploy does: stop it (it drains), start its successor, wait until it is ready.
    for (let i = 0; i < 3; i++) {
      await sleep(1_000);
      const old = pool[i]!;
      old.child.kill('SIGTERM');
      expect(await old.exited).toBe(0);
      const successor = await serve();
      await within(30_000, async () => (await fetch(`${successor.url}/ready`)).status === 200);
      pool[i] = successor;
    }
    await sleep(1_000);
    stopping = true;
    await load;

    const failed = outcomes.filter((o) => o.status !== 200);
    expect(failed.map((o) => `${o.who} ${o.status} ${JSON.stringify(o.body).slice(0, 200)}`)).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(30);
    expect(resent.slice(resentBefore).every((cause) => ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE'].includes(cause))).toBe(true);
    // Every answer charged once and left standing: a drained instance finished what it took.
    const rolling = await peek.value<string>("SELECT id FROM accounts WHERE name = 'rolling'");
    const answered = outcomes.filter((o) => o.who === 'rolling').length;
    expect(await count("SELECT count(*) FROM ledger WHERE account_id = ? AND kind = 'query_charge'", rolling)).toBe(answered);
    expect(await count("SELECT count(*) FROM ledger WHERE account_id = ? AND kind = 'query_reversal'", rolling)).toBe(0);
    for (const rail of ['tempo', 'x402_base'] as const) {
      const paid = (await sandbox.balance(rail, sandbox.payTo[rail])) - received[rail];
      expect(paid).toBe(BigInt(outcomes.filter((o) => o.who === rail).length) * price);
    }
    await audit();
  }, 300_000);
});
