/**
 * The lexical search index's source of truth, derived from chunks and written in the same transaction: each chunk's
 * distinct terms with their title-weighted counts (`search_docs.terms`, ids into `search_terms`), its channel and its
 * length. The in-memory index is built from these rows and kept current from `search_log`, which triggers append to
 * whenever a document comes or goes, or a channel's audience (paused, access level, profile visibility) changes;
 * `reset` tells every index to load again.
 * Rows are filled for existing chunks on first open after this migration.
 */
export const searchIndex = `
CREATE TABLE search_terms (
  id INTEGER PRIMARY KEY,
  term TEXT NOT NULL UNIQUE
) STRICT;

CREATE TABLE search_docs (
  rowid INTEGER PRIMARY KEY,
  channel_id TEXT NOT NULL,
  length INTEGER NOT NULL,
  terms BLOB NOT NULL
) STRICT;

-- A removal keeps the document's terms, so an index can take them out of its counts.
CREATE TABLE search_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('add', 'remove', 'audiences', 'reset')),
  chunk INTEGER,
  terms BLOB
) STRICT;

CREATE TRIGGER search_docs_added AFTER INSERT ON search_docs BEGIN
  INSERT INTO search_log (kind, chunk) VALUES ('add', new.rowid);
END;
CREATE TRIGGER search_docs_removed AFTER DELETE ON search_docs BEGIN
  INSERT INTO search_log (kind, chunk, terms) VALUES ('remove', old.rowid, old.terms);
END;
CREATE TRIGGER chunks_search_delete AFTER DELETE ON chunks BEGIN
  DELETE FROM search_docs WHERE rowid = old.rowid;
END;

CREATE TRIGGER channels_audience_insert AFTER INSERT ON channels BEGIN
  INSERT INTO search_log (kind) VALUES ('audiences');
END;
CREATE TRIGGER channels_audience_delete AFTER DELETE ON channels BEGIN
  INSERT INTO search_log (kind) VALUES ('audiences');
END;
CREATE TRIGGER channels_audience_update AFTER UPDATE OF status, access_level, profile_id ON channels
  WHEN (old.status = 'paused') != (new.status = 'paused') OR old.access_level != new.access_level OR old.profile_id != new.profile_id
BEGIN
  INSERT INTO search_log (kind) VALUES ('audiences');
END;
CREATE TRIGGER profiles_audience_update AFTER UPDATE OF visibility ON profiles WHEN old.visibility != new.visibility BEGIN
  INSERT INTO search_log (kind) VALUES ('audiences');
END;

-- The analysis the rows are written with; a later one rebuilds them (SearchDocs.fill).
INSERT INTO meta (key, value) VALUES ('search_index_version', '1') ON CONFLICT (key) DO NOTHING;
`;
