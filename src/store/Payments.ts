import type { Rail } from '../contract/Quote.js';
import * as Ids from './Ids.js';
import * as Ledger from './Ledger.js';
import type { Sql } from './Sql.js';

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
export async function reserve(
  sql: Sql,
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
    /** The serving process that takes the payment: reconciliation settles only what a process that is gone left. */
    instanceId?: string | undefined;
  },
): Promise<boolean> {
  const now = Date.now();
  const transfer = row.transfer?.toLowerCase() ?? null;
  return sql.transaction(async (tx) => {
    // The transfer is not a unique key (a payment records its own broadcast too): on PostgreSQL, reservations of one
    // transfer take turns, so two cannot both see it unclaimed. SQLite's write lock already does.
    if (transfer !== null && tx.dialect === 'postgres') await tx.get('SELECT pg_advisory_xact_lock(hashtext(?)) AS locked', [transfer]);
    const changed = await tx.run(
      `INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, settle_by, created_at, updated_at, instance_id)
       SELECT ?, ?, ?, ?, ?, ?, ?, 'verified', ?, ?, ?, ?
       WHERE CAST(? AS TEXT) IS NULL OR NOT EXISTS (SELECT 1 FROM payments WHERE lower(tx_hash) = ? OR spend_key = ?)
       ON CONFLICT DO NOTHING`,
      [row.id, row.spendKey, row.rail, row.wallet.toLowerCase(), row.queryId, row.requestDigest, row.amountMillicents, row.settleBy ?? null, now, now, row.instanceId ?? null, transfer, transfer, transfer],
    );
    return changed === 1;
  });
}

/** Moves a payment from one of `from` to `to`; false when it was not in one of them (someone else moved it). */
export async function advance(
  sql: Sql,
  id: string,
  from: PaymentState[],
  to: PaymentState,
  fields: { txHash?: string; receipt?: string; note?: string; settleBy?: number } = {},
): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE payments SET state = ?, tx_hash = COALESCE(?, tx_hash), receipt = COALESCE(?, receipt), note = COALESCE(?, note),
       settle_by = COALESCE(?, settle_by), updated_at = ?
     WHERE id = ? AND state IN (${from.map(() => '?').join(', ')})`,
    [to, fields.txHash ?? null, fields.receipt ?? null, fields.note ?? null, fields.settleBy ?? null, Date.now(), id, ...from],
  );
  return changed === 1;
}

/**
 * Keeps the hash of a transfer about to be broadcast on its settling payment, before it leaves: after a crash,
 * reconciliation looks that transaction up instead of guessing. False when the payment is no longer settling.
 */
export async function recordTransfer(sql: Sql, id: string, txHash: string): Promise<boolean> {
  return (await sql.run(`UPDATE payments SET tx_hash = ?, updated_at = ? WHERE id = ? AND state = 'settling'`, [txHash, Date.now(), id])) === 1;
}

/**
 * Binds the transfer a credential carries to the challenge it was first presented with, whatever then becomes of
 * it. Returns the challenge it is bound to: this one, or the one it came with first.
 */
export async function bindCredential(sql: Sql, binding: { spendKey: string; rail: Rail; challengeId: string }): Promise<string> {
  await sql.run(`INSERT INTO credential_bindings (spend_key, rail, challenge_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, [
    binding.spendKey,
    binding.rail,
    binding.challengeId,
    Date.now(),
  ]);
  return (await sql.get<{ challengeId: string }>('SELECT challenge_id AS challengeId FROM credential_bindings WHERE spend_key = ?', [binding.spendKey]))!.challengeId;
}

export async function get(sql: Sql, id: string): Promise<PaymentRow | undefined> {
  return sql.get<PaymentRow>(`SELECT ${columns} FROM payments WHERE id = ?`, [id]);
}

export async function byQuery(sql: Sql, queryId: string): Promise<PaymentRow | undefined> {
  return sql.get<PaymentRow>(`SELECT ${columns} FROM payments WHERE query_id = ?`, [queryId]);
}

/**
 * Payments left part-way (verified, settling or settled, never answered nor released) by a process that is not
 * serving: untouched since before `cutoff` and taken by a process that is gone or by none (a live instance's payment
 * in flight is its own, however long it takes), or taken by one of `instances` (whose lease ran out) at any time.
 */
export async function unfinished(sql: Sql, cutoff: number, instances: readonly string[] = []): Promise<PaymentRow[]> {
  const claimed = instances.length > 0 ? ` OR instance_id IN (${instances.map(() => '?').join(', ')})` : '';
  return sql.all<PaymentRow>(
    `SELECT ${columns} FROM payments p WHERE state IN ('verified', 'settling', 'settled')
       AND ((updated_at < ? AND (instance_id IS NULL OR NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = p.instance_id)))${claimed})
     ORDER BY created_at, id`,
    [cutoff, ...instances],
  );
}

/**
 * Payments whose credential this server never settled (released, or answered by a credit instead) and whose transfer
 * could land until `before`: someone else who held the signed credential may have sent it meanwhile.
 */
export async function lapsed(sql: Sql, before: number): Promise<PaymentRow[]> {
  return sql.all<PaymentRow>(
    `SELECT ${columns} FROM payments WHERE settle_by IS NOT NULL AND settle_by < ? AND (state = 'released' OR (state = 'answered' AND credit_id IS NOT NULL)) ORDER BY created_at, id`,
    [before],
  );
}

/** A payment's transfer can no longer land, and was looked up once it could not: nothing more to watch. */
export async function stopWatching(sql: Sql, id: string): Promise<void> {
  await sql.run('UPDATE payments SET settle_by = NULL WHERE id = ?', [id]);
}

/** Bindings older than `before`: their credentials expired with their challenges. Returns how many went. */
export async function pruneBindings(sql: Sql, before: number): Promise<number> {
  return sql.run('DELETE FROM credential_bindings WHERE created_at < ?', [before]);
}

/**
 * Claims a credential's transfer for one request while it is checked with its chain or facilitator: 'claimed', or why
 * not: 'spent' (a payment already accounts for it) or 'busy' (another request claimed it since `staleBefore`). Two
 * requests claiming at once are serialized on the row: one wins.
 */
/** Whether a payment already accounts for this transfer (its spend key, or the hash it was sent as). Writes nothing. */
export async function spent(sql: Sql, spendKey: string): Promise<boolean> {
  return (await sql.get('SELECT 1 AS spent FROM payments WHERE spend_key = ? OR lower(tx_hash) = ?', [spendKey, spendKey.toLowerCase()])) !== undefined;
}

export async function claimCredential(sql: Sql, claim: { spendKey: string; claimant: string; now: number; staleBefore: number }): Promise<'claimed' | 'spent' | 'busy'> {
  const row = await sql.get<{ claimant: string }>(
    `INSERT INTO credential_claims (spend_key, claimant, claimed_at) VALUES (?, ?, ?)
     ON CONFLICT (spend_key) DO UPDATE SET claimant = excluded.claimant, claimed_at = excluded.claimed_at WHERE credential_claims.claimed_at < ?
     RETURNING claimant`,
    [claim.spendKey, claim.claimant, claim.now, claim.staleBefore],
  );
  if (row?.claimant !== claim.claimant) return 'busy';
  // Read after the claim, not before: a request that claimed first records its payment before it lets go, so a
  // payment that came of it is visible here.
  if (!(await spent(sql, claim.spendKey))) return 'claimed';
  await releaseClaim(sql, claim);
  return 'spent';
}

/** Ends a request's claim on a credential (its payment was recorded, or refused). */
export async function releaseClaim(sql: Sql, claim: { spendKey: string; claimant: string }): Promise<void> {
  await sql.run('DELETE FROM credential_claims WHERE spend_key = ? AND claimant = ?', [claim.spendKey, claim.claimant]);
}

/** Money moved for a payment that got no answer: the wallet is owed one answer on the same rail. Marks the payment credited. */
export async function grantCredit(sql: Sql, payment: PaymentRow, reason: string): Promise<string> {
  return sql.transaction(async (tx) => {
    // The payment's row first: two processes granting for one payment take turns, and the second finds the credit.
    if (tx.dialect === 'postgres') await tx.get('SELECT id FROM payments WHERE id = ? FOR UPDATE', [payment.id]);
    const existing = await tx.get<{ id: string }>('SELECT id FROM wallet_credits WHERE payment_id = ?', [payment.id]);
    if (existing) return existing.id;
    const id = Ids.random('credit');
    await tx.run(`INSERT INTO wallet_credits (id, rail, wallet, amount_millicents, payment_id, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
      id,
      payment.rail,
      payment.wallet.toLowerCase(),
      payment.amountMillicents,
      payment.id,
      reason,
      Date.now(),
    ]);
    await advance(tx, payment.id, ['verified', 'settling', 'settled', 'released'], 'credited', { note: reason });
    await Ledger.append(tx, { kind: 'onchain_credit', usdMicros: payment.amountMillicents * 10, queryId: payment.queryId, reference: id, memo: `${payment.rail} credit for ${payment.wallet}: ${reason}` });
    return id;
  });
}

/** The oldest unconsumed credit of a wallet on a rail. */
export async function openCredit(sql: Sql, rail: Rail, wallet: string): Promise<Credit | undefined> {
  return sql.get<Credit>(
    `SELECT id, rail, wallet, amount_millicents AS amountMillicents, payment_id AS paymentId, reason, created_at AS createdAt
     FROM wallet_credits WHERE rail = ? AND wallet = ? AND consumed_by IS NULL ORDER BY created_at, id LIMIT 1`,
    [rail, wallet.toLowerCase()],
  );
}

/** Spends a credit for a payment, and notes it on the payment; false when another payment consumed it first. */
export async function consumeCredit(sql: Sql, creditId: string, paymentId: string): Promise<boolean> {
  return sql.transaction(async (tx) => {
    const changed = await tx.run('UPDATE wallet_credits SET consumed_by = ?, consumed_at = ? WHERE id = ? AND consumed_by IS NULL', [paymentId, Date.now(), creditId]);
    if (changed === 1) await tx.run('UPDATE payments SET credit_id = ? WHERE id = ?', [creditId, paymentId]);
    return changed === 1;
  });
}

/** Gives a consumed credit back (the answer it was spent on failed). */
export async function restoreCredit(sql: Sql, creditId: string, paymentId: string): Promise<void> {
  await sql.run('UPDATE wallet_credits SET consumed_by = NULL, consumed_at = NULL WHERE id = ? AND consumed_by = ?', [creditId, paymentId]);
}

/** The newest on-chain payments, optionally of one wallet, with the credit each left behind, if any. */
export async function recent(sql: Sql, options: { wallet?: string; limit: number }): Promise<(PaymentRow & { creditLeft: string | null })[]> {
  const wallet = options.wallet?.toLowerCase() ?? null;
  return sql.all<PaymentRow & { creditLeft: string | null }>(
    `SELECT p.*, c.id AS creditLeft FROM (SELECT ${columns} FROM payments WHERE (CAST(? AS TEXT) IS NULL OR wallet = ?)) p
     LEFT JOIN wallet_credits c ON c.payment_id = p.id ORDER BY p."createdAt" DESC, p.id DESC LIMIT ?`,
    [wallet, wallet, options.limit],
  );
}

/** Credits granted to wallets since `since` (ms): money that moved with no answer, owed back as a later answer. */
export async function creditsGranted(sql: Sql, since: number): Promise<{ rail: Rail; amountMillicents: number; createdAt: number }[]> {
  const rows = await sql.all<{ rail: Rail; amountMillicents: number | string; createdAt: number | string }>(
    'SELECT rail, amount_millicents AS amountMillicents, created_at AS createdAt FROM wallet_credits WHERE created_at >= ? ORDER BY created_at',
    [since],
  );
  return rows.map((r) => ({ rail: r.rail, amountMillicents: Number(r.amountMillicents), createdAt: Number(r.createdAt) }));
}
