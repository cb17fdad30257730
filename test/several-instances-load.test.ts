import { AsyncLocalStorage } from 'node:async_hooks';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Instance from '../src/health/Instance.js';
import * as Sandbox from '../src/sandbox/Sandbox.js';
import * as Stores from '../src/store/Store.js';
import type { Param } from '../src/store/Sql.js';
import { credentialFor, mcpCredentialFor } from './support/Chains.js';
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

// The default lease: what bursts on this machine must not break.
// Reconciliation every 5 s, and challenges (so x402 authorizations) that live a minute: a settlement whose outcome
// was lost (a killed instance's, or one the stand-in chains answered too slowly under the burst) can be told once its
// authorization has expired, and is settled within the test, not within the default 5 and 10 minutes.
const env = () => ({
  ENVIRONMENT: 'test',
  ...database.env,
  SYNC_SCHEDULE: 'false',
  LOG_LEVEL: 'warn',
  RECONCILE_INTERVAL_SECONDS: '5',
  PAYMENT_CHALLENGE_TTL_SECONDS: '60',
  // The rails' breakers stay closed: the stand-in chains and facilitator share two cores with three instances and a
  // burst of 200 signing clients, and a few of their answers come late. An open breaker would turn three late answers
  // into half a minute of refusals that say nothing of the books this file audits (the breakers have tests of their own).
  BREAKER_FAILURES: '100',
  ...sandbox.environment,
});
/** Every instance started, killed and restarted ones included, for what they logged. */
const all: Served.Served[] = [];
const serve = async () => {
  const served = await Served.serve(env(), children);
  all.push(served);
  return served;
};
const cli = (...argv: string[]) => Cli.run({ ...database.env, ENVIRONMENT: 'test', LOG_LEVEL: 'silent' }, ...argv);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds, asking every 200 ms for up to `ms`; `explain` says what stood in the way. */
async function within(ms: number, check: () => Promise<boolean>, explain?: () => Promise<unknown>): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms${explain ? `: ${JSON.stringify(await explain())}` : ''}`);
    await sleep(200);
  }
}

/** Why a connection failed (ECONNREFUSED, ECONNRESET, …), for each request the balancer sent again. */
const resent: string[] = [];
let turn = 0;

/** Where a request of a flow went: which instance, and when it was sent and answered. */
type Target = { pid: number; sentAt: number; answeredAt: number };
/** The requests of the flow running in this async context. */
const flow = new AsyncLocalStorage<Target[]>();

/** Sends a request to the next instance; on a failed connection, to the one after it, until one answers. */
async function send(route: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const target = pool[turn++ % pool.length]!;
    const sentAt = Date.now();
    try {
      const response = await fetch(`${target.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      flow.getStore()?.push({ pid: target.pid, sentAt, answeredAt: Date.now() });
      return response;
    } catch (error) {
      flow.getStore()?.push({ pid: target.pid, sentAt, answeredAt: Date.now() });
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? String(error);
      resent.push(cause);
      if (attempt === 50) throw error;
      await sleep(100);
    }
  }
}

/** How a flow ended, over which transport, and every request it sent on the way. */
type Outcome = { who: string; via: Transport; status: number; body: Record<string, unknown>; targets: Target[] };

/** Runs a flow, keeping where each of its requests went. */
const traced = (work: () => Promise<Omit<Outcome, 'targets'>>) => async (): Promise<Outcome> => {
  const targets: Target[] = [];
  return { ...(await flow.run(targets, work)), targets };
};

/** A paid query with an API key. */
function withKey(who: string, key: string, via: Transport = 'rest'): Promise<Outcome> {
  return traced(async () => {
    if (via === 'rest') {
      const response = await send('/api/ask/query', { question, mode: 'raw', paymentMode: 'credits' }, { 'service-api-key': key });
      return { who, via, status: response.status, body: (await response.json()) as Record<string, unknown> };
    }
    return outcomeOf(who, via, await rpc(via, { question, mode: 'raw', paymentMode: 'credits' }, undefined, { 'service-api-key': key }));
  })();
}

/** How a flow reaches the instances: REST, MCP `tools/call`, or the tool's name as the JSON-RPC method. */
type Transport = 'rest' | 'tools/call' | 'direct';
const transports: Transport[] = ['rest', 'tools/call', 'direct'];
type RpcReply = { result?: Record<string, any>; error?: { code: number; message: string; data?: Record<string, any> } };
let rpcId = 0;

/** `profile_query` over MCP, through the balancer, with the credential (if any) in `_meta`. */
async function rpc(via: Exclude<Transport, 'rest'>, args: Record<string, unknown>, credential?: unknown, headers: Record<string, string> = {}): Promise<RpcReply> {
  const meta = credential === undefined ? undefined : { 'org.paymentauth/credential': credential };
  const message =
    via === 'direct'
      ? { jsonrpc: '2.0', id: (rpcId += 1), method: 'profile_query', params: { ...args, ...(meta && { _meta: meta }) } }
      : { jsonrpc: '2.0', id: (rpcId += 1), method: 'tools/call', params: { name: 'profile_query', arguments: args, ...(meta && { _meta: meta }) } };
  const response = await send('/mcp', message, { accept: 'application/json, text/event-stream', ...headers });
  return (await response.json()) as RpcReply;
}

/** An MCP reply as the status and body REST would have given. */
function outcomeOf(who: string, via: Transport, reply: RpcReply): Omit<Outcome, 'targets'> {
  if (reply.error) return { who, via, status: reply.error.code === -32042 ? 402 : Number(reply.error.data?.status ?? 500), body: { message: reply.error.message, ...reply.error.data } };
  const body = (via === 'tools/call' ? reply.result!.structuredContent : reply.result) as Record<string, unknown>;
  return { who, via, status: reply.result!.isError ? Number(body.status) : 200, body };
}

/**
 * A paid query on a rail, paid by its real client: challenged, paid, sent, over REST or MCP. A credential refused
 * (the instance that took it first is gone and its claim still stands, or it expired while its instance stood still)
 * is replaced by a new one for a new challenge, as a wallet would.
 */
function onChain(rail: 'tempo' | 'x402_base', key: `0x${string}`, via: Transport = 'rest'): Promise<Outcome> {
  const args = { question, rail };
  return traced(async () => {
    if (via === 'rest') {
      let challenge = await send('/api/ask/query', args);
      for (let attempt = 1; ; attempt++) {
        expect(challenge.status).toBe(402);
        const credential = await credentialFor(sandbox, rail, challenge, key);
        const paid = await send('/api/ask/query', args, credential);
        if (paid.status !== 402 || attempt === 3) return { who: rail, via, status: paid.status, body: (await paid.json()) as Record<string, unknown> };
        challenge = paid;
      }
    }
    let reply = await rpc(via, args);
    for (let attempt = 1; ; attempt++) {
      expect(reply.error?.code, JSON.stringify(reply)).toBe(-32042);
      reply = await rpc(via, args, await mcpCredentialFor(sandbox, rail, reply.error!.data!.challenges[0], key));
      if (reply.error?.code !== -32042 || attempt === 3) return outcomeOf(rail, via, reply);
    }
  })();
}

const count = async (sql: string, ...params: Param[]) => Number(await peek.value(sql, ...params));

/** Charges that are neither answered nor given back. */
const openCharges = () =>
  count(`SELECT count(*) FROM ledger c WHERE c.kind = 'query_charge'
    AND NOT EXISTS (SELECT 1 FROM ledger m WHERE m.query_id = c.query_id AND m.kind IN ('query_answered', 'query_reversal'))`);
/** On-chain payments still part-way (verified, or money possibly moving). */
const openPayments = () => count("SELECT count(*) FROM payments WHERE state IN ('verified', 'settling', 'settled')");

/** Whether a transaction landed on a rail's chain and succeeded. */
async function landed(rail: 'tempo' | 'x402_base', txHash: string): Promise<boolean> {
  const url = rail === 'tempo' ? sandbox.tempo.url : sandbox.base.rpcUrl;
  const reply = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [txHash] }) });
  return ((await reply.json()) as { result: { status: string } | null }).result?.status === '0x1';
}

/** What every audit checks: the books agree with themselves and with the chains, whatever happened to the processes. */
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
  // An answered payment never holds a credit: the wallet got its answer.
  expect(await peek.all("SELECT p.id FROM wallet_credits c JOIN payments p ON p.id = c.payment_id WHERE p.state <> 'credited'")).toEqual([]);
  // A credit is spent at most once: no two payments that stand (anything but released) spent the same one.
  expect(await peek.all("SELECT credit_id FROM payments WHERE credit_id IS NOT NULL AND state <> 'released' GROUP BY credit_id HAVING count(*) > 1")).toEqual([]);
  expect(await peek.all("SELECT c.id FROM wallet_credits c JOIN payments p ON p.id = c.consumed_by WHERE p.credit_id IS DISTINCT FROM c.id OR p.state = 'released'")).toEqual([]);
  // Every credit stands for a transfer that landed on its chain.
  const credits = await peek.all<{ id: string; rail: 'tempo' | 'x402_base'; txHash: string | null }>(
    'SELECT c.id, c.rail, p.tx_hash AS "txHash" FROM wallet_credits c JOIN payments p ON p.id = c.payment_id',
  );
  for (const credit of credits) expect(credit.txHash !== null && (await landed(credit.rail, credit.txHash)), `${credit.id} ${credit.txHash}`).toBe(true);
  // And the store's own check of its books finds nothing either.
  const { store } = await Stores.open(database.target);
  try {
    expect(await store.books.check()).toEqual([]);
  } finally {
    await store.close();
  }
}

/**
 * How many of an account's answers are charged and stand. Every answer it received was charged: one whose charge does
 * not stand is an answer an instance sent in the moment before it recorded the capture, given back when its lease ran
 * out (killed, or paused past it): never charged for nothing, at worst an answer free.
 */
async function charged(account: string, answers: Outcome[]): Promise<{ standing: number; free: number }> {
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
  return { standing: standing.size, free: free.length };
}

/** Money that reached the service on a rail: one price per answered or credited payment that moved a transfer. */
const moved = (rail: string) => count("SELECT count(*) FROM payments WHERE rail = ? AND state IN ('answered', 'credited') AND tx_hash LIKE '0x%' AND credit_id IS NULL", rail);

/**
 * The longest any live instance's lease went unrenewed, sampled every 250 ms until stopped, leaving out the processes in
 * `out` (one killed, or paused): what a burst does to renewals, against the lease.
 */
function watchLeases(out: () => Set<number>): { stop(): Promise<number> } {
  let worst = 0;
  let running = true;
  const sampling = (async () => {
    while (running) {
      const now = Date.now();
      const rows = await peek.all<{ name: string; seenAt: number }>('SELECT name, seen_at AS "seenAt" FROM instances').catch(() => []);
      for (const row of rows) {
        const pid = Number(row.name.split(':').pop());
        if (!out().has(pid)) worst = Math.max(worst, now - Number(row.seenAt));
      }
      await sleep(250);
    }
  })();
  return {
    async stop() {
      running = false;
      await sampling;
      return worst;
    },
  };
}

beforeAll(async () => {
  sandbox = await Sandbox.start();
  database = await Engines.fresh('postgres', 'load');
  // The first loads the demo dataset; the others find it there.
  pool.push(await serve());
  pool.push(...(await Promise.all([serve(), serve()])));
  peek = await Peek.open(database.env);
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGCONT');
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

/** Runs `tasks` with at most `width` in flight at once, counting what is done. */
async function burst<T>(tasks: (() => Promise<T>)[], width: number, done: { count: number }): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]!();
        done.count += 1;
      }
    }),
  );
  return results;
}

/**
 * Makes a live instance look gone to the others while it goes on answering: its lease row is aged, again and again,
 * until another instance has claimed it and it has registered again (its log says `taken for gone`), as a renewal held
 * back past the lease would leave it. Returns when that was, from the first ageing to the new registration.
 */
async function takeForGone(target: Served.Served, out: Set<number>): Promise<{ pid: number; from: number; to: number }> {
  const times = () => target.log().split('taken for gone').length;
  const before = times();
  const from = Date.now();
  const name = `%:${target.pid}`;
  // Its registration as it stands: the one it makes again has a start of its own, and is never aged.
  const startedAt = Number(await peek.value('SELECT started_at FROM instances WHERE name LIKE ?', name));
  out.add(target.pid);
  await within(60_000, async () => {
    if (times() > before) return true;
    await peek.run('UPDATE instances SET seen_at = ? WHERE name LIKE ? AND started_at = ?', Date.now() - 10 * Instance.leaseMs, name, startedAt);
    return false;
  });
  const to = Date.now();
  await within(10_000, async () => Date.now() - Number(await peek.value('SELECT max(seen_at) FROM instances WHERE name LIKE ?', name)) < Instance.leaseMs / 2);
  out.delete(target.pid);
  return { pid: target.pid, from, to };
}

describe('three instances under paid load', () => {
  test('behavior: 1,500 paid flows on all three rails over REST and MCP, 200 at once; an instance killed -9, two live ones taken for gone while they answer, one frozen past its lease: the books balance, and no live instance loses its lease unless made to', async () => {
    const capped = await key('capped', 0);
    const quote = (await (await send('/api/ask/quote', {}, { 'service-api-key': capped })).json()) as { costCredits: number };
    // One account holds exactly 300 answers' worth; four others plenty.
    expect((await cli('credits', 'grant', 'capped', '--credits', String(300 * quote.costCredits))).code).toBe(0);
    const others = await Promise.all([1, 2, 3, 4].map((i) => key(`steady-${i}`, 1_000 * quote.costCredits)));
    // Minted one after another: the sandbox's minter has one nonce.
    const payers: Record<'tempo' | 'x402_base', Awaited<ReturnType<Sandbox.Sandbox['newPayer']>>[]> = { tempo: [], x402_base: [] };
    for (let i = 0; i < 8; i++) for (const rail of ['tempo', 'x402_base'] as const) payers[rail].push(await sandbox.newPayer(5));
    // Each tempo wallet holds credits (transfers it broadcast for a challenge of another question, kept for it): its
    // first payments in the burst spend them, while instances are taken for gone around them.
    for (const payer of payers.tempo) {
      for (let i = 0; i < 4; i++) {
        const pushed = await credentialFor(sandbox, 'tempo', await send('/api/ask/query', { question, rail: 'tempo' }), payer.key, 'push');
        const refused = await send('/api/ask/query', { question: 'What flour should I feed a starter?', rail: 'tempo' }, pushed);
        expect(((await refused.json()) as { message: string }).message).toMatch(/kept as credit credit_/);
      }
    }
    expect(await count('SELECT count(*) FROM wallet_credits WHERE consumed_by IS NULL')).toBe(32);
    // What the chains and the books hold from here on (the pushed transfers cost their payers a fee besides).
    const before = {
      received: { tempo: await sandbox.balance('tempo', sandbox.payTo.tempo), x402_base: await sandbox.balance('x402_base', sandbox.payTo.x402_base) },
      moved: { tempo: await moved('tempo'), x402_base: await moved('x402_base') },
      payers: new Map(await Promise.all([...payers.tempo.map((p) => ['tempo', p] as const), ...payers.x402_base.map((p) => ['x402_base', p] as const)].map(async ([rail, p]) => [`${rail}:${p.address}`, await sandbox.balance(rail, p.address)] as const))),
    };

    // 400 from the capped account, 100 from each other, 300 on each rail, over every transport: interleaved.
    const tasks: (() => Promise<Outcome>)[] = [];
    for (let i = 0; i < 100; i++) {
      for (let j = 0; j < 4; j++) tasks.push(() => withKey('capped', capped, transports[(i + j) % 3]));
      for (let j = 0; j < 4; j++) tasks.push(() => withKey(`steady-${j + 1}`, others[j]!, transports[(i + j + 1) % 3]));
      for (let j = 0; j < 3; j++) {
        const via = transports[(i + j) % 3]!;
        tasks.push(() => onChain('tempo', payers.tempo[(i * 3 + j) % 8]!.key, via));
        tasks.push(() => onChain('x402_base', payers.x402_base[(i * 3 + j) % 8]!.key, via));
      }
    }
    // And 100 more on-chain flows from the same payers, over REST.
    for (let i = 0; i < 50; i++) tasks.push(() => onChain('tempo', payers.tempo[i % 8]!.key), () => onChain('x402_base', payers.x402_base[i % 8]!.key));
    expect(tasks).toHaveLength(1_500);
    const done = { count: 0 };
    // Instances not to count in the lease watch while they are down or made to lose their lease; and when each was
    // taken for gone, from the moment it was made to until it registered again.
    const out = new Set<number>();
    const taken: { pid: number; from: number; to: number }[] = [];
    const leases = watchLeases(() => out);
    const running = burst(tasks, 200, done);

    // A fifth in, the third instance is killed outright; a new one takes its place in the pool once it listens.
    await within(120_000, async () => done.count >= 300);
    const victim = pool[2]!;
    out.add(victim.pid);
    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');
    pool[2] = await serve();
    // Then a live instance is taken for gone while it answers (its lease aged, as a renewal held back would leave
    // it): another claims it and settles what it holds, while it goes on finishing the same payments.
    await within(120_000, async () => done.count >= 500);
    taken.push(await takeForGone(pool[0]!, out));
    // Further in, the second stands still (SIGSTOP) past its lease, as a frozen host would, and is then let go on.
    await within(120_000, async () => done.count >= 750);
    const frozen = pool[1]!;
    out.add(frozen.pid);
    const pausedAt = Date.now();
    frozen.child.kill('SIGSTOP');
    // Its lease runs out and another instance settles what it held, while it stands still.
    await within(Instance.leaseMs + 30_000, async () => (await count('SELECT count(*) FROM instances WHERE name LIKE ?', `%:${frozen.pid}`)) === 0);
    await sleep(3_000);
    frozen.child.kill('SIGCONT');
    await within(30_000, async () => frozen.log().includes('taken for gone'));
    taken.push({ pid: frozen.pid, from: pausedAt, to: Date.now() });
    out.delete(frozen.pid);
    // And the restarted one is taken for gone while it answers.
    await within(120_000, async () => done.count >= 1_100);
    taken.push(await takeForGone(pool[2]!, out));
    expect(done.count).toBeLessThan(tasks.length);
    const outcomes = await running;
    await sleep(2_000);
    const worstSilence = await leases.stop();

    // Nobody is refused for any reason but the capped account running out, except flows that met an instance taken
    // for gone: one it held may have been given back (a 503 saying so) or outlived its signed transfer (a new
    // challenge, 402). And a settlement a slow chain did not answer is left to reconciliation, and says so.
    const metTaken = (o: Outcome) => o.targets.some((t) => taken.some((w) => t.pid === w.pid && t.sentAt < w.to && t.answeredAt > w.from));
    const lost = outcomes.filter((o) => o.status === 503 && /outcome is not known yet/.test(String(o.body.message)));
    const unexpected = outcomes.filter(
      (o) => o.status !== 200 && !(o.who === 'capped' && o.status === 402 && o.body.error === 'insufficient_balance') && !metTaken(o) && !lost.includes(o),
    );
    // What the instances logged of their rails' failures: why a payment service was unavailable, when one was.
    const railFailures = all.flatMap((s) => s.log().split('\n').filter((line) => /rail unavailable|failing: skipped/.test(line)).map((line) => line.slice(0, 600)));
    expect(unexpected.map((o) => `${o.who} ${o.via} ${o.status} ${JSON.stringify(o.body).slice(0, 200)}`), railFailures.join('\n')).toEqual([]);
    const refusedForTaken = outcomes.filter((o) => o.status !== 200 && metTaken(o) && !lost.includes(o));
    expect(refusedForTaken.every((o) => [402, 503].includes(o.status)), JSON.stringify(refusedForTaken.map((o) => [o.status, o.body.error]))).toBe(true);
    expect(resent.length).toBeGreaterThan(0);
    expect(resent.every((cause) => ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE'].includes(cause))).toBe(true);

    // What the killed instance and those taken for gone left is settled; lost settlements by their own instance.
    const left = async () => ({
      payments: await peek.all("SELECT id, state, instance_id, settle_by, updated_at, note FROM payments WHERE state IN ('verified', 'settling', 'settled')"),
      charges: await peek.all(`SELECT c.query_id, c.instance_id, c.created_at FROM ledger c WHERE c.kind = 'query_charge'
        AND NOT EXISTS (SELECT 1 FROM ledger m WHERE m.query_id = c.query_id AND m.kind IN ('query_answered', 'query_reversal'))`),
      instances: await peek.all('SELECT * FROM instances'),
      now: Date.now(),
    });
    await within(180_000, async () => (await openCharges()) === 0 && (await openPayments()) === 0, left);
    // Charges given back for answers never sent: the capped account spends them now.
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
    const cappedCharges = await charged('capped', cappedAnswers);
    expect(cappedCharges.standing).toBe(300);
    const free = { balances: cappedCharges.free, onchain: 0 };
    for (let j = 1; j <= 4; j++) {
      const theirs = outcomes.filter((o) => o.who === `steady-${j}`);
      expect(theirs.filter((o) => o.status !== 200 && !metTaken(o))).toEqual([]);
      free.balances += (await charged(`steady-${j}`, theirs)).free;
    }

    // On each rail: each answer paid once; the money that moved is what the answers and credits account for.
    for (const rail of ['tempo', 'x402_base'] as const) {
      const answers = outcomes.filter((o) => o.who === rail && o.status === 200);
      const settled = new Set(await peek.column<string>("SELECT query_id FROM payments WHERE rail = ? AND state = 'answered'", rail));
      for (const answer of answers.filter((o) => !settled.has(o.body.queryId as string))) {
        // An answer whose payment does not stand went out from an instance taken for gone, in the moment before its
        // capture: its money is a credit (or never moved), never taken twice. The capture follows the delivery by as
        // long as the database makes it wait (or the freeze lasts), so the answer may reach its caller just before the
        // instance was taken: it then logged that the capture failed (refused, the payment resolved by the claim, or
        // cut off with its session).
        const refusedCapture = (o: Outcome) =>
          all.some((s) => taken.some((w) => w.pid === s.pid) && o.targets.some((t) => t.pid === s.pid) && s.log().split('\n').some((line) => line.includes(o.body.queryId as string) && /could not be captured/.test(line)));
        const explained = metTaken(answer) || answer.targets.some((t) => t.pid === victim.pid) || refusedCapture(answer);
        const logged = all.flatMap((s) => s.log().split('\n').filter((line) => line.includes(answer.body.queryId as string)).map((line) => `${s.pid}: ${line.slice(0, 400)}`));
        expect(explained, `${JSON.stringify(answer)}; taken for gone: ${JSON.stringify(taken)}; killed: ${victim.pid}; logged: ${logged.join('\n')}`).toBe(true);
        expect(['credited', 'released']).toContain(await peek.value('SELECT state FROM payments WHERE query_id = ?', answer.body.queryId as string));
        free.onchain += 1;
      }
      const paid = (await sandbox.balance(rail, sandbox.payTo[rail])) - before.received[rail];
      expect(paid).toBe(BigInt((await moved(rail)) - before.moved[rail]) * price);
      let spent = 0n;
      for (const payer of payers[rail]) spent += before.payers.get(`${rail}:${payer.address}`)! - (await sandbox.balance(rail, payer.address));
      expect(spent).toBe(paid);
    }
    // The seeded credits were spent on answers in the burst.
    expect(await count("SELECT count(*) FROM payments WHERE credit_id IS NOT NULL AND state = 'answered'")).toBeGreaterThan(0);
    // No live instance was taken for gone but those made to be.
    const victims = new Set(taken.map((w) => w.pid));
    expect(all.filter((s) => !victims.has(s.pid) && s.log().includes('taken for gone')).map((s) => s.log().slice(-2_000))).toEqual([]);
    await audit();
    // eslint-disable-next-line no-console -- the figures a run measured, for the issue and docs/scaling.md
    console.log(
      `several instances under load: ${tasks.length} flows, 200 at once; longest a live lease went unrenewed ${worstSilence} ms (lease ${Instance.leaseMs} ms); ` +
        `${taken.length} taken for gone (${taken.map((w) => `${Math.round((w.to - w.from) / 1000)} s`).join(', ')}), ${refusedForTaken.length} flows refused for meeting one; ` +
        `${lost.length} settlements left to reconciliation by a slow chain; answers left free: ${free.balances} on balances, ${free.onchain} on chain`,
    );
  }, 600_000);

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
