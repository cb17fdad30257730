import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, test, vi } from 'vitest';
import * as Config from '../src/config/Config.js';
import { projectRoot } from '../src/config/Config.js';
import * as Instance from '../src/health/Instance.js';
import * as Log from '../src/log/Logger.js';
import * as AccountPayment from '../src/payments/AccountPayment.js';
import * as Charging from '../src/payments/Charging.js';
import * as Rails from '../src/payments/Rails.js';
import * as Reconciliation from '../src/payments/Reconciliation.js';
import type * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';

/**
 * Several serving processes on one database: each holds a lease; what a process whose lease ran out left part-way
 * (a charge, a payment) is settled by whichever process claims it, at once and once; a live process's query in
 * flight is never touched, however long it runs. Each "process" here is a store connection of its own.
 */
describe.each(Engines.engines)('instances on %s', (engine) => {
  const processes = Engines.twoProcesses(engine, 'instances');
  let a: Stores.OpenStore;
  let b: Stores.OpenStore;
  const lines: string[] = [];
  const logger = Log.create({ level: 'info', write: (line) => lines.push(line) });
  const config = Config.load({ ENVIRONMENT: 'test', LOG_LEVEL: 'silent' });

  beforeAll(() => void ({ a, b } = processes));

  const buyer = async (credits: number) => {
    const account = await a.accounts.create({ name: `buyer-${Math.random().toString(36).slice(2)}` });
    await a.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: credits });
    return account.id;
  };
  const balance = async (accountId: string) => (await a.accounts.get(accountId)).creditBalance;
  const settle = (store: Stores.OpenStore, now: number) => Reconciliation.settleGone({ store, rails: Rails.fromConfig(config, store), logger }, { now });

  test('behavior: an instance registers when it starts, renews its lease, and leaves when it stops', async () => {
    let now = 1_000;
    const instance = Instance.create({ store: a, logger, now: () => now });
    expect(instance.id()).toBeUndefined();
    await instance.start();
    const id = instance.id()!;
    expect(id).toMatch(/^i_[0-9a-f]{16}$/);
    expect(await a.instances.list()).toEqual([expect.objectContaining({ id, startedAt: 1_000, seenAt: 1_000 })]);
    now = 6_000;
    expect(await a.instances.renew({ id, name: 'x', now })).toBe(true);
    expect((await b.instances.list())[0]).toMatchObject({ id, startedAt: 1_000, seenAt: 6_000 });
    await instance.stop();
    expect(instance.id()).toBeUndefined();
    expect(await a.instances.list()).toEqual([]);
  });

  test('behavior: a charge taken by an instance whose lease ran out is given back at once by another, and only once', async () => {
    const now = Date.now();
    await a.instances.renew({ id: 'i_gone', name: 'gone', now: now - Instance.leaseMs - 1_000 });
    await a.instances.renew({ id: 'i_live', name: 'live', now });
    const accountId = await buyer(50);
    await AccountPayment.hold({ store: a, config, accountId, mode: 'credits', queryId: 'q_of_gone', memo: 'cut off', instance: 'i_gone' });
    const inFlight = await AccountPayment.hold({ store: a, config, accountId, mode: 'credits', queryId: 'q_of_live', memo: 'in flight', instance: 'i_live' });
    expect(await balance(accountId)).toBe(30);
    // Two processes claim at once: the gone instance's charge is reversed once; the live one's is left alone. (Two
    // SQLite connections in one process cannot wait on each other, a busy wait blocking the thread that would commit,
    // so there they take turns; processes wait on each other.)
    if (engine === 'postgres') await Promise.all([settle(a, now), settle(b, now)]);
    else for (const store of [a, b]) await settle(store, now);
    expect(await balance(accountId)).toBe(40);
    const reversal = (await a.ledger.entries({ accountId })).filter((e) => e.kind === 'query_reversal');
    expect(reversal).toEqual([expect.objectContaining({ queryId: 'q_of_gone', creditsDelta: 10, memo: expect.stringMatching(/by an instance that stopped before answering \(its lease ran out\)$/) })]);
    expect((await a.instances.list()).map((i) => i.id)).toEqual(['i_live']);
    expect(lines.some((l) => l.includes('instances gone') && l.includes('i_gone'))).toBe(true);
    // The live instance answers its query: the charge stands.
    await inFlight.capture(a);
    await a.instances.leave('i_live');
    expect(await balance(accountId)).toBe(40);
  });

  test('behavior: a live instance\'s charge is never reversed, however old; once the instance is gone, the periodic pass takes it', async () => {
    const now = Date.now();
    await a.instances.renew({ id: 'i_slow', name: 'slow', now });
    const accountId = await buyer(20);
    await AccountPayment.hold({ store: a, config, accountId, mode: 'credits', queryId: 'q_slow', memo: 'slow', instance: 'i_slow' });
    await AccountPayment.hold({ store: a, config, accountId, mode: 'credits', queryId: 'q_unowned', memo: 'no instance' });
    const later = now + Charging.orphanAfterMs + 1_000;
    // The charge with no instance (a process that held no lease) goes by age alone; the live instance's stays.
    expect(await Charging.reconcile(b, { now: later })).toBe(1);
    expect(await balance(accountId)).toBe(10);
    await a.instances.leave('i_slow');
    expect(await Charging.reconcile(b, { now: later })).toBe(1);
    expect(await balance(accountId)).toBe(20);
    expect(await Charging.reconcile(b, { now: later })).toBe(0);
  });

  test('behavior: an answered or released charge of a gone instance stays as it was', async () => {
    const now = Date.now();
    await a.instances.renew({ id: 'i_done', name: 'done', now: now - Instance.leaseMs - 1 });
    const accountId = await buyer(30);
    const answered = await AccountPayment.hold({ store: a, config, accountId, mode: 'credits', queryId: 'q_done_answered', memo: 'a', instance: 'i_done' });
    await answered.capture(a);
    await (await AccountPayment.hold({ store: a, config, accountId, mode: 'credits', queryId: 'q_done_released', memo: 'b', instance: 'i_done' })).release('nothing relevant');
    await settle(b, now);
    expect(await balance(accountId)).toBe(20);
    expect(await a.instances.list()).toEqual([]);
  });

  test('behavior: an on-chain payment an instance verified and never settled is released once its lease ran out, not before', async () => {
    const now = Date.now();
    await a.instances.renew({ id: 'i_payer', name: 'payer', now });
    const reserve = (id: string, instanceId: string) =>
      a.payments.reserve({ id, spendKey: `spend-${id}`, rail: 'tempo', wallet: '0xabc', queryId: `q_${id}`, requestDigest: 'd', amountMillicents: 5_000, instanceId });
    expect(await reserve('pay_live', 'i_payer')).toBe(true);
    // Alive: nothing is touched, even by a pass that counts everything as old.
    await settle(b, now);
    expect((await a.payments.get('pay_live'))!.state).toBe('verified');
    // Its lease runs out (no renewal for longer than a lease): the next pass of any instance releases it.
    await settle(b, now + Instance.leaseMs + 1_000);
    expect((await a.payments.get('pay_live'))!.state).toBe('released');
  });

  test('behavior: an instance found gone while it still runs registers again on its next renewal, and says so', async () => {
    let now = 50_000;
    const instance = Instance.create({ store: a, logger, now: () => now, renewEveryMs: 20 });
    await instance.start();
    const id = instance.id()!;
    // Another process claims it (it stood still past its lease).
    expect(await b.instances.expire(now + 1)).toContain(id);
    now += 1_000;
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect((await a.instances.list()).map((i) => i.id)).toContain(id);
    expect(lines.some((l) => l.includes('taken for gone') && l.includes(id))).toBe(true);
    await instance.stop();
  });

  test('behavior: a process that stood still past its own lease never claims itself when it goes on', async () => {
    const now = Date.now();
    await a.instances.renew({ id: 'i_self_stale', name: 'self', now: now - Instance.leaseMs - 5_000 });
    const accountId = await buyer(10);
    await AccountPayment.hold({ store: a, config, accountId, mode: 'credits', queryId: 'q_self_stale', memo: 'mine', instance: 'i_self_stale' });
    await Reconciliation.settleGone({ store: a, rails: Rails.fromConfig(config, a), logger }, { now, own: 'i_self_stale' });
    expect((await a.instances.list()).map((i) => i.id)).toContain('i_self_stale');
    expect(await balance(accountId)).toBe(0);
    // Another process does claim it, and gives its charge back.
    await Reconciliation.settleGone({ store: b, rails: Rails.fromConfig(config, b), logger }, { now, own: 'i_another' });
    expect(await balance(accountId)).toBe(10);
  });

  /** Holds this thread for `ms` without yielding: a saturated event loop, as a burst or a long synchronous step makes. */
  const hold = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) crypto.getRandomValues(new Uint8Array(64));
  };
  const seenAt = async (id: string) => (await b.instances.list()).find((i) => i.id === id)?.seenAt;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** An instance on a 1 s lease renewed from its thread, once the thread has started and renewed at least once. */
  const renewingOnThread = async (options: { stallMs?: number }) => {
    const instance = Instance.create({ store: a, logger, target: processes.place.target, leaseMs: 1_000, ...options });
    await instance.start();
    const id = instance.id()!;
    const registered = (await seenAt(id))!;
    await vi.waitFor(async () => expect(await seenAt(id)).toBeGreaterThan(registered), { timeout: 10_000, interval: 50 });
    return { instance, id };
  };

  test('behavior: the lease is renewed from a thread of its own while this thread is held busy past the lease', async () => {
    const { instance, id } = await renewingOnThread({});
    const held = Date.now();
    hold(3_000);
    // Renewed while this thread could run nothing at all: no other process may take it for gone.
    expect(await seenAt(id)).toBeGreaterThan(held + 2_000);
    expect(await b.instances.expire(Date.now() - 1_000)).toEqual([]);
    await instance.stop();
    expect(await seenAt(id)).toBeUndefined();
    // The thread ended with the stop: it does not register the instance again.
    await sleep(600);
    expect(await seenAt(id)).toBeUndefined();
  });

  test('behavior: a process whose serving thread is stuck lets its lease run out, and renews again once it answers', async () => {
    const { instance, id } = await renewingOnThread({ stallMs: 500 });
    const held = Date.now();
    hold(3_000);
    // Stuck past `stallMs`: the thread stopped renewing, so the lease ran out for others to claim.
    expect(await seenAt(id)).toBeLessThan(held + 1_000);
    await vi.waitFor(() => expect(lines.some((l) => l.includes('has not answered its lease thread') && l.includes(id))).toBe(true));
    const answering = Date.now();
    await vi.waitFor(async () => expect(await seenAt(id)).toBeGreaterThan(answering), { timeout: 10_000, interval: 50 });
    await instance.stop();
  });

  test.each([
    ['on its thread', true],
    ['on the serving thread', false],
  ])('behavior: claiming leases that ran out never holds a renewal back, however long it takes (%s)', async (_, threaded) => {
    let claims = 0;
    // The claim at start finds nothing; the next settles what a gone instance left against a slow chain: seconds,
    // several leases long.
    const claimGone = async () => {
      if ((claims += 1) > 1) await sleep(3_000);
    };
    const instance = Instance.create({ store: a, logger, target: threaded ? processes.place.target : undefined, leaseMs: 1_000, claimGone });
    await instance.start();
    const started = Date.now();
    const id = instance.id()!;
    await sleep(2_500);
    expect(await seenAt(id)).toBeGreaterThan(started + 1_500);
    // One claim at a time: the ticks that came while the slow one ran were skipped, not queued.
    expect(claims).toBe(2);
    await instance.stop();
  });

  test('behavior: a process whose instance renews from its thread ends when its work is done, never stopped', () => {
    const built = path.join(projectRoot, 'dist', 'src');
    // The built modules, as `profile-edge` runs them: the instance starts its lease thread, the store is closed, and
    // nothing stops the instance.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lease-thread-'));
    const script = path.join(dir, 'exit.mjs');
    fs.writeFileSync(
      script,
      `const Stores = await import(${JSON.stringify(path.join(built, 'store', 'Store.js'))});
      const Instance = await import(${JSON.stringify(path.join(built, 'health', 'Instance.js'))});
      const Log = await import(${JSON.stringify(path.join(built, 'log', 'Logger.js'))});
      const target = ${JSON.stringify(processes.place.target)};
      const { store } = await Stores.open(target);
      const instance = Instance.create({ store, logger: Log.create({ level: 'silent' }), target, leaseMs: 1000 });
      await instance.start();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await store.close();
      console.log(instance.id() ? 'started' : 'not started');`,
    );
    try {
      const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
      expect(run.error).toBeUndefined();
      expect(run.stdout.trim()).toBe('started');
      expect(run.status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
