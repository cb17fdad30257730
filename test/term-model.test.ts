import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import * as TermModel from '../src/retrieval/TermModel.js';
import * as Text from '../src/retrieval/Text.js';
import * as Channels from '../src/store/Channels.js';
import * as Store from '../src/store/Database.js';
import type { Database } from '../src/store/Database.js';
import * as Items from '../src/store/Items.js';
import * as Profiles from '../src/store/Profiles.js';

let directory: string;
let file: string;
let db: Database;

beforeEach(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-term-model-'));
  file = path.join(directory, 'store.db');
  db = Store.open(file).db;
});

afterEach(() => {
  db.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

/** Topics with disjoint words; "refrigerator" and "fridge" never meet but share every context. */
const topics: Record<string, string[]> = {
  kitchen: [
    'The X keeps the food cold.',
    'Close the X door in the kitchen.',
    'Milk and cheese stay cold in the X.',
    'The kitchen X hums quietly at night.',
    'Leftover soup goes into the cold X.',
    'Wipe the X door and glass shelves.',
    'Butter and eggs chill in the X drawer.',
    'The X freezer holds ice and frozen peas.',
  ],
  cycling: [
    'The bicycle chain needs oil.',
    'Ride the bicycle along the road.',
    'Both wheels of the bicycle spin.',
    'A helmet protects the rider on the road.',
    'Pump the tyres before a long ride.',
    'The rider shifts gears on the steep hill.',
    'Brakes and pedals wear out after many miles.',
    'Cyclists race downhill past the village.',
  ],
  garden: [
    'Roses grow in the sunny garden.',
    'Water the tulips in the garden.',
    'The gardener plants seeds in spring soil.',
    'Weeds crowd the roses and tulips.',
    'Compost feeds the garden soil.',
    'The gardener prunes roses in spring.',
    'Bees visit lavender and daisies.',
    'Rain fills the barrel beside the shed.',
  ],
};

/** Three sentences per chunk, rotating through a topic's templates. */
function corpus(): { title: string; chunks: string[] }[] {
  const items: { title: string; chunks: string[] }[] = [];
  for (const [topic, templates] of Object.entries(topics)) {
    const variants = topic === 'kitchen' ? ['refrigerator', 'fridge'] : [topic];
    for (const variant of variants) {
      for (let item = 0; item < 3; item++) {
        const chunks = [0, 1, 2].map((c) =>
          [0, 1, 2].map((s) => templates[(item * 3 + c * 5 + s * 3) % templates.length]!.replace('X', variant)).join(' '),
        );
        items.push({ title: topic, chunks });
      }
    }
  }
  return items;
}

function seed(items: { title: string; chunks: string[] }[]): void {
  const profile = Profiles.create(db, { slug: 'ada', name: 'Ada', visibility: 'public' });
  const channel = Channels.create(db, { profileId: profile.id, kind: 'user_upload', label: 'Notes', accessLevel: 'public', ratePerMillionTokens: 0 });
  items.forEach((item, i) =>
    Items.put(db, { channelId: channel.id, externalId: `item-${i}`, title: item.title, contentHash: `h${i}`, chunks: item.chunks.map((text) => ({ text })) }),
  );
}

const sentences = new Intl.Segmenter('en', { granularity: 'sentence' });

/** The features of one candidate text for a question, with every query term weighted 1. */
function featuresOf(model: TermModel.TermModel, question: string, chunk: { title: string; text: string }, top: string[] = []) {
  const queryStems = Text.queryTerms(question).map((t) => t.stem);
  const stemsOf = (title: string, text: string) => [...Text.stemsOf(title), ...Text.stemsOf(text)];
  return model.features({
    queryStems,
    idf: new Map(queryStems.map((s) => [s, 1])),
    totalIdf: queryStems.length,
    chunkStems: stemsOf(chunk.title, chunk.text),
    sentenceStems: Array.from(sentences.segment(chunk.text), (s) => Text.stemsOf(s.segment)),
    topChunkStems: top.map((text) => stemsOf('', text)),
  });
}

const modelRows = () => db.prepare('SELECT term, idf, lsa, lsa_neighbours, ppmi_neighbours FROM term_model_terms ORDER BY term').all();

describe('TermModel.build', () => {
  test('behavior: persists a model that reloads after the store is reopened', () => {
    seed(corpus());
    const stages: string[] = [];
    const info = TermModel.build(db, { dimensions: 16, seed: 3, onProgress: (stage) => stages.push(stage) });
    expect(info).toMatchObject({ dimensions: 16, chunks: 36 });
    expect(info.terms).toBeGreaterThan(20);
    expect(info.ppmiTerms).toBeGreaterThan(10);
    expect(stages).toEqual(['reading chunks', 'lsa', 'ppmi', 'neighbours', 'saving']);
    expect(JSON.parse(Store.getMeta(db, 'term_model')!)).toEqual(info);
    db.close();
    db = Store.open(file).db;
    expect(TermModel.load(db)?.info).toEqual(info);
    expect(modelRows()).toHaveLength(info.terms);
  });

  test('behavior: the same seed gives the same model', () => {
    seed(corpus());
    const first = TermModel.build(db, { dimensions: 12, seed: 5 });
    const rows = modelRows();
    const second = TermModel.build(db, { dimensions: 12, seed: 5 });
    expect({ ...second, builtAt: 0 }).toEqual({ ...first, builtAt: 0 });
    expect(modelRows()).toEqual(rows);
  });

  test('behavior: a rebuild replaces the earlier model', () => {
    seed(corpus());
    TermModel.build(db, { dimensions: 12 });
    const info = TermModel.build(db, { dimensions: 4 });
    expect(TermModel.load(db)?.info).toEqual(info);
    const lengths = db.prepare('SELECT DISTINCT length(lsa) FROM term_model_terms').pluck().all();
    expect(lengths).toEqual([4 * 4]);
  });

  test('behavior: a large index is sampled evenly', () => {
    seed(corpus());
    expect(TermModel.build(db, { maxChunks: 10, dimensions: 8 }).chunks).toBe(10);
  });

  test('behavior: a tiny corpus builds with fewer dimensions than asked, and an empty one builds empty', () => {
    seed([{ title: 'Tiny', chunks: ['Cold milk.', 'Cold milk again.', 'Warm bread.', 'Warm bread and cold milk.', 'Milk.'] }]);
    const info = TermModel.build(db);
    expect(info.chunks).toBe(5);
    expect(info.dimensions).toBeLessThanOrEqual(info.terms);
    const f = featuresOf(TermModel.load(db)!, 'milk', { title: 'Tiny', text: 'Warm bread.' }, ['Cold milk.']);
    for (const value of Object.values(f)) expect(Number.isFinite(value)).toBe(true);

    db.prepare('DELETE FROM items').run();
    expect(TermModel.build(db)).toMatchObject({ chunks: 0, terms: 0, ppmiTerms: 0, dimensions: 0 });
    expect(featuresOf(TermModel.load(db)!, 'milk', { title: 'Tiny', text: 'Cold milk.' }, ['Cold milk.'])).toMatchObject({ softPpmi: 0, softLsa: 0, feedback: 0 });
  });

  test('error: rejects bad options and keeps the earlier model', () => {
    seed(corpus());
    const info = TermModel.build(db, { dimensions: 8 });
    expect(() => TermModel.build(db, { dimensions: 0 })).toThrow(/dimensions/);
    expect(() => TermModel.build(db, { maxChunks: -1 })).toThrow(/maxChunks/);
    expect(() => TermModel.build(db, { seed: 1.5 })).toThrow(/seed/);
    expect(TermModel.load(db)?.info).toEqual(info);
  });
});

describe('TermModel.features', () => {
  const refrigerator = { title: 'kitchen', text: 'The refrigerator keeps the food cold. Close the refrigerator door in the kitchen.' };
  const bicycle = { title: 'cycling', text: 'The bicycle chain needs oil. Ride the bicycle along the road.' };

  test('behavior: a synonym the question does not use counts as a soft match', () => {
    seed(corpus());
    TermModel.build(db, { dimensions: 16, seed: 3 });
    const model = TermModel.load(db)!;
    const near = featuresOf(model, 'Where is the fridge?', refrigerator);
    expect(near.softPpmi).toBeGreaterThan(0.3);
    expect(near.softLsa).toBeGreaterThan(0);
    expect(near.sentenceSoft).toBeGreaterThan(0.3);
    const far = featuresOf(model, 'Where is the fridge?', bicycle);
    expect(far).toMatchObject({ softPpmi: 0, softLsa: 0, sentenceSoft: 0 });
    // A term the chunk has is an exact match, not a soft one.
    const exact = featuresOf(model, 'Where is the refrigerator?', refrigerator);
    expect(exact).toMatchObject({ softPpmi: 0, softLsa: 0, sentenceSoft: 1 });
  });

  test('behavior: feedback is the closeness to the first stage’s top candidates', () => {
    seed(corpus());
    TermModel.build(db, { dimensions: 16, seed: 3 });
    const model = TermModel.load(db)!;
    const top = ['Milk and cheese stay cold in the fridge.', 'Wipe the fridge door and shelves.'];
    const kitchen = featuresOf(model, 'fridge', refrigerator, top).feedback;
    const cycling = featuresOf(model, 'fridge', bicycle, top).feedback;
    expect(kitchen).toBeGreaterThan(0.2);
    expect(Math.abs(cycling)).toBeLessThan(0.05);
    expect(featuresOf(model, 'fridge', refrigerator, []).feedback).toBe(0);
  });

  test('behavior: terms the model lacks give no soft match', () => {
    seed(corpus());
    TermModel.build(db, { dimensions: 8 });
    const f = featuresOf(TermModel.load(db)!, 'quasar nebula', { title: 'Sky', text: 'Quasars outshine every nebula. The telescope sees far.' }, ['Unknown words only.']);
    expect(f).toMatchObject({ softPpmi: 0, softLsa: 0, feedback: 0 });
    expect(TermModel.featureNames).toEqual(['softPpmi', 'softLsa', 'sentenceSoft', 'feedback']);
  });

  test('behavior: no model, nothing to load', () => {
    seed(corpus());
    expect(TermModel.load(db)).toBeUndefined();
  });
});
