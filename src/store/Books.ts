import { bytewise, type Sql } from './Sql.js';

/**
 * Whether a store's books add up: every account's balances are the sums of its ledger rows, and every on-chain
 * payment's state agrees with the ledger and the wallet credits. Read only; run on a restored store before it is
 * trusted (and by tests, and by an audit).
 */

/** Which rule a problem breaks. */
export type Rule = 'balance' | 'payment' | 'credit' | 'ledger' | 'charge';

/** One thing that does not add up, named with its figures. */
export type Problem = {
  rule: Rule;
  /** What it is about: `account acme`, `payment pay_…`, `credit credit_…`, `ledger row 42`, `query q_…`. */
  subject: string;
  /** What disagrees, in figures. */
  message: string;
};

/** The ledger kinds that record an answer paid on-chain, by a transfer or by a credit. */
const paidKinds = `('onchain_payment', 'onchain_credit_spent')`;

const figure = (n: number) => n.toLocaleString('en-US');
const rows = (n: number, kind: string) => `${figure(n)} ${kind} ledger row${n === 1 ? '' : 's'}`;

/** Every problem in the store's books, in the order of the rules; none when they add up. */
export async function check(sql: Sql): Promise<Problem[]> {
  return [...(await balances(sql)), ...(await payments(sql)), ...(await credits(sql)), ...(await ledger(sql)), ...(await charges(sql))];
}

/** Balances that are not their ledger's sums, or below zero; ledger rows of accounts that do not exist. */
async function balances(sql: Sql): Promise<Problem[]> {
  const found = await sql.all<{ name: string; unlocks: number; credits: number; ledgerUnlocks: number; ledgerCredits: number }>(
    `SELECT a.name, a.unlock_balance AS unlocks, a.credit_balance AS credits,
            coalesce(l.unlocks, 0) AS ledgerUnlocks, coalesce(l.credits, 0) AS ledgerCredits
     FROM accounts a
     LEFT JOIN (SELECT account_id, sum(unlocks_delta) AS unlocks, sum(credits_delta) AS credits FROM ledger WHERE account_id IS NOT NULL GROUP BY account_id) l
       ON l.account_id = a.id
     WHERE a.unlock_balance <> coalesce(l.unlocks, 0) OR a.credit_balance <> coalesce(l.credits, 0) OR a.unlock_balance < 0 OR a.credit_balance < 0
     ORDER BY ${bytewise(sql, 'a.name')}`,
  );
  const problems: Problem[] = [];
  for (const a of found) {
    for (const [word, balance, sum] of [
      ['unlock', Number(a.unlocks), Number(a.ledgerUnlocks)],
      ['credit', Number(a.credits), Number(a.ledgerCredits)],
    ] as const) {
      if (balance !== sum) problems.push({ rule: 'balance', subject: `account ${a.name}`, message: `account ${a.name}: ${word} balance ${figure(balance)}, but its ledger rows sum to ${figure(sum)}` });
      if (balance < 0) problems.push({ rule: 'balance', subject: `account ${a.name}`, message: `account ${a.name}: ${word} balance ${figure(balance)} is below zero` });
    }
  }
  const orphans = await sql.all<{ accountId: string; n: number; unlocks: number; credits: number }>(
    `SELECT account_id AS accountId, count(*) AS n, sum(unlocks_delta) AS unlocks, sum(credits_delta) AS credits FROM ledger l
     WHERE account_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = l.account_id)
     GROUP BY account_id ORDER BY account_id`,
  );
  for (const o of orphans) {
    problems.push({
      rule: 'balance',
      subject: `account ${o.accountId}`,
      message: `${figure(Number(o.n))} ledger rows name account ${o.accountId}, which does not exist (unlocks ${figure(Number(o.unlocks))}, credits ${figure(Number(o.credits))})`,
    });
  }
  return problems;
}

type PaymentFigures = { id: string; state: string; queryId: string; paid: number; credits: number; creditId: string | null; creditRows: number };

/**
 * Payments whose state disagrees with the ledger and the credits: an answered one has one paid row and no credit; a
 * credited one has one credit, one `onchain_credit` row naming it, and no paid row; any other has neither.
 */
async function payments(sql: Sql): Promise<Problem[]> {
  const found = await sql.all<PaymentFigures>(
    `SELECT p.id, p.state, p.query_id AS queryId, coalesce(paid.n, 0) AS paid, coalesce(c.n, 0) AS credits, c.id AS creditId, coalesce(cr.n, 0) AS creditRows
     FROM payments p
     LEFT JOIN (SELECT query_id, count(*) AS n FROM ledger WHERE kind IN ${paidKinds} AND query_id IS NOT NULL GROUP BY query_id) paid ON paid.query_id = p.query_id
     LEFT JOIN (SELECT payment_id, count(*) AS n, min(id) AS id FROM wallet_credits GROUP BY payment_id) c ON c.payment_id = p.id
     LEFT JOIN (SELECT w.payment_id, sum(r.n) AS n FROM wallet_credits w
                JOIN (SELECT reference, count(*) AS n FROM ledger WHERE kind = 'onchain_credit' AND reference IS NOT NULL GROUP BY reference) r ON r.reference = w.id
                GROUP BY w.payment_id) cr ON cr.payment_id = p.id
     WHERE (p.state = 'answered' AND (coalesce(paid.n, 0) <> 1 OR coalesce(c.n, 0) <> 0))
        OR (p.state = 'credited' AND (coalesce(c.n, 0) <> 1 OR coalesce(cr.n, 0) <> 1 OR coalesce(paid.n, 0) <> 0))
        OR (p.state NOT IN ('answered', 'credited') AND (coalesce(paid.n, 0) <> 0 OR coalesce(c.n, 0) <> 0))
     ORDER BY p.id`,
  );
  return found.map((p) => {
    const paid = Number(p.paid);
    const credits = Number(p.credits);
    const creditRows = Number(p.creditRows);
    const wrong: string[] = [];
    if (p.state === 'answered') {
      if (paid !== 1) wrong.push(`its query ${p.queryId} has ${rows(paid, 'onchain_payment/onchain_credit_spent')} (an answered payment has 1)`);
      if (credits > 0) wrong.push(`it was also given ${credits === 1 ? `a wallet credit (${p.creditId})` : `${figure(credits)} wallet credits`} (an answered payment gets none)`);
    } else if (p.state === 'credited') {
      if (credits !== 1) wrong.push(`it has ${figure(credits)} wallet credits (a credited payment has 1)`);
      if (credits === 1 && creditRows !== 1) wrong.push(`its credit ${p.creditId} has ${rows(creditRows, 'onchain_credit')} (1 names it)`);
      if (paid > 0) wrong.push(`its query ${p.queryId} also has ${rows(paid, 'onchain_payment/onchain_credit_spent')} (an answer was paid as well)`);
    } else {
      if (paid > 0) wrong.push(`its query ${p.queryId} has ${rows(paid, 'onchain_payment/onchain_credit_spent')} (only an answered payment has one)`);
      if (credits > 0) wrong.push(`it has ${credits === 1 ? `a wallet credit (${p.creditId})` : `${figure(credits)} wallet credits`} (only a credited payment has one)`);
    }
    return { rule: 'payment' as const, subject: `payment ${p.id}`, message: `payment ${p.id} is ${p.state}, but ${wrong.join('; and ')}` };
  });
}

/**
 * Credits that do not stand: granted for a payment that is missing or not credited, spent by more than one payment
 * that was not released, or marked consumed by a payment that does not name it.
 */
async function credits(sql: Sql): Promise<Problem[]> {
  const problems: Problem[] = [];
  const granted = await sql.all<{ id: string; paymentId: string; state: string | null }>(
    `SELECT c.id, c.payment_id AS paymentId, p.state FROM wallet_credits c LEFT JOIN payments p ON p.id = c.payment_id
     WHERE p.id IS NULL OR p.state <> 'credited' ORDER BY c.id`,
  );
  for (const c of granted) {
    problems.push({
      rule: 'credit',
      subject: `credit ${c.id}`,
      message: c.state === null ? `credit ${c.id} was granted for payment ${c.paymentId}, which does not exist` : `credit ${c.id} was granted for payment ${c.paymentId}, which is ${c.state}, not credited`,
    });
  }
  const spent = await sql.all<{ creditId: string; id: string; state: string }>(
    `SELECT credit_id AS creditId, id, state FROM payments
     WHERE state <> 'released' AND credit_id IN (SELECT credit_id FROM payments WHERE credit_id IS NOT NULL AND state <> 'released' GROUP BY credit_id HAVING count(*) > 1)
     ORDER BY credit_id, id`,
  );
  const spenders = new Map<string, string[]>();
  for (const s of spent) spenders.set(s.creditId, [...(spenders.get(s.creditId) ?? []), `${s.id} (${s.state})`]);
  for (const [creditId, by] of spenders) {
    problems.push({ rule: 'credit', subject: `credit ${creditId}`, message: `credit ${creditId} is spent by ${figure(by.length)} payments that were not released: ${by.join(', ')} (at most 1)` });
  }
  const consumed = await sql.all<{ id: string; consumedBy: string; found: string | null; creditId: string | null }>(
    `SELECT c.id, c.consumed_by AS consumedBy, p.id AS found, p.credit_id AS creditId FROM wallet_credits c LEFT JOIN payments p ON p.id = c.consumed_by
     WHERE c.consumed_by IS NOT NULL AND (p.id IS NULL OR p.credit_id IS NULL OR p.credit_id <> c.id) ORDER BY c.id`,
  );
  for (const c of consumed) {
    problems.push({
      rule: 'credit',
      subject: `credit ${c.id}`,
      message:
        c.found === null
          ? `credit ${c.id} is marked consumed by payment ${c.consumedBy}, which does not exist`
          : `credit ${c.id} is marked consumed by payment ${c.consumedBy}, which spent ${c.creditId === null ? 'no credit' : `credit ${c.creditId}`}`,
    });
  }
  return problems;
}

/** On-chain ledger rows that belong to no payment: a paid row by its query, a credit row by the credit it names. */
async function ledger(sql: Sql): Promise<Problem[]> {
  const found = await sql.all<{ id: number; kind: string; queryId: string | null; reference: string | null }>(
    `SELECT l.id, l.kind, l.query_id AS queryId, l.reference FROM ledger l
     WHERE (l.kind IN ${paidKinds} AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.query_id = l.query_id))
        OR (l.kind = 'onchain_credit' AND NOT EXISTS (SELECT 1 FROM wallet_credits c WHERE c.id = l.reference))
     ORDER BY l.id`,
  );
  return found.map((l) => ({
    rule: 'ledger' as const,
    subject: `ledger row ${l.id}`,
    message:
      l.kind === 'onchain_credit'
        ? `ledger row ${l.id} (onchain_credit) names credit ${l.reference ?? '(none)'}, which does not exist`
        : `ledger row ${l.id} (${l.kind}) is for query ${l.queryId ?? '(none)'}, which no payment has`,
  }));
}

/** Queries charged more than once, or both answered and reversed. */
async function charges(sql: Sql): Promise<Problem[]> {
  const found = await sql.all<{ queryId: string; charges: number; answered: number; reversed: number }>(
    `SELECT query_id AS queryId,
            sum(CASE WHEN kind = 'query_charge' THEN 1 ELSE 0 END) AS charges,
            sum(CASE WHEN kind = 'query_answered' THEN 1 ELSE 0 END) AS answered,
            sum(CASE WHEN kind = 'query_reversal' THEN 1 ELSE 0 END) AS reversed
     FROM ledger WHERE query_id IS NOT NULL AND kind IN ('query_charge', 'query_answered', 'query_reversal')
     GROUP BY query_id
     HAVING sum(CASE WHEN kind = 'query_charge' THEN 1 ELSE 0 END) > 1
         OR (sum(CASE WHEN kind = 'query_answered' THEN 1 ELSE 0 END) > 0 AND sum(CASE WHEN kind = 'query_reversal' THEN 1 ELSE 0 END) > 0)
     ORDER BY query_id`,
  );
  const problems: Problem[] = [];
  for (const q of found) {
    if (Number(q.charges) > 1) problems.push({ rule: 'charge', subject: `query ${q.queryId}`, message: `query ${q.queryId} has ${rows(Number(q.charges), 'query_charge')} (at most 1)` });
    if (Number(q.answered) > 0 && Number(q.reversed) > 0) {
      problems.push({ rule: 'charge', subject: `query ${q.queryId}`, message: `query ${q.queryId} is both answered and reversed (${rows(Number(q.answered), 'query_answered')}, ${rows(Number(q.reversed), 'query_reversal')})` });
    }
  }
  return problems;
}
