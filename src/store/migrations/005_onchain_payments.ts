/**
 * On-chain payments. Each credential is spent once: its challenge id and the transfer it carries (a transaction hash,
 * or a payer's authorization nonce) are both unique, so a replay, or the same credential on parallel requests, finds
 * the row already there. The state says how far the payment got, so a crash between settling and answering is found
 * at start and the wallet gets a credit. Credits are consumed once, by a later payment signed by the same wallet.
 */
export const onchainPayments = `
CREATE TABLE payments (
  id TEXT PRIMARY KEY,
  spend_key TEXT NOT NULL UNIQUE,
  rail TEXT NOT NULL,
  wallet TEXT NOT NULL,
  query_id TEXT NOT NULL UNIQUE,
  request_digest TEXT NOT NULL,
  amount_millicents INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('verified', 'settling', 'settled', 'answered', 'released', 'credited')),
  tx_hash TEXT,
  receipt TEXT,
  credit_id TEXT,
  note TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX payments_state ON payments (state, updated_at);

CREATE TABLE wallet_credits (
  id TEXT PRIMARY KEY,
  rail TEXT NOT NULL,
  wallet TEXT NOT NULL,
  amount_millicents INTEGER NOT NULL,
  payment_id TEXT NOT NULL UNIQUE REFERENCES payments (id),
  reason TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  consumed_by TEXT UNIQUE REFERENCES payments (id),
  consumed_at INTEGER
) STRICT;
CREATE INDEX wallet_credits_open ON wallet_credits (rail, wallet) WHERE consumed_by IS NULL;
`;
