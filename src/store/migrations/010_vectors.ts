/**
 * The vector tables, from a migration like every other: they were created by the first reindex with an embedder. A
 * store that has them keeps them; one whose vectors sit only in the sqlite-vec table of before is carried over by
 * `VectorIndex.upgrade`. Deleting a chunk deletes its vector; every vector written or deleted is logged, so a process
 * holding codes in memory follows writes made by any other.
 */
export const vectors = `
CREATE TABLE IF NOT EXISTS chunk_embeddings (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk INTEGER NOT NULL) STRICT;
CREATE TRIGGER IF NOT EXISTS chunk_embeddings_written AFTER INSERT ON chunk_embeddings BEGIN
  INSERT INTO vector_log (chunk) VALUES (new.rowid);
END;
CREATE TRIGGER IF NOT EXISTS chunk_embeddings_deleted AFTER DELETE ON chunk_embeddings BEGIN
  INSERT INTO vector_log (chunk) VALUES (old.rowid);
END;
CREATE TRIGGER IF NOT EXISTS chunks_embeddings_delete AFTER DELETE ON chunks BEGIN
  DELETE FROM chunk_embeddings WHERE rowid = old.rowid;
END;
`;
