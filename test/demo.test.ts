import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Demo from '../src/demo/Demo.js';
import * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';

let place: Awaited<ReturnType<typeof Engines.fresh>>;
let store: Stores.OpenStore;
let peek: Peek.Peek;
let first: Demo.LoadResult;

beforeAll(async () => {
  place = await Engines.fresh(Engines.current, 'demo');
  ({ store } = await Stores.open(place.target));
  peek = await Peek.open(place.env);
  first = await Demo.load({ store }, { chunkTargetTokens: 320 });
});

afterAll(async () => {
  await peek?.close();
  await store?.close();
  await place?.drop();
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
    const kinds = (await peek.column<string>('SELECT DISTINCT kind FROM channels')).sort();
    expect(kinds).toEqual(['notion', 'podcast_rss', 'rss', 'subtext', 'user_upload', 'youtube']);
    const collections = (await Promise.all((await store.profiles.list()).map(async (p) => (await store.collections.byProfile(p.id)).map((c) => ({ p, c }))))).flat();
    expect(collections.some(({ p }) => p.visibility === 'public')).toBe(true);
    const chunks = await peek.column<string>('SELECT text FROM chunks');
    expect(chunks.length).toBeGreaterThanOrEqual(60);
    expect(new Set(chunks).size).toBe(chunks.length);
    expect(first.chunks).toBe(chunks.length);
  });

  test('behavior: transcripts carry timestamps and speakers', async () => {
    const timed = await peek.value<number>('SELECT count(*) FROM chunks WHERE start_seconds IS NOT NULL AND end_seconds > start_seconds AND speaker IS NOT NULL');
    expect(timed).toBeGreaterThan(20);
    const speakers = await peek.column('SELECT DISTINCT speaker FROM chunks WHERE speaker IS NOT NULL');
    expect(speakers.length).toBeGreaterThan(5);
  });

  test('behavior: loading again changes nothing', async () => {
    const again = await Demo.load({ store }, { chunkTargetTokens: 320 });
    expect(again).toMatchObject({ created: 0, updated: 0, unchanged: first.items, chunks: first.chunks });
  });

  test('behavior: is loaded on a store’s first start only', async () => {
    const empty = await Engines.fresh(Engines.current, 'demo-fresh');
    const { store: fresh } = await Stores.open(empty.target);
    const handles = { store: fresh };
    try {
      expect(await Demo.loadOnFirstStart(handles, { chunkTargetTokens: 320 })).toBeDefined();
      expect(await Demo.loadOnFirstStart(handles, { chunkTargetTokens: 320 })).toBeUndefined();
    } finally {
      await fresh.close();
      await empty.drop();
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
