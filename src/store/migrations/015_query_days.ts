/**
 * Queries per day, profile, outcome and payment, for the operator's `stats`: each process adds what it counted every
 * few seconds. `profile_id` is the profile whose endpoint was asked ('' for the global one); `pay` is the rail or the
 * balance paid from ('' when nobody paid); `usd_micros` what moved on-chain, `units` what a balance paid.
 */
export const queryDays = `
CREATE TABLE IF NOT EXISTS query_days (
  day TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  outcome TEXT NOT NULL,
  pay TEXT NOT NULL,
  queries INTEGER NOT NULL,
  usd_micros INTEGER NOT NULL,
  units INTEGER NOT NULL,
  PRIMARY KEY (day, profile_id, outcome, pay)
) STRICT;
`;
