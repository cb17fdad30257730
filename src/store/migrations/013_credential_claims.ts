/**
 * Credentials being redeemed right now: the request that claimed one checks it with its chain or facilitator while
 * every other presentation of it (a retry, a copy sent to another instance) is turned away at once, before any round
 * trip. A claim ends when its payment is recorded or refused; one a stopped process left runs out after a while.
 */
export const credentialClaims = `
CREATE TABLE IF NOT EXISTS credential_claims (
  spend_key TEXT PRIMARY KEY,
  claimant TEXT NOT NULL,
  claimed_at INTEGER NOT NULL
) STRICT;
`;
