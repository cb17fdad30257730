import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import * as Keys from '../src/auth/Keys.js';
import * as Secret from '../src/auth/Secret.js';
import * as Upload from '../src/ingest/Upload.js';
import * as Store from '../src/store/Database.js';
import type { Database } from '../src/store/Database.js';
import { migrations } from '../src/store/Migrations.js';
import * as Stores from '../src/store/Store.js';
import { snapshot } from './support/Snapshot.js';

let directory: string;
let file: string;
let db: Database;
let store: Stores.Store;

beforeEach(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-store-'));
  file = path.join(directory, 'store.db');
  db = Store.open(file).db;
  store = Stores.overSqlite(db);
});

afterEach(() => {
  db.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

const uploadChannel = async () => {
  const profile = await store.profiles.create({ slug: 'ada', name: 'Ada', visibility: 'public', directory: true });
  return store.channels.create({ id: 'ch_ada_uploads', profileId: profile.id, kind: 'user_upload', label: 'Uploads', accessLevel: 'public', ratePerMillionTokens: 2 });
};

const chunkRows = () => db.prepare('SELECT id, text FROM chunks ORDER BY item_id, ordinal').all() as { id: string; text: string }[];
const ftsMatches = (term: string) => db.prepare('SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?').pluck().get(term) as number;

describe('Store.open', () => {
  test('behavior: creates the file in WAL mode with sqlite-vec and FTS5, and migrates once', () => {
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(Store.versions(db).sqliteVec).toMatch(/^v0\./);
    db.close();
    const again = Store.open(file);
    expect(again.created).toBe(false);
    db = again.db;
    const applied = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
    expect(applied).toEqual(migrations.map((m) => m.version));
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
    const before = snapshot(db);
    const second = await Upload.ingest({ store }, { channelId: channel.id, file: notes, chunkTargetTokens: 320 });
    expect(second).toMatchObject({ outcome: 'unchanged', itemId: first.itemId });
    expect(snapshot(db)).toEqual(before);
  });

  test('behavior: changed content replaces the item’s chunks and their index entries', async () => {
    const channel = await uploadChannel();
    const notes = write('notes.txt', 'Rye needs a wetter dough.');
    const first = await Upload.ingest({ store }, { channelId: channel.id, file: notes, chunkTargetTokens: 320 });
    const oldIds = chunkRows().map((c) => c.id);
    fs.writeFileSync(notes, 'Spelt needs a gentler mix.');
    const second = await Upload.ingest({ store }, { channelId: channel.id, file: notes, chunkTargetTokens: 320 });
    expect(second).toMatchObject({ outcome: 'updated', itemId: first.itemId });
    expect(chunkRows().map((c) => c.text)).toEqual(['Spelt needs a gentler mix.']);
    expect(chunkRows().map((c) => c.id)).not.toEqual(oldIds);
    expect(ftsMatches('rye')).toBe(0);
    expect(ftsMatches('spelt')).toBe(1);
    // The porter stemmer matches other forms of a word.
    expect(ftsMatches('mixing')).toBe(1);
  });

  test('behavior: transcripts keep times and speakers on their chunks', async () => {
    const channel = await uploadChannel();
    const srt = write(
      'ep1.srt',
      '1\n00:00:01,000 --> 00:00:04,000\nAda Lovelace: Engines weave patterns.\n\n2\n00:00:04,000 --> 00:00:07,250\nLike looms weave flowers.\n\n3\n00:00:07,250 --> 00:00:08,000\nCharles Babbage: Indeed.\n\n4\n00:00:08,000 --> 00:00:09,000\nAda Lovelace: Quite.\n\n5\n00:00:09,000 --> 00:00:10,000\nCharles Babbage: So.\n',
    );
    await Upload.ingest({ store }, { channelId: channel.id, file: srt, chunkTargetTokens: 320 });
    const text = 'Ada Lovelace: Engines weave patterns. Like looms weave flowers.\nCharles Babbage: Indeed.\nAda Lovelace: Quite.\nCharles Babbage: So.';
    expect(db.prepare('SELECT text, start_seconds AS s, end_seconds AS e, speaker, char_count AS n FROM chunks').get()).toEqual({
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
    const before = snapshot(db);
    await expect(Upload.ingest({ store }, { channelId: channel.id, file: write(name, content), metadata, chunkTargetTokens: 320 })).rejects.toThrow(message);
    expect(snapshot(db)).toEqual(before);
  });
});

describe('Credentials', () => {
  test('behavior: the secret is shown once and only its hash is stored', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    const { token, credential } = await Keys.issue(store, { kind: 'api_key', accountId: account.id });
    expect(token).toMatch(/^pek_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    const secret = Secret.parse('api_key', token)!.secret;
    db.pragma('wal_checkpoint(TRUNCATE)');
    const bytes = fs.readFileSync(file);
    expect(bytes.includes(Buffer.from(secret))).toBe(false);
    expect(bytes.includes(Secret.hash(secret))).toBe(true);
    expect((await Keys.verify(store, 'api_key', token))?.id).toBe(credential.id);
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
    const before = snapshot(db);
    await expect(store.ledger.move({ accountId: account.id, kind: 'query_charge', unlocksDelta: -2 })).rejects.toThrow(/balance/);
    expect(snapshot(db)).toEqual(before);
  });

  test('error: ledger rows can be neither edited nor deleted', async () => {
    const account = await store.accounts.create({ name: 'buyer' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 1 });
    expect(() => db.prepare('UPDATE ledger SET credits_delta = 99').run()).toThrow(/append-only/);
    expect(() => db.prepare('DELETE FROM ledger').run()).toThrow(/append-only/);
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
