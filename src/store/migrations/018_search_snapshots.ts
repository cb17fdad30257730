/**
 * The lexical index as one instance held it, for the others to start from: a header (the write-log position it
 * covers, its size and checksum, what it holds) and its bytes in parts. One snapshot is current; a new one's parts are
 * written under its own id beside the old, then its row replaces the old one's and the old parts go, in one
 * transaction, so a reader sees one or the other whole.
 * Derived data: rebuilt from `search_docs` whenever it is missing or does not fit, and left out of copies and backups.
 * A store with no chunks yet is marked as having every chunk's row (`search_docs_filled`, under analysis 1): each
 * chunk is given its row as it is written, so its opens never look for chunks without one.
 */
export const searchSnapshots = `
CREATE TABLE search_snapshot (
  slot INTEGER PRIMARY KEY CHECK (slot = 1),
  id TEXT NOT NULL,
  position INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  parts INTEGER NOT NULL,
  header TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE search_snapshot_parts (
  snapshot_id TEXT NOT NULL,
  part INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (snapshot_id, part)
) STRICT;
INSERT INTO meta (key, value) SELECT 'search_docs_filled', '1' WHERE NOT EXISTS (SELECT 1 FROM chunks) ON CONFLICT (key) DO NOTHING;
`;
