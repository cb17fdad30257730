/**
 * The vector index's sign codes as one instance held them, for the others to start from: the same shape as the search
 * index's snapshot (migration 18), a header stamped with the vector-log position it covers and its bytes in parts, in
 * tables of their own so each is written, replaced and refused without touching the other.
 * Derived data: read anew from `chunk_embeddings` whenever it is missing or does not fit, and left out of copies and
 * backups.
 */
export const vectorSnapshots = `
CREATE TABLE vector_snapshot (
  slot INTEGER PRIMARY KEY CHECK (slot = 1),
  id TEXT NOT NULL,
  position INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  parts INTEGER NOT NULL,
  header TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE vector_snapshot_parts (
  snapshot_id TEXT NOT NULL,
  part INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (snapshot_id, part)
) STRICT;
`;
