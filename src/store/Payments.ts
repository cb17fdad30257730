import type { Rail } from '../contract/Quote.js';
import type { Database } from './Database.js';
import * as Ids from './Ids.js';
import * as Ledger from './Ledger.js';

/** How far an on-chain payment got: verified (reserved), settling (money may be moving), settled, then answered; or released or credited. */
export type PaymentState = 'verified' | 'settling' | 'settled' | 'answered' | 'released' | 'credited';

export type PaymentRow = {
  id: string;
  spendKey: string;
  rail: Rail;
  wallet: string;
  queryId: string;
  requestDigest: string;
  amountMillicents: number;
  state: PaymentState;
  txHash: string | null;
  receipt: string | null;
  /** The credit this payment spent instead of a transfer, if it did. */
  creditId: string | null;
  /** When (ms) the transfer can no longer land: its authorization's or signed transaction's expiry; null before it was kept. */
  settleBy: number | null;
  note: string;
  createdAt: number;
  updatedAt: number;
};

export type Credit = { id: string; rail: Rail; wallet: string; amountMillicents: number; paymentId: string; reason: string; createdAt: number };

const columns = `id, spend_key AS spendKey, rail, wallet, query_id AS queryId, request_digest AS requestDigest, amount_millicents AS amountMillicents,
  state, tx_hash AS txHash, receipt, credit_id AS creditId, settle_by AS settleBy, note, created_at AS createdAt, updated_at AS updatedAt`;

/**
 * Records a verified credential as spent, before anything else happens to it. False when its challenge or its transfer
 * was spent already, or when the transfer it carries (`transfer`: a transaction already on chain) is one another
 * payment accounts for, this server's own broadcasts included: the one place a replay, a parallel copy, or a
 * transfer presented twice is turned away.
 */
export function reserve(
  db: Database,
  row: {
    id: string;
    spendKey: string;
    transfer?: string | undefined;
    rail: Rail;
    wallet: string;
    queryId: string;
    requestDigest: string;
    amountMillicents: number;
    /** When (ms) the credential's transfer can no longer land, for one nobody has sent yet. */
    settleBy?: number | undefined;
  },
): boolean {
  const now = Date.now();
  const transfer = row.transfer?.toLowerCase() ?? null;
  const result = db
    .prepare(
      `INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, settle_by, created_at, updated_at)
       SELECT ?, ?, ?, ?, ?, ?, ?, 'verified', ?, ?, ?
       WHERE ? IS NULL OR NOT EXISTS (SELECT 1 FROM payments WHERE lower(tx_hash) = ? OR spend_key = ?)
       ON CONFLICT DO NOTHING`,
    )
    .run(row.id, row.spendKey, row.rail, row.wallet.toLowerCase(), row.queryId, row.requestDigest, row.amountMillicents, row.settleBy ?? null, now, now, transfer, transfer, transfer);
  return result.changes === 1;
}

/** Moves a payment from one of `from` to `to`; false when it was not in one of them (someone else moved it). */
export function advance(
  db: Database,
  id: string,
  from: PaymentState[],
  to: PaymentState,
  fields: { txHash?: string; receipt?: string; note?: string; settleBy?: number } = {},
): boolean {
  const result = db
    .prepare(
      `UPDATE payments SET state = ?, tx_hash = COALESCE(?, tx_hash), receipt = COALESCE(?, receipt), note = COALESCE(?, note),
         settle_by = COALESCE(?, settle_by), updated_at = ?
       WHERE id = ? AND state IN (${from.map(() => '?').join(', ')})`,
    )
    .run(to, fields.txHash ?? null, fields.receipt ?? null, fields.note ?? null, fields.settleBy ?? null, Date.now(), id, ...from);
  return result.changes === 1;
}

/**
 * Keeps the hash of a transfer about to be broadcast on its settling payment, before it leaves: after a crash,
 * reconciliation looks that transaction up instead of guessing. False when the payment is no longer settling.
 */
export function recordTransfer(db: Database, id: string, txHash: string): boolean {
  return db.prepare(`UPDATE payments SET tx_hash = ?, updated_at = ? WHERE id = ? AND state = 'settling'`).run(txHash, Date.now(), id).changes === 1;
}

/**
 * Binds the transfer a credential carries to the challenge it was first presented with, whatever then becomes of
 * it. Returns the challenge it is bound to: this one, or the one it came with first.
 */
export function bindCredential(db: Database, binding: { spendKey: string; rail: Rail; challengeId: string }): string {
  db.prepare(`INSERT INTO credential_bindings (spend_key, rail, challenge_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`).run(
    binding.spendKey,
    binding.rail,
    binding.challengeId,
    Date.now(),
  );
  return db.prepare('SELECT challenge_id FROM credential_bindings WHERE spend_key = ?').pluck().get(binding.spendKey) as string;
}

export function get(db: Database, id: string): PaymentRow | undefined {
  return db.prepare(`SELECT ${columns} FROM payments WHERE id = ?`).get(id) as PaymentRow | undefined;
}

export function byQuery(db: Database, queryId: string): PaymentRow | undefined {
  return db.prepare(`SELECT ${columns} FROM payments WHERE query_id = ?`).get(queryId) as PaymentRow | undefined;
}

/** Payments left part-way (verified, settling or settled, never answered nor released) since before `cutoff`. */
export function unfinished(db: Database, cutoff: number): PaymentRow[] {
  return db.prepare(`SELECT ${columns} FROM payments WHERE state IN ('verified', 'settling', 'settled') AND updated_at < ? ORDER BY created_at`).all(cutoff) as PaymentRow[];
}

/**
 * Payments whose credential this server never settled (released, or answered by a credit instead) and whose transfer
 * could land until `before`: someone else who held the signed credential may have sent it meanwhile.
 */
export function lapsed(db: Database, before: number): PaymentRow[] {
  return db
    .prepare(`SELECT ${columns} FROM payments WHERE settle_by IS NOT NULL AND settle_by < ? AND (state = 'released' OR (state = 'answered' AND credit_id IS NOT NULL)) ORDER BY created_at`)
    .all(before) as PaymentRow[];
}

/** A payment's transfer can no longer land, and was looked up once it could not: nothing more to watch. */
export function stopWatching(db: Database, id: string): void {
  db.prepare('UPDATE payments SET settle_by = NULL WHERE id = ?').run(id);
}

/** Bindings older than `before`: their credentials expired with their challenges. Returns how many went. */
export function pruneBindings(db: Database, before: number): number {
  return db.prepare('DELETE FROM credential_bindings WHERE created_at < ?').run(before).changes;
}

/** Money moved for a payment that got no answer: the wallet is owed one answer on the same rail. Marks the payment credited. */
export function grantCredit(db: Database, payment: PaymentRow, reason: string): string {
  return db.transaction(() => {
    const existing = db.prepare('SELECT id FROM wallet_credits WHERE payment_id = ?').pluck().get(payment.id) as string | undefined;
    if (existing) return existing;
    const id = Ids.random('credit');
    db.prepare(
      `INSERT INTO wallet_credits (id, rail, wallet, amount_millicents, payment_id, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(id, payment.rail, payment.wallet.toLowerCase(), payment.amountMillicents, payment.id, reason, Date.now());
    advance(db, payment.id, ['verified', 'settling', 'settled', 'released'], 'credited', { note: reason });
    Ledger.append(db, { kind: 'onchain_credit', usdMicros: payment.amountMillicents * 10, queryId: payment.queryId, reference: id, memo: `${payment.rail} credit for ${payment.wallet}: ${reason}` });
    return id;
  }).immediate();
}

/** The oldest unconsumed credit of a wallet on a rail. */
export function openCredit(db: Database, rail: Rail, wallet: string): Credit | undefined {
  return db
    .prepare(
      `SELECT id, rail, wallet, amount_millicents AS amountMillicents, payment_id AS paymentId, reason, created_at AS createdAt
       FROM wallet_credits WHERE rail = ? AND wallet = ? AND consumed_by IS NULL ORDER BY created_at LIMIT 1`,
    )
    .get(rail, wallet.toLowerCase()) as Credit | undefined;
}

/** Spends a credit for a payment, and notes it on the payment; false when another payment consumed it first. */
export function consumeCredit(db: Database, creditId: string, paymentId: string): boolean {
  return db.transaction(() => {
    const result = db.prepare('UPDATE wallet_credits SET consumed_by = ?, consumed_at = ? WHERE id = ? AND consumed_by IS NULL').run(paymentId, Date.now(), creditId);
    if (result.changes === 1) db.prepare('UPDATE payments SET credit_id = ? WHERE id = ?').run(creditId, paymentId);
    return result.changes === 1;
  }).immediate();
}

/** Gives a consumed credit back (the answer it was spent on failed). */
export function restoreCredit(db: Database, creditId: string, paymentId: string): void {
  db.prepare('UPDATE wallet_credits SET consumed_by = NULL, consumed_at = NULL WHERE id = ? AND consumed_by = ?').run(creditId, paymentId);
}

/** The newest on-chain payments, optionally of one wallet, with the credit each left behind, if any. */
export function recent(db: Database, options: { wallet?: string; limit: number }): (PaymentRow & { creditLeft: string | null })[] {
  const wallet = options.wallet?.toLowerCase() ?? null;
  return db
    .prepare(
      `SELECT p.*, c.id AS creditLeft FROM (SELECT ${columns} FROM payments WHERE (? IS NULL OR wallet = ?)) p
       LEFT JOIN wallet_credits c ON c.payment_id = p.id ORDER BY p.createdAt DESC LIMIT ?`,
    )
    .all(wallet, wallet, options.limit) as (PaymentRow & { creditLeft: string | null })[];
}
