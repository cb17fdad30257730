/**
 * What the payments' books must never show, held by the database as well as by the code that writes them:
 * - a payment that is answered or credited stays so, and a released one can only turn credited (its transfer was sent
 *   after all, by someone holding the signed credential);
 * - a credit is spent at most once: it is the wallet's again only once the payment that spent it is released.
 * A credit answered payments were once given for a transfer someone else sent (the wallet had paid with a credit) is
 * moved to a payment of its own for that transfer, credited, as such transfers are recorded from now on: an answered
 * payment holds no credit.
 */
export const paymentStates = `
CREATE TRIGGER payments_final_states BEFORE UPDATE OF state ON payments
WHEN OLD.state <> NEW.state AND (OLD.state IN ('answered', 'credited') OR (OLD.state = 'released' AND NEW.state <> 'credited'))
BEGIN
  SELECT RAISE(ABORT, 'payment_final_state: an answered or credited payment keeps its state, a released one can only be credited');
END;

CREATE TRIGGER wallet_credits_spent_once BEFORE UPDATE OF consumed_by ON wallet_credits
WHEN OLD.consumed_by IS NOT NULL AND NEW.consumed_by IS NOT OLD.consumed_by
  AND (SELECT state FROM payments WHERE id = OLD.consumed_by) IS NOT 'released'
BEGIN
  SELECT RAISE(ABORT, 'credit_spent_once: a credit is given back only once the payment that spent it is released');
END;

INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, note, created_at, updated_at)
  SELECT p.id || ':sent', p.spend_key || ':sent', p.rail, p.wallet, p.query_id || ':sent', p.request_digest, p.amount_millicents, 'credited',
    'moved by migration 17 from ' || p.id || ': ' || c.reason, c.created_at, c.created_at
  FROM wallet_credits c JOIN payments p ON p.id = c.payment_id WHERE p.state = 'answered' AND p.credit_id IS NOT NULL;
UPDATE wallet_credits SET payment_id = payment_id || ':sent'
  WHERE payment_id IN (SELECT id FROM payments WHERE state = 'answered' AND credit_id IS NOT NULL);
UPDATE payments SET settle_by = NULL WHERE state = 'answered' AND credit_id IS NOT NULL AND id || ':sent' IN (SELECT id FROM payments);
`;
