/**
 * The serving processes on this database, each with a lease it renews while it lives, and which process took each
 * charge and payment: reconciliation touches only what a process whose lease ran out left, never a live one's query
 * in flight.
 */
export const instances = `
CREATE TABLE IF NOT EXISTS instances (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  seen_at INTEGER NOT NULL
) STRICT;
ALTER TABLE ledger ADD COLUMN instance_id TEXT;
ALTER TABLE payments ADD COLUMN instance_id TEXT;
CREATE INDEX IF NOT EXISTS ledger_instance ON ledger (instance_id) WHERE instance_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS payments_instance ON payments (instance_id) WHERE instance_id IS NOT NULL;
`;
