/**
 * Token buckets kept in the database, so every process on it (several `serve` instances behind one load balancer)
 * draws a caller's limit from one bucket. A key's row is its tokens after its last request, and when that was.
 */
export const rateBuckets = `
CREATE TABLE IF NOT EXISTS rate_buckets (
  key TEXT PRIMARY KEY,
  tokens REAL NOT NULL,
  at INTEGER NOT NULL,
  -- Whether the last request took a token: what the statement that took it returns.
  granted INTEGER NOT NULL
) STRICT;
`;
