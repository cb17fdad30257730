import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Demo from '../src/demo/Demo.js';
import * as Store from '../src/store/Database.js';
import type { Database } from '../src/store/Database.js';
import * as Stores from '../src/store/Store.js';

let directory: string;
let db: Database;
let store: Stores.Store;
let first: Demo.LoadResult;

beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-demo-'));
  db = Store.open(path.join(directory, 'demo.db')).db;
  store = Stores.overSqlite(db);
  first = await Demo.load({ store }, { chunkTargetTokens: 320 });
});

afterAll(() => {
  db.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

describe('the demo dataset', () => {
  test('behavior: has at least five profiles of every visibility, with an owner and a team member on the private one', async () => {
    const profiles = await store.profiles.list();
    expect(profiles.length).toBeGreaterThanOrEqual(5);
    expect(profiles.filter((p) => p.visibility === 'unlisted')).toHaveLength(1);
    const secret = profiles.filter((p) => p.visibility === 'private');
    expect(secret).toHaveLength(1);
    expect(secret[0]!.ownerAccountId).not.toBeNull();
    expect(await store.profiles.members(secret[0]!.id)).toHaveLength(1);
  });

  test('behavior: uses every channel kind, has a public collection and at least 60 distinct chunks', async () => {
    const kinds = db.prepare('SELECT DISTINCT kind FROM channels ORDER BY kind').pluck().all();
    expect(kinds).toEqual(['notion', 'podcast_rss', 'rss', 'subtext', 'user_upload', 'youtube']);
    const collections = (await Promise.all((await store.profiles.list()).map(async (p) => (await store.collections.byProfile(p.id)).map((c) => ({ p, c }))))).flat();
    expect(collections.some(({ p }) => p.visibility === 'public')).toBe(true);
    const chunks = db.prepare('SELECT text FROM chunks').pluck().all() as string[];
    expect(chunks.length).toBeGreaterThanOrEqual(60);
    expect(new Set(chunks).size).toBe(chunks.length);
    expect(first.chunks).toBe(chunks.length);
  });

  test('behavior: transcripts carry timestamps and speakers', () => {
    const timed = db.prepare("SELECT count(*) FROM chunks WHERE start_seconds IS NOT NULL AND end_seconds > start_seconds AND speaker IS NOT NULL").pluck().get() as number;
    expect(timed).toBeGreaterThan(20);
    const speakers = db.prepare('SELECT DISTINCT speaker FROM chunks WHERE speaker IS NOT NULL').pluck().all();
    expect(speakers.length).toBeGreaterThan(5);
  });

  test('behavior: loading again changes nothing', async () => {
    const again = await Demo.load({ store }, { chunkTargetTokens: 320 });
    expect(again).toMatchObject({ created: 0, updated: 0, unchanged: first.items, chunks: first.chunks });
  });

  test('behavior: is loaded on a store’s first start only', async () => {
    const fresh = Store.open(path.join(directory, 'fresh.db')).db;
    const handles = { store: Stores.overSqlite(fresh) };
    try {
      expect(await Demo.loadOnFirstStart(handles, { chunkTargetTokens: 320 })).toBeDefined();
      expect(await Demo.loadOnFirstStart(handles, { chunkTargetTokens: 320 })).toBeUndefined();
    } finally {
      fresh.close();
    }
  });

  test('behavior: every question in the demo test set points at text that exists', () => {
    const questions = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'demo-questions.json'), 'utf8'));
    for (const q of questions.answerable) {
      for (const place of [q, ...(q.alsoIn ?? [])]) {
        const text = fs.readFileSync(path.join(Demo.defaultDirectory, place.file), 'utf8');
        expect(text, q.question).toContain(place.evidence);
      }
    }
    expect(questions.unanswerable.length).toBeGreaterThanOrEqual(10);
  });
});
