/** Profiles, handles, collections, channels, items, chunks (with FTS5), accounts, credentials, balances, ledger. */
export const foundation = `
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  email TEXT,
  unlock_balance INTEGER NOT NULL DEFAULT 0 CHECK (unlock_balance >= 0),
  credit_balance INTEGER NOT NULL DEFAULT 0 CHECK (credit_balance >= 0),
  created_at INTEGER NOT NULL
) STRICT;

-- API keys and bearer tokens: the secret itself is never stored, only its SHA-256.
CREATE TABLE credentials (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('api_key', 'bearer_token')),
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  label TEXT NOT NULL DEFAULT '',
  secret_hash BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
) STRICT;
CREATE INDEX credentials_account ON credentials(account_id, kind);

CREATE TABLE profiles (
  id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  visibility TEXT NOT NULL CHECK (visibility IN ('public', 'unlisted', 'private')),
  directory_opt_in INTEGER NOT NULL DEFAULT 0 CHECK (directory_opt_in IN (0, 1)),
  owner_account_id TEXT REFERENCES accounts(id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL
) STRICT;

-- A profile's slug is its first handle; aliases are further rows.
CREATE TABLE handles (
  handle TEXT PRIMARY KEY,
  profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE
) STRICT;
CREATE INDEX handles_profile ON handles(profile_id);

CREATE TABLE profile_members (
  profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (profile_id, account_id)
) STRICT;

-- Accounts whose API keys the owner authorized to read a private profile.
CREATE TABLE profile_grants (
  profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (profile_id, account_id)
) STRICT;

CREATE TABLE channels (
  id TEXT PRIMARY KEY,
  profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('youtube', 'podcast_rss', 'rss', 'notion', 'subtext', 'user_upload')),
  label TEXT NOT NULL,
  access_level TEXT NOT NULL CHECK (access_level IN ('public', 'private')),
  rate_per_million_tokens REAL NOT NULL CHECK (rate_per_million_tokens >= 0),
  status TEXT NOT NULL CHECK (status IN ('live', 'syncing', 'paused')),
  source_url TEXT,
  settings TEXT NOT NULL DEFAULT '{}',
  sync_state TEXT NOT NULL DEFAULT '{}',
  last_synced_at INTEGER,
  last_error TEXT,
  last_error_at INTEGER,
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX channels_profile ON channels(profile_id);

CREATE TABLE collections (
  id TEXT PRIMARY KEY,
  profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  UNIQUE (profile_id, slug)
) STRICT;

CREATE TABLE collection_channels (
  collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  channel_id TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
  PRIMARY KEY (collection_id, channel_id)
) STRICT;

CREATE TABLE items (
  id TEXT PRIMARY KEY,
  channel_id TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
  external_id TEXT NOT NULL,
  title TEXT NOT NULL,
  source_url TEXT,
  published_at INTEGER,
  author TEXT,
  content_hash TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (channel_id, external_id)
) STRICT;
CREATE INDEX items_published ON items(channel_id, published_at);

CREATE TABLE chunks (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  item_id TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  text TEXT NOT NULL,
  char_count INTEGER NOT NULL,
  -- Tokens of the chunk and its item title, as the full-text index counts them: BM25's document length.
  token_count INTEGER NOT NULL DEFAULT 0,
  start_seconds REAL,
  end_seconds REAL,
  speaker TEXT,
  UNIQUE (item_id, ordinal)
) STRICT;

-- scope holds one token per chunk, the hex of its channel id, so a narrow scope is a posting-list intersection.
CREATE VIRTUAL TABLE chunk_fts USING fts5(
  title,
  text,
  scope,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE chunk_vocab USING fts5vocab(chunk_fts, 'row');

CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
  INSERT INTO chunk_fts(rowid, title, text, scope)
  SELECT new.rowid, i.title, new.text, hex(i.channel_id) FROM items i WHERE i.id = new.item_id;
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
  DELETE FROM chunk_fts WHERE rowid = old.rowid;
END;
CREATE TRIGGER items_fts_title AFTER UPDATE OF title ON items BEGIN
  UPDATE chunk_fts SET title = new.title
  WHERE rowid IN (SELECT rowid FROM chunks WHERE item_id = new.id);
END;

-- Append-only: a correction is a new row, never an edit.
CREATE TABLE ledger (
  id INTEGER PRIMARY KEY,
  created_at INTEGER NOT NULL,
  account_id TEXT REFERENCES accounts(id),
  profile_id TEXT REFERENCES profiles(id),
  channel_id TEXT REFERENCES channels(id),
  kind TEXT NOT NULL,
  unlocks_delta INTEGER NOT NULL DEFAULT 0,
  credits_delta INTEGER NOT NULL DEFAULT 0,
  usd_micros INTEGER NOT NULL DEFAULT 0,
  query_id TEXT,
  reference TEXT,
  memo TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX ledger_account ON ledger(account_id, id);
CREATE INDEX ledger_query ON ledger(query_id);
CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger BEGIN
  SELECT RAISE(ABORT, 'ledger is append-only');
END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger BEGIN
  SELECT RAISE(ABORT, 'ledger is append-only');
END;
`;
