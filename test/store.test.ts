import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import * as Keys from '../src/auth/Keys.js';
import * as Secret from '../src/auth/Secret.js';
import * as Upload from '../src/ingest/Upload.js';
import * as LexicalIndex from '../src/retrieval/index/LexicalIndex.js';
import * as Text from '../src/retrieval/Text.js';
import { migrations } from '../src/store/Migrations.js';
import * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';
import * as SqliteFile from './support/SqliteFile.js';

/** Cases about SQLite's own file and connection: skipped on a PostgreSQL run. */
const sqliteOnly = test.skipIf(Engines.current !== 'sqlite');

let place: Awaited<ReturnType<typeof Engines.fresh>>;
let directory: string;
let store: Stores.OpenStore;
let peek: Peek.Peek;

beforeEach(async () => {
  place = await Engines.fresh(Engines.current, 'store');
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-store-files-'));
  store = (await Stores.open(place.target)).store;
  peek = await Peek.open(place.env);
});

afterEach(async () => {
  await peek.close();
  await store.close();
  await place.drop();
  fs.rmSync(directory, { recursive: true, force: true });
});

const uploadChannel = async () => {
  const profile = await store.profiles.create({ slug: 'ada', name: 'Ada', visibility: 'public', directory: true });
  return store.channels.create({ id: 'ch_ada_uploads', profileId: profile.id, kind: 'user_upload', label: 'Uploads', accessLevel: 'public', ratePerMillionTokens: 2 });
};

const chunkRows = () => peek.all<{ id: string; text: string }>('SELECT id, text FROM chunks ORDER BY item_id, ordinal');

describe('Store.open', () => {
  test('behavior: creates the store and migrates it once', async () => {
    const again = await Stores.open(place.target);
    try {
      expect(again.created).toBe(false);
    } finally {
      await again.store.close();
    }
    expect(await peek.column('SELECT version FROM schema_migrations ORDER BY version')).toEqual(migrations.map((m) => m.version));
  });

  // SQLite's own file: its journal mode and the extension loaded into the connection.
  sqliteOnly('behavior: opens a SQLite file synchronously in WAL mode with sqlite-vec, and migrates it once', () => {
    const file = path.join(directory, 'sync.db');
    const { db, created } = SqliteFile.open(file);
    try {
      expect(created).toBe(true);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(SqliteFile.versions(db).sqliteVec).toMatch(/^v0\./);
    } finally {
      db.close();
    }
    const again = SqliteFile.open(file);
    try {
      expect(again.created).toBe(false);
      expect(again.db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all()).toEqual(migrations.map((m) => m.version));
    } finally {
      again.db.close();
    }
  });
});

describe('Upload.ingest', () => {
  const write = (name: string, content: string) => {
    const p = path.join(directory, name);
    fs.writeFileSync(p, content);
    return p;
  };

  test('behavior: re-uploading unchanged content changes nothing', async () => {
    const channel = await uploadChannel();
    const notes = write('notes.md', '# Notes\n\nWhole-grain flour ferments faster.\n');
    const first = await Upload.ingest({ store }, { channelId: channel.id, file: notes, chunkTargetTokens: 320 });
    expect(first).toMatchObject({ outcome: 'created', chunkCount: 1, title: 'Notes' });
    const before = await peek.snapshot();
    const second = await Upload.ingest({ store }, { channelId: channel.id, file: notes, chunkTargetTokens: 320 });
    expect(second).toMatchObject({ outcome: 'unchanged', itemId: first.itemId });
    expect(await peek.snapshot()).toEqual(before);
  });

  test('behavior: changed content replaces the item’s chunks and their index entries', async () => {
    const channel = await uploadChannel();
    const notes = write('notes.txt', 'Rye needs a wetter dough.');
    const first = await Upload.ingest({ store }, { channelId: channel.id, file: notes, chunkTargetTokens: 320 });
    const oldIds = (await chunkRows()).map((c) => c.id);
    // Opened before the change, the index sees the index entries the update writes, and nothing it fills itself.
    const index = await LexicalIndex.open(store);
    const matches = async (word: string) => (await index.search({ terms: [{ token: word, stem: Text.stem(word) }], text: word, channelIds: new Set([channel.id]), limit: 10 })).length;
    expect(await matches('rye')).toBe(1);
    fs.writeFileSync(notes, 'Spelt needs a gentler mix.');
    const second = await Upload.ingest({ store }, { channelId: channel.id, file: notes, chunkTargetTokens: 320 });
    expect(second).toMatchObject({ outcome: 'updated', itemId: first.itemId });
    expect((await chunkRows()).map((c) => c.text)).toEqual(['Spelt needs a gentler mix.']);
    expect((await chunkRows()).map((c) => c.id)).not.toEqual(oldIds);
    expect(await matches('rye')).toBe(0);
    expect(await matches('spelt')).toBe(1);
    // The porter stemmer matches other forms of a word.
    expect(await matches('mixing')).toBe(1);
  });

  test('behavior: transcripts keep times and speakers on their chunks', async () => {
    const channel = await uploadChannel();
    const srt = write(
      'ep1.srt',
      '1\n00:00:01,000 --> 00:00:04,000\nAda Lovelace: Engines weave patterns.\n\n2\n00:00:04,000 --> 00:00:07,250\nLike looms weave flowers.\n\n3\n00:00:07,250 --> 00:00:08,000\nCharles Babbage: Indeed.\n\n4\n00:00:08,000 --> 00:00:09,000\nAda Lovelace: Quite.\n\n5\n00:00:09,000 --> 00:00:10,000\nCharles Babbage: So.\n',
    );
    await Upload.ingest({ store }, { channelId: channel.id, file: srt, chunkTargetTokens: 320 });
    const text = 'Ada Lovelace: Engines weave patterns. Like looms weave flowers.\nCharles Babbage: Indeed.\nAda Lovelace: Quite.\nCharles Babbage: So.';
    expect(await peek.get('SELECT text, start_seconds AS s, end_seconds AS e, speaker, char_count AS n FROM chunks')).toEqual({
      text,
      s: 1,
      e: 10,
      speaker: 'Ada Lovelace',
      n: text.length,
    });
  });

  test.each([
    ['an unsupported file type', 'slides.pptx', 'x', {}, /accepted types are/],
    ['an empty file', 'empty.txt', '   \n', {}, /no text to index/],
    ['a bad date', 'a.txt', 'text', { publishedAt: 'someday' }, /not a date/],
    ['a non-http source URL', 'a.txt', 'text', { sourceUrl: 'javascript:alert(1)' }, /not an http/],
  ])('error: %s is refused and nothing is written', async (_name, name, content, metadata, message) => {
    const channel = await uploadChannel();
    const before = await peek.snapshot();
    await expect(Upload.ingest({ store }, { channelId: channel.id, file: write(name, content), metadata, chunkTargetTokens: 320 })).rejects.toThrow(message);
    expect(await peek.snapshot()).toEqual(before);
  });
});

describe('Credentials', () => {
  test('behavior: the secret is shown once and only its hash is stored', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    const { token, credential } = await Keys.issue(store, { kind: 'api_key', accountId: account.id });
    expect(token).toMatch(/^pek_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    const secret = Secret.parse('api_key', token)!.secret;
    // Every value the store keeps, bytes as hex: the secret is in none of them, its hash in one.
    const kept = JSON.stringify(await peek.snapshot(), (_key, value: unknown) =>
      (value as { type?: unknown })?.type === 'Buffer' ? Buffer.from((value as { data: number[] }).data).toString('hex') : value,
    );
    expect(kept).not.toContain(secret);
    expect(kept).toContain(Secret.hash(secret).toString('hex'));
    expect((await Keys.verify(store, 'api_key', token))?.id).toBe(credential.id);
  });

  // SQLite's own file, read byte by byte: nothing of the secret lies in a free page or an index either.
  sqliteOnly('behavior: on SQLite, the secret is in no byte of the file, its hash is', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    const { token } = await Keys.issue(store, { kind: 'api_key', accountId: account.id });
    const secret = Secret.parse('api_key', token)!.secret;
    await peek.all('PRAGMA wal_checkpoint(TRUNCATE)');
    const bytes = fs.readFileSync(place.env.DATABASE_PATH!);
    expect(bytes.includes(Buffer.from(secret))).toBe(false);
    expect(bytes.includes(Secret.hash(secret))).toBe(true);
  });

  test('error: tampered, wrong-kind and revoked tokens do not verify', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    const { token, credential } = await Keys.issue(store, { kind: 'api_key', accountId: account.id });
    const tampered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect(await Keys.verify(store, 'api_key', tampered)).toBeUndefined();
    expect(await Keys.verify(store, 'bearer_token', token)).toBeUndefined();
    await store.credentials.revoke('api_key', credential.id);
    expect(await Keys.verify(store, 'api_key', token)).toBeUndefined();
    await expect(store.credentials.revoke('api_key', credential.id)).rejects.toThrow(/already revoked/);
  });
});

describe('Ledger', () => {
  test('behavior: a move changes the balance and appends an entry together', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', unlocksDelta: 5, creditsDelta: 100 });
    await store.ledger.move({ accountId: account.id, kind: 'query_charge', unlocksDelta: -1 });
    expect(await store.accounts.get('buyer')).toMatchObject({ unlockBalance: 4, creditBalance: 100 });
    expect((await store.ledger.entries({ accountId: account.id })).map((e) => [e.kind, e.unlocksDelta])).toEqual([
      ['query_charge', -1],
      ['grant', 5],
    ]);
  });

  test('error: a move past zero fails and changes nothing', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', unlocksDelta: 1 });
    const before = await peek.snapshot();
    await expect(store.ledger.move({ accountId: account.id, kind: 'query_charge', unlocksDelta: -2 })).rejects.toThrow(/balance/);
    expect(await peek.snapshot()).toEqual(before);
  });

  test('error: ledger rows can be neither edited nor deleted', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 1 });
    await expect(peek.run('UPDATE ledger SET credits_delta = 99')).rejects.toThrow(/append-only/);
    await expect(peek.run('DELETE FROM ledger')).rejects.toThrow(/append-only/);
    expect(await peek.column('SELECT credits_delta FROM ledger')).toEqual([1]);
  });
});

describe('Profiles and collections', () => {
  test.each([['UPPER'], ['with space'], ['-dash'], ['a--b'], ['api'], ['mcp'], ['x'.repeat(65)]])('error: the handle %s is refused', async (slug) => {
    await expect(store.profiles.create({ slug, name: 'X', visibility: 'public' })).rejects.toThrow();
    expect(await store.profiles.list()).toEqual([]);
  });

  test('error: a taken slug or alias is a conflict', async () => {
    const ada = await store.profiles.create({ slug: 'ada', name: 'Ada', visibility: 'public' });
    await store.profiles.addAlias(ada.id, 'lovelace');
    await expect(store.profiles.create({ slug: 'lovelace', name: 'Other', visibility: 'public' })).rejects.toThrow(/taken/);
    expect((await store.profiles.byHandle('LOVELACE'))?.slug).toBe('ada');
  });

  test('error: a collection takes only its creator’s channels', async () => {
    await uploadChannel();
    const other = await store.profiles.create({ slug: 'bob', name: 'Bob', visibility: 'public' });
    const ada = await store.profiles.get('ada');
    const foreign = await store.channels.create({ profileId: other.id, kind: 'rss', label: 'Bob feed', accessLevel: 'public', ratePerMillionTokens: 1 });
    await expect(store.collections.create({ profileId: ada.id, slug: 'best', name: 'Best', channelIds: ['ch_ada_uploads', foreign.id] })).rejects.toThrow(/not a channel/);
    expect(await store.collections.byProfile(ada.id)).toEqual([]);
  });
});
