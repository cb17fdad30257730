import type { Rail } from '../contract/Quote.js';
import * as Ids from './Ids.js';
import * as Ledger from './Ledger.js';
import { type Sql, within } from './Sql.js';

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
 * transfer presented twice is turned away. A payment whose transfer is already on chain is recorded settled, with it,
 * in the same statement: no moment exists in which it could pass for one whose money never moved.
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
      `INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, tx_hash, settle_by, created_at, updated_at, instance_id)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
       WHERE CAST(? AS TEXT) IS NULL OR NOT EXISTS (SELECT 1 FROM payments WHERE lower(tx_hash) = ? OR spend_key = ?)
       ON CONFLICT DO NOTHING`,
      [
        row.id,
        row.spendKey,
        row.rail,
        row.wallet.toLowerCase(),
        row.queryId,
        row.requestDigest,
        row.amountMillicents,
        transfer === null ? 'verified' : 'settled',
        row.transfer ?? null,
        row.settleBy ?? null,
        now,
        now,
        row.instanceId ?? null,
        transfer,
        transfer,
        transfer,
      ],
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
 * Payments left part-way (verified, settling or settled, never answered nor released) that no live process is
 * finishing:
 * - untouched since before `cutoff` and taken by a process that is gone or by none (a live instance's payment in
 *   flight is its own, however long it takes), or by the `own` instance while only verified (its release failed: no
 *   request runs that long, and no answer went out before a payment was settled);
 * - taken by one of `instances` (whose lease ran out) and untouched since `claimedAt`, when they were claimed;
 * - settlements past their deadline (`settle_by` before `settledBy`) taken by the `own` instance, by a process that is
 *   gone, or by none: nothing still waits on them, and the chain can tell how they ended.
 */
export async function unfinished(
  sql: Sql,
  options: {
    cutoff: number;
    settledBy?: number | undefined;
    instances?: readonly string[] | undefined;
    claimedAt?: number | undefined;
    own?: string | undefined;
  },
): Promise<PaymentRow[]> {
  const instances = options.instances ?? [];
  const claimed = instances.length > 0 ? ` OR (instance_id IN (${instances.map(() => '?').join(', ')}) AND updated_at <= ?)` : '';
  const free = '(instance_id IS NULL OR NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = p.instance_id))';
  const own = options.own ?? null;
  return sql.all<PaymentRow>(
    `SELECT ${columns} FROM payments p WHERE state IN ('verified', 'settling', 'settled')
       AND ((updated_at < ? AND (${free} OR (state = 'verified' AND instance_id = ?)))${claimed}
         OR (state = 'settling' AND settle_by < ? AND (instance_id = ? OR ${free})))
     ORDER BY created_at, id`,
    [options.cutoff, own, ...(instances.length > 0 ? [...instances, options.claimedAt ?? Number.MAX_SAFE_INTEGER] : []), options.settledBy ?? 0, own],
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

/**
 * Money moved for a payment that got no answer: moves it from one of `from` to credited and owes its wallet one answer
 * on the same rail (a credit, with its ledger row), in one transaction. The credit's id, or undefined when the payment
 * was in none of `from` (someone else moved it first: answered, released or credited): a credit is granted only with
 * the move that earns it, never beside an answer.
 */
export async function creditWallet(sql: Sql, id: string, options: { from: readonly PaymentState[]; reason: string; txHash?: string | undefined }): Promise<string | undefined> {
  return within(sql, async (tx) => {
    if (!(await advance(tx, id, [...options.from], 'credited', { note: options.reason, ...(options.txHash !== undefined && { txHash: options.txHash }) }))) return undefined;
    return grant(tx, (await get(tx, id))!, options.reason);
  });
}

/** A credit for a payment this transaction just moved to credited, with its ledger row. */
async function grant(tx: Sql, payment: PaymentRow, reason: string): Promise<string> {
  const id = Ids.random('credit');
  // Written only beside a credited payment: whatever the caller believed, an answered one never gains a credit.
  const written = await tx.run(
    `INSERT INTO wallet_credits (id, rail, wallet, amount_millicents, payment_id, reason, created_at)
     SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM payments WHERE id = ? AND state = 'credited')`,
    [id, payment.rail, payment.wallet.toLowerCase(), payment.amountMillicents, payment.id, reason, Date.now(), payment.id],
  );
  if (written !== 1) throw new Error(`payment ${payment.id} is ${payment.state}, not credited: no credit is granted beside it`);
  await Ledger.append(tx, { kind: 'onchain_credit', usdMicros: payment.amountMillicents * 10, queryId: payment.queryId, reference: id, memo: `${payment.rail} credit for ${payment.wallet}: ${reason}` });
  return id;
}

/**
 * Gives a payment up (released) from one of `from`, and gives back the credit it spent, if any, in one transaction:
 * the credit is the wallet's again only if this call released the payment. False when the payment was in none of
 * `from` (someone else moved it first).
 */
export async function release(sql: Sql, id: string, options: { from: readonly PaymentState[]; note: string }): Promise<boolean> {
  return within(sql, async (tx) => {
    if (!(await advance(tx, id, [...options.from], 'released', { note: options.note }))) return false;
    await tx.run(
      'UPDATE wallet_credits SET consumed_by = NULL, consumed_at = NULL WHERE consumed_by = ? AND id = (SELECT credit_id FROM payments WHERE id = ?)',
      [id, id],
    );
    return true;
  });
}

/**
 * A transfer someone else sent for a payment this server answered with a credit instead: the wallet paid twice for one
 * answer. The transfer becomes a payment of its own (`<id>:sent`, credited) with a credit for the wallet, and the
 * answered payment is watched no more, in one transaction; undefined when another process recorded it first.
 */
export async function creditSentTransfer(sql: Sql, payment: PaymentRow, options: { txHash: string; reason: string }): Promise<string | undefined> {
  return within(sql, async (tx) => {
    // Claimed by the statement that stops the watch: two processes finding the same transfer record it once.
    if ((await tx.run('UPDATE payments SET settle_by = NULL WHERE id = ? AND settle_by IS NOT NULL', [payment.id])) !== 1) return undefined;
    const id = `${payment.id}:sent`;
    const now = Date.now();
    await tx.run(
      `INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, tx_hash, note, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'credited', ?, ?, ?, ?)`,
      [id, `${payment.spendKey}:sent`, payment.rail, payment.wallet.toLowerCase(), `${payment.queryId}:sent`, payment.requestDigest, payment.amountMillicents, options.txHash, options.reason, now, now],
    );
    return grant(tx, (await get(tx, id))!, options.reason);
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
