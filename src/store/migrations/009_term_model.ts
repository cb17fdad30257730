/**
 * The term model's table, from a migration like every other: it was created by the first build. A store that has one
 * keeps it; a build replaces its rows, not the table.
 */
export const termModel = `
CREATE TABLE IF NOT EXISTS term_model_terms (
  term TEXT PRIMARY KEY,
  idf REAL NOT NULL,
  lsa BLOB NOT NULL,
  lsa_neighbours TEXT NOT NULL,
  ppmi_neighbours TEXT NOT NULL,
  -- When an update folded the term in; NULL for the terms of the build.
  folded_at INTEGER
) STRICT;
`;
