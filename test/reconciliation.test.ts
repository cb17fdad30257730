import { beforeAll, describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as OnchainPayment from '../src/payments/OnchainPayment.js';
import * as Rails from '../src/payments/Rails.js';
import type * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';

/**
 * Reconciliation meets a process that was taken for gone but is still finishing its payments: it read the rows, and
 * meanwhile the live process moved them on (settled, captured). Every step it takes depends on the state it read, in
 * the transaction that acts on it, so what the live process did stands: an answered payment gains no credit, and a
 * credit is spent once. The database refuses the rest itself. Each "process" is a store connection of its own.
 */
describe.each(Engines.engines)('reconciliation racing a live instance on %s', (engine) => {
  const processes = Engines.twoProcesses(engine, 'reconcile');
  let live: Stores.OpenStore;
  let reconciler: Stores.OpenStore;
  let peek: Peek.Peek;
  const config = Config.load({ ENVIRONMENT: 'test', LOG_LEVEL: 'silent' });

  beforeAll(async () => {
    ({ a: live, b: reconciler } = processes);
    peek = await Peek.open(processes.place.env);
    return () => peek.close();
  });

  let n = 0;
  /** A payment the live instance reserved (verified), with a wallet of its own. */
  const reserve = async (instanceId: string) => {
    const id = `pay_${(n += 1)}`;
    const wallet = `0x${n.toString(16).padStart(40, '0')}`;
    await live.payments.reserve({ id, spendKey: `spend-${id}`, rail: 'tempo', wallet, queryId: `q_${id}`, requestDigest: 'd', amountMillicents: 5_000, instanceId });
    return { id, wallet };
  };
  /** A credit of `wallet`: an earlier payment of its that moved money and got no answer. */
  const creditOf = async (wallet: string) => {
    const id = `pay_${(n += 1)}`;
    await live.payments.reserve({ id, spendKey: `spend-${id}`, rail: 'tempo', wallet, queryId: `q_${id}`, requestDigest: 'd', amountMillicents: 5_000 });
    await live.payments.advance(id, ['verified'], 'settled', { txHash: `0x${'ab'.repeat(31)}${n.toString(16).padStart(2, '0')}` });
    return (await live.payments.creditWallet(id, { from: ['settled'], reason: 'an earlier payment got no answer' }))!;
  };
  /** What the live instance does once its answer is out: the capture, with the revenue row. */
  const capture = (id: string) =>
    live.transaction(async (tx) => {
      expect(await tx.payments.advance(id, ['settled'], 'answered')).toBe(true);
      await tx.ledger.append({ kind: 'onchain_payment', usdMicros: 50_000, queryId: `q_${id}` });
    });
  /**
   * A pass by the reconciler that claimed `instance` (its lease ran out), reading the unfinished payments first; the
   * live instance then does `meanwhile` before the pass acts on what it read.
   */
  const reconcileRacing = async (instance: string, meanwhile: () => Promise<void>) => {
    const store: Stores.Store = {
      ...reconciler,
      payments: {
        ...reconciler.payments,
        unfinished: async (options) => {
          const rows = await reconciler.payments.unfinished(options);
          await meanwhile();
          return rows;
        },
      },
    };
    return OnchainPayment.reconcile(store, Rails.fromConfig(config, reconciler), { olderThanMs: OnchainPayment.reconcileAfterMs, instances: [instance] });
  };
  const creditsOf = (paymentId: string) => peek.value<number>('SELECT count(*) FROM wallet_credits WHERE payment_id = ?', paymentId).then(Number);

  test('behavior: a payment the live instance captured while the pass read it gains no credit', async () => {
    const { id } = await reserve('i_busy_1');
    await live.payments.advance(id, ['verified'], 'settled', { txHash: `0x${'cd'.repeat(32)}` });
    const outcome = await reconcileRacing('i_busy_1', () => capture(id));
    expect(outcome).toEqual({ released: 0, credited: 0, pending: 0 });
    expect((await live.payments.get(id))!.state).toBe('answered');
    expect(await creditsOf(id)).toBe(0);
    expect(Number(await peek.value("SELECT count(*) FROM ledger WHERE kind = 'onchain_credit' AND query_id = ?", `q_${id}`))).toBe(0);
  });

  test('behavior: a credit spent on an answer the live instance captured while the pass read it is not given back, and cannot pay twice', async () => {
    const { id, wallet } = await reserve('i_busy_2');
    const credit = await creditOf(wallet);
    expect(await live.payments.consumeCredit(credit, id)).toBe(true);
    await live.payments.advance(id, ['verified'], 'settled', { txHash: credit });
    await reconcileRacing('i_busy_2', () => capture(id));
    expect((await live.payments.get(id))!.state).toBe('answered');
    expect(await live.payments.openCredit('tempo', wallet)).toBeUndefined();
    // The wallet's next payment finds no credit to spend, and cannot take this one.
    const next = await reserve('i_other');
    expect(await live.payments.consumeCredit(credit, next.id)).toBe(false);
  });

  test('behavior: a credit spent by a payment the live instance settled and captured while the pass read it as verified stays spent', async () => {
    const { id, wallet } = await reserve('i_busy_3');
    const credit = await creditOf(wallet);
    expect(await live.payments.consumeCredit(credit, id)).toBe(true);
    await reconcileRacing('i_busy_3', async () => {
      await live.payments.advance(id, ['verified'], 'settled', { txHash: credit });
      await capture(id);
    });
    expect((await live.payments.get(id))!.state).toBe('answered');
    expect(await live.payments.openCredit('tempo', wallet)).toBeUndefined();
  });

  test('behavior: a payment the pass released first is the pass\'s: the live instance can neither settle nor capture it, and its credit is the wallet\'s again once', async () => {
    const { id, wallet } = await reserve('i_gone_4');
    const credit = await creditOf(wallet);
    expect(await live.payments.consumeCredit(credit, id)).toBe(true);
    expect(await reconcileRacing('i_gone_4', async () => undefined)).toEqual({ released: 1, credited: 0, pending: 0 });
    expect(await live.payments.advance(id, ['verified'], 'settling')).toBe(false);
    expect(await live.payments.advance(id, ['verified'], 'settled', { txHash: credit })).toBe(false);
    expect((await live.payments.openCredit('tempo', wallet))?.id).toBe(credit);
    // A second pass (another instance) finds nothing left to do.
    expect(await reconcileRacing('i_gone_4', async () => undefined)).toEqual({ released: 0, credited: 0, pending: 0 });
  });

  test('behavior: two passes on two processes settle one gone instance\'s payment once', async () => {
    const { id } = await reserve('i_gone_5');
    await live.payments.advance(id, ['verified'], 'settled', { txHash: `0x${'ef'.repeat(32)}` });
    const rails = Rails.fromConfig(config, reconciler);
    const pass = (store: Stores.Store) => OnchainPayment.reconcile(store, rails, { olderThanMs: OnchainPayment.reconcileAfterMs, instances: ['i_gone_5'] });
    const outcomes = engine === 'postgres' ? await Promise.all([pass(live), pass(reconciler)]) : [await pass(live), await pass(reconciler)];
    expect(outcomes.reduce((sum, o) => sum + o.credited, 0)).toBe(1);
    expect(await creditsOf(id)).toBe(1);
  });

  test('error: the database itself refuses a credit given back while the payment that spent it stands, and an answered or credited payment moved on', async () => {
    const { id, wallet } = await reserve('i_db');
    const credit = await creditOf(wallet);
    expect(await live.payments.consumeCredit(credit, id)).toBe(true);
    await live.payments.advance(id, ['verified'], 'settled', { txHash: credit });
    await capture(id);
    await expect(peek.run('UPDATE wallet_credits SET consumed_by = NULL, consumed_at = NULL WHERE id = ?', credit)).rejects.toThrow(/credit_spent_once/);
    await expect(peek.run("UPDATE payments SET state = 'credited' WHERE id = ?", id)).rejects.toThrow(/payment_final_state/);
    await expect(peek.run("UPDATE payments SET state = 'released' WHERE id = ?", id)).rejects.toThrow(/payment_final_state/);
    expect(await live.payments.openCredit('tempo', wallet)).toBeUndefined();
    // A released payment's transfer can still land (someone else sent it): released to credited is allowed.
    const other = await reserve('i_db');
    expect(await live.payments.release(other.id, { from: ['verified'], note: 'no answer' })).toBe(true);
    await expect(peek.run("UPDATE payments SET state = 'verified' WHERE id = ?", other.id)).rejects.toThrow(/payment_final_state/);
    expect(await live.payments.creditWallet(other.id, { from: ['released'], reason: 'sent by someone else', txHash: `0x${'12'.repeat(32)}` })).toMatch(/^credit_/);
    expect(await live.payments.creditWallet(other.id, { from: ['released'], reason: 'again' })).toBeUndefined();
  });

  test('behavior: a transfer someone else sent for a credential a credit answered is a payment of its own, credited once; the answered one holds no credit', async () => {
    const { id, wallet } = await reserve('i_sent');
    const credit = await creditOf(wallet);
    expect(await live.payments.consumeCredit(credit, id)).toBe(true);
    await live.payments.advance(id, ['verified'], 'settled', { txHash: credit, settleBy: Date.now() - 1 });
    await capture(id);
    const row = (await live.payments.get(id))!;
    const grants = await Promise.all([
      live.payments.creditSentTransfer(row, { txHash: `0x${'34'.repeat(32)}`, reason: 'sent by someone else' }),
      (engine === 'postgres' ? reconciler : live).payments.creditSentTransfer(row, { txHash: `0x${'34'.repeat(32)}`, reason: 'sent by someone else' }),
    ]);
    expect(grants.filter((g) => g !== undefined)).toHaveLength(1);
    expect(await creditsOf(id)).toBe(0);
    expect(await creditsOf(`${id}:sent`)).toBe(1);
    expect(await live.payments.get(`${id}:sent`)).toMatchObject({ state: 'credited', txHash: `0x${'34'.repeat(32)}`, wallet });
    expect((await live.payments.get(id))!).toMatchObject({ state: 'answered', settleBy: null });
  });

  test('behavior: a transfer the payer broadcast is recorded settled with its hash at once: a pass that claims its instance credits it, never releases it as if nothing moved', async () => {
    const id = `pay_${(n += 1)}`;
    const txHash = `0x${'56'.repeat(32)}`;
    expect(await live.payments.reserve({ id, spendKey: txHash, transfer: txHash, rail: 'tempo', wallet: '0xfeed', queryId: `q_${id}`, requestDigest: 'd', amountMillicents: 5_000, instanceId: 'i_pushed' })).toBe(true);
    expect(await live.payments.get(id)).toMatchObject({ state: 'settled', txHash });
    expect(await reconcileRacing('i_pushed', async () => undefined)).toEqual({ released: 0, credited: 1, pending: 0 });
    expect(await creditsOf(id)).toBe(1);
  });

  test('behavior: a claimed instance that comes back keeps what it took after the claim: the pass settles what it held when claimed', async () => {
    const held = await reserve('i_back');
    const claimedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    // Back (it was only frozen) and registered again under its id, it takes a new payment.
    const fresh = await reserve('i_back');
    const rows = await reconciler.payments.unfinished({ cutoff: 0, instances: ['i_back'], claimedAt });
    expect(rows.map((p) => p.id)).toEqual([held.id]);
    void fresh;
  });

  test('behavior: an instance\'s own payment left verified for longer than any request runs (its release failed) is released by its own pass; one it is settling is left to the call', async () => {
    const { id } = await reserve('i_self');
    await live.instances.renew({ id: 'i_self', name: 'self', now: Date.now() });
    const later = Date.now() + OnchainPayment.reconcileAfterMs + 1_000;
    const rails = Rails.fromConfig(config, live);
    const state = async () => (await live.payments.get(id))!.state;
    // Another live instance's pass never takes it; its own does, once it is old.
    await OnchainPayment.reconcile(reconciler, rails, { olderThanMs: OnchainPayment.reconcileAfterMs, now: later, own: 'i_other' });
    expect(await state()).toBe('verified');
    await OnchainPayment.reconcile(live, rails, { olderThanMs: OnchainPayment.reconcileAfterMs, now: Date.now(), own: 'i_self' });
    expect(await state()).toBe('verified');
    await OnchainPayment.reconcile(live, rails, { olderThanMs: OnchainPayment.reconcileAfterMs, now: later, own: 'i_self' });
    expect(await state()).toBe('released');
    // A settlement past its deadline whose rail call this process still waits on is the call's.
    const settling = await reserve('i_self');
    await live.payments.advance(settling.id, ['verified'], 'settling', { settleBy: Date.now() - 120_000 });
    await OnchainPayment.reconcile(live, rails, { olderThanMs: OnchainPayment.reconcileAfterMs, own: 'i_self', settling: new Set([settling.id]) });
    expect((await live.payments.get(settling.id))!.state).toBe('settling');
    // Its call over with no answer, the pass looks it up (no rail configured here: settling from before transfers were
    // kept cannot be told, so it waits).
    expect((await live.payments.unfinished({ cutoff: 0, own: 'i_self', settledBy: Date.now() })).map((p) => p.id)).toContain(settling.id);
    await live.instances.leave('i_self');
  });

  test('behavior: a settlement whose outcome was lost is looked up once past its deadline by its own instance, or by any once its instance is gone; never before, and never another live instance\'s', async () => {
    const { id } = await reserve('i_own');
    await live.instances.renew({ id: 'i_own', name: 'own', now: Date.now() });
    await live.payments.advance(id, ['verified'], 'settling', { settleBy: Date.now() + 60_000 });
    const pass = (store: Stores.Store, now: number, own?: string) => store.payments.unfinished({ cutoff: now - OnchainPayment.reconcileAfterMs, settledBy: now, own }).then((rows) => rows.map((p) => p.id));
    expect(await pass(live, Date.now(), 'i_own')).not.toContain(id);
    expect(await pass(live, Date.now() + 61_000, 'i_own')).toContain(id);
    // Another instance's pass leaves it alone while its instance lives, however late it is.
    expect(await pass(reconciler, Date.now() + 61_000, 'i_other')).not.toContain(id);
    // Its instance gone (its lease claimed, its other payments settled), any pass takes it once past its deadline.
    await live.instances.leave('i_own');
    expect(await pass(reconciler, Date.now(), 'i_other')).not.toContain(id);
    expect(await pass(reconciler, Date.now() + 61_000, 'i_other')).toContain(id);
  });
});
