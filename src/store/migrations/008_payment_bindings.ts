/**
 * What reconciliation needs to tell a transfer that landed from one that never will, and what binds a credential to
 * the challenge it first came with.
 * - `payments.settle_by`: the moment (ms) after which the transfer can no longer land (its authorization's or signed
 *   transaction's `validBefore`); `tx_hash` is now written before a transfer is broadcast, when its hash is known.
 *   Rows from before have no `settle_by`, and are resolved as before. A transfer some payment records (`tx_hash`) is
 *   not taken again for another (the index finds it).
 * - `credential_bindings`: each transfer a credential carries (an x402 payer and authorization nonce), with the
 *   challenge it was first presented with, refusals included; under any other challenge it is refused.
 */
export const paymentBindings = `
ALTER TABLE payments ADD COLUMN settle_by INTEGER;
CREATE INDEX payments_tx_hash ON payments (lower(tx_hash));

CREATE TABLE credential_bindings (
  spend_key TEXT PRIMARY KEY,
  rail TEXT NOT NULL,
  challenge_id TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
`;
