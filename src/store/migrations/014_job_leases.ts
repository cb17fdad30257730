/**
 * Jobs that one process at a time may run on a store (rebuilding the term model, building the vector index): a row
 * is a lease, held by the process that claimed it while it heartbeats, taken over once its holder is gone.
 */
export const jobLeases = `
CREATE TABLE IF NOT EXISTS job_leases (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
) STRICT;
`;
