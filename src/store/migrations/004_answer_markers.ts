/**
 * From here on every captured balance charge has a `query_answered` ledger row, so a charge with neither an answer nor
 * a reversal can be told apart (a crash between them) and reversed at start. Charges older than this migration are
 * never reconciled: they had no marker.
 */
export const answerMarkers = `
INSERT INTO meta (key, value) VALUES ('answer_markers_since', CAST(CAST(unixepoch('subsec') * 1000 AS INTEGER) AS TEXT))
  ON CONFLICT (key) DO NOTHING;
`;
