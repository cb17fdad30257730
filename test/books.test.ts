import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type * as Books from '../src/store/Books.js';
import * as Stores from '../src/store/Store.js';
import type { OpenStore } from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';

const at = 1_700_000_000_000;

/** The same books on every engine: what adds up, and each way a forged or broken store does not. */
describe.each(Engines.engines)('Books.check on %s', (engine) => {
  let place: Awaited<ReturnType<typeof Engines.fresh>>;
  let store: OpenStore;
  let peek: Peek.Peek;

  beforeEach(async () => {
    place = await Engines.fresh(engine, 'books');
    store = (await Stores.open(place.target)).store;
    peek = await Peek.open(place.env);
    await balanced();
  });
  afterEach(async () => {
    await peek?.close();
    await store?.close();
    await place?.drop();
  });

  // Rows written as the service writes them, by hand: a checker is tested on states the service must never reach too.
  const payment = (id: string, state: string, creditId: string | null = null) =>
    peek.run(
      `INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, credit_id, created_at, updated_at)
       VALUES (?, ?, 'tempo', '0xabc', ?, 'digest', 5000, ?, ?, ?, ?)`,
      id,
      `spend-${id}`,
      `q_${id}`,
      state,
      creditId,
      at,
      at,
    );
  const credit = (id: string, paymentId: string, consumedBy: string | null = null) =>
    peek.run(
      `INSERT INTO wallet_credits (id, rail, wallet, amount_millicents, payment_id, reason, created_at, consumed_by, consumed_at) VALUES (?, 'tempo', '0xabc', 5000, ?, 'answer failed', ?, ?, ?)`,
      id,
      paymentId,
      at,
      consumedBy,
      consumedBy === null ? null : at,
    );
  const entry = (kind: string, input: { queryId?: string; reference?: string; accountId?: string; credits?: number } = {}) =>
    peek.run(
      'INSERT INTO ledger (created_at, account_id, kind, credits_delta, usd_micros, query_id, reference) VALUES (?, ?, ?, ?, 50000, ?, ?)',
      at,
      input.accountId ?? null,
      kind,
      input.credits ?? 0,
      input.queryId ?? null,
      input.reference ?? null,
    );

  /**
   * Books that add up, with a row of every kind the rules read: balances from grants and a charge, a charge answered
   * and one reversed, a payment answered by a transfer, one credited, one answered by that credit, one released
   * whose credit was given back, and payments still under way.
   */
  async function balanced(): Promise<void> {
    const acme = await store.accounts.create({ name: 'acme' });
    await store.ledger.move({ accountId: acme.id, kind: 'grant', creditsDelta: 9_000, unlocksDelta: 5 });
    await store.ledger.move({ accountId: acme.id, kind: 'grant', creditsDelta: 1_000 });
    for (const [query, outcome] of [
      ['q_answered', 'query_answered'],
      ['q_reversed', 'query_reversal'],
    ] as const) {
      await store.ledger.move({ accountId: acme.id, kind: 'query_charge', creditsDelta: -10, queryId: query });
      await store.ledger.move({ accountId: acme.id, kind: outcome, creditsDelta: outcome === 'query_reversal' ? 10 : 0, queryId: query });
    }
    await payment('pay_paid', 'answered');
    await entry('onchain_payment', { queryId: 'q_pay_paid' });
    await payment('pay_credited', 'credited');
    await credit('credit_1', 'pay_credited');
    await entry('onchain_credit', { queryId: 'q_pay_credited', reference: 'credit_1' });
    await payment('pay_by_credit', 'answered', 'credit_1');
    await peek.run('UPDATE wallet_credits SET consumed_by = ? WHERE id = ?', 'pay_by_credit', 'credit_1');
    await entry('onchain_credit_spent', { queryId: 'q_pay_by_credit' });
    await payment('pay_given_back', 'released', 'credit_1');
    for (const state of ['verified', 'settling', 'settled']) await payment(`pay_${state}`, state);
  }

  test('behavior: books that add up have no problem', async () => {
    expect(await store.books.check()).toEqual([]);
  });

  test('error: a balance that is not its ledger sum, or below zero, is named with the account and both figures', async () => {
    await peek.run("UPDATE accounts SET credit_balance = 999999999 WHERE name = 'acme'");
    await lift(peek);
    const other = await store.accounts.create({ name: 'negative' });
    await peek.run('UPDATE accounts SET unlock_balance = -3 WHERE id = ?', other.id);
    await entry('grant', { accountId: 'acct_gone', credits: 40 });
    expect(await listed()).toEqual([
      'balance | account acme | account acme: credit balance 999,999,999, but its ledger rows sum to 9,990',
      'balance | account negative | account negative: unlock balance -3, but its ledger rows sum to 0',
      'balance | account negative | account negative: unlock balance -3 is below zero',
      'balance | account acct_gone | 1 ledger rows name account acct_gone, which does not exist (unlocks 0, credits 40)',
    ]);
  });

  test('error: a payment whose state the ledger and credits disagree with is named with its state and what disagrees', async () => {
    // A released payment forged as answered: no answer was paid for it.
    await payment('pay_forged', 'answered');
    await payment('pay_twice', 'answered');
    await entry('onchain_payment', { queryId: 'q_pay_twice' });
    await credit('credit_2', 'pay_twice');
    await entry('onchain_credit', { reference: 'credit_2' });
    await payment('pay_uncredited', 'credited');
    await payment('pay_unrecorded', 'credited');
    await credit('credit_3', 'pay_unrecorded');
    await payment('pay_late', 'settled');
    await entry('onchain_payment', { queryId: 'q_pay_late' });
    expect(await listed()).toEqual([
      'payment | payment pay_forged | payment pay_forged is answered, but its query q_pay_forged has 0 onchain_payment/onchain_credit_spent ledger rows (an answered payment has 1)',
      'payment | payment pay_late | payment pay_late is settled, but its query q_pay_late has 1 onchain_payment/onchain_credit_spent ledger row (only an answered payment has one)',
      'payment | payment pay_twice | payment pay_twice is answered, but it was also given a wallet credit (credit_2) (an answered payment gets none)',
      'payment | payment pay_uncredited | payment pay_uncredited is credited, but it has 0 wallet credits (a credited payment has 1)',
      'payment | payment pay_unrecorded | payment pay_unrecorded is credited, but its credit credit_3 has 0 onchain_credit ledger rows (1 names it)',
      // The same credit, seen from the credit's side.
      'credit | credit credit_2 | credit credit_2 was granted for payment pay_twice, which is answered, not credited',
    ]);
  });

  test('error: credits granted for a payment that is gone, spent twice, or marked consumed by a payment that does not name them', async () => {
    await lift(peek);
    await credit('credit_orphan', 'pay_nowhere');
    await entry('onchain_credit', { reference: 'credit_orphan' });
    await payment('pay_second', 'answered', 'credit_1');
    await entry('onchain_credit_spent', { queryId: 'q_pay_second' });
    await payment('pay_fresh', 'credited');
    await credit('credit_4', 'pay_fresh', 'pay_paid');
    await entry('onchain_credit', { reference: 'credit_4' });
    expect(await listed()).toEqual([
      'credit | credit credit_orphan | credit credit_orphan was granted for payment pay_nowhere, which does not exist',
      'credit | credit credit_1 | credit credit_1 is spent by 2 payments that were not released: pay_by_credit (answered), pay_second (answered) (at most 1)',
      'credit | credit credit_4 | credit credit_4 is marked consumed by payment pay_paid, which spent no credit',
    ]);
  });

  test('error: on-chain ledger rows that belong to no payment, and charges taken twice or both answered and reversed', async () => {
    await entry('onchain_payment', { queryId: 'q_nobody' });
    await entry('onchain_credit', { reference: 'credit_nobody' });
    const acme = (await store.accounts.find('acme'))!;
    await store.ledger.move({ accountId: acme.id, kind: 'query_charge', creditsDelta: -10, queryId: 'q_answered' });
    await store.ledger.move({ accountId: acme.id, kind: 'query_reversal', creditsDelta: 10, queryId: 'q_answered' });
    const rows = await peek.column<number>("SELECT id FROM ledger WHERE kind IN ('onchain_payment', 'onchain_credit') AND (query_id = 'q_nobody' OR reference = 'credit_nobody') ORDER BY id");
    expect(await listed()).toEqual([
      `ledger | ledger row ${rows[0]} | ledger row ${rows[0]} (onchain_payment) is for query q_nobody, which no payment has`,
      `ledger | ledger row ${rows[1]} | ledger row ${rows[1]} (onchain_credit) names credit credit_nobody, which does not exist`,
      'charge | query q_answered | query q_answered has 2 query_charge ledger rows (at most 1)',
      'charge | query q_answered | query q_answered is both answered and reversed (1 query_answered ledger row, 1 query_reversal ledger row)',
    ]);
  });

  /** The problems as one line each: rule, subject, message. */
  async function listed(): Promise<string[]> {
    return (await store.books.check()).map((p: Books.Problem) => `${p.rule} | ${p.subject} | ${p.message}`);
  }
});

/** Lifts the constraints a forger of a backup would not keep (checks and foreign keys), for this store only. */
async function lift(peek: Peek.Peek): Promise<void> {
  if (peek.engine === 'sqlite') {
    await peek.run('PRAGMA foreign_keys = OFF');
    await peek.run('PRAGMA ignore_check_constraints = ON');
    return;
  }
  await peek.run(`DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT conrelid::regclass AS t, conname FROM pg_constraint WHERE contype IN ('f', 'c') AND connamespace = current_schema()::regnamespace LOOP
      EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname);
    END LOOP; END $$`);
}
