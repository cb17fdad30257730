/**
 * The ids a channel's last listing gave, in order: what decides which missing items were deleted. Kept apart from
 * `channels.sync_state`, which every query reads, since a feed can list thousands of ids. `source` listings come
 * from syncs, `import` listings from imported files.
 */
export const listings = `
CREATE TABLE channel_listings (
  channel_id TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
  origin TEXT NOT NULL CHECK (origin IN ('source', 'import')),
  ids TEXT NOT NULL,
  listed_at INTEGER NOT NULL,
  PRIMARY KEY (channel_id, origin)
) STRICT;
`;
