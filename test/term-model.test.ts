import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as TermModel from '../src/retrieval/terms/TermModel.js';
import * as Text from '../src/retrieval/Text.js';
import * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';

let place: Awaited<ReturnType<typeof Engines.fresh>>;
let store: Stores.OpenStore;
let peek: Peek.Peek;

beforeEach(async () => {
  place = await Engines.fresh(Engines.current, 'term-model');
  store = (await Stores.open(place.target)).store;
  peek = await Peek.open(place.env);
});

afterEach(async () => {
  await peek.close();
  await store.close();
  await place.drop();
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

/** A public profile with one public channel holding the items; returns the channel's id. */
async function seed(items: { title: string; chunks: string[] }[]): Promise<string> {
  const profile = await store.profiles.create({ slug: 'ada', name: 'Ada', visibility: 'public' });
  const channel = await store.channels.create({ profileId: profile.id, kind: 'user_upload', label: 'Notes', accessLevel: 'public', ratePerMillionTokens: 0 });
  await put(channel.id, items);
  return channel.id;
}

async function put(channelId: string, items: { title: string; chunks: string[] }[], prefix = 'item'): Promise<void> {
  for (const [i, item] of items.entries()) {
    await store.items.put(SearchTerms.indexed({ channelId, externalId: `${prefix}-${i}`, title: item.title, contentHash: `${prefix}${i}`, chunks: item.chunks.map((text) => ({ text })) }));
  }
}

/** Words that occur only in private or paused content. */
const hidden = ['zorblaxine', 'quendrath', 'vimmerlock'];

/**
 * Content no anonymous caller may read, full of the corpus's words and of `hidden` ones: a private profile's public
 * channel, and a private and a paused channel of the public profile. Returns the channels.
 */
async function addHiddenContent(): Promise<string[]> {
  const text = (n: number) => `The fridge keeps the ${hidden[n % 3]} cold. Ride the bicycle past ${hidden[(n + 1) % 3]} roses. ${hidden.join(' ')} in the garden.`;
  const lab = await store.profiles.create({ slug: 'lab', name: 'Lab', visibility: 'private' });
  const ada = await store.profiles.get('ada');
  const channels = [
    await store.channels.create({ profileId: lab.id, kind: 'user_upload', label: 'Lab notes', accessLevel: 'public', ratePerMillionTokens: 0 }),
    await store.channels.create({ profileId: ada.id, kind: 'user_upload', label: 'Members only', accessLevel: 'private', ratePerMillionTokens: 0 }),
    await store.channels.create({ profileId: ada.id, kind: 'user_upload', label: 'Drafts', accessLevel: 'public', ratePerMillionTokens: 0 }),
  ];
  for (const channel of channels) await put(channel.id, Array.from({ length: 6 }, (_, n) => ({ title: `fridge ${hidden[n % 3]}`, chunks: [text(n), text(n + 1)] })), 'hidden');
  await store.channels.update(channels[2]!.id, { status: 'paused' });
  return channels.map((c) => c.id);
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

/** The model's rows in term order (by code point, as the engines' collations differ). */
const modelRows = async () =>
  (await peek.all<{ term: string }>('SELECT term, idf, lsa, lsa_neighbours, ppmi_neighbours FROM term_model_terms')).sort((a, b) => (a.term < b.term ? -1 : a.term > b.term ? 1 : 0));

/** The model's description, as the store keeps it. */
const infoOf = async () => JSON.parse((await store.meta.get('term_model'))!) as TermModel.BuildInfo;

describe('TermModel.build', () => {
  test('behavior: persists a model that reloads after the store is reopened', async () => {
    await seed(corpus());
    const stages: string[] = [];
    const info = (await TermModel.build(store, { dimensions: 16, seed: 3, onProgress: (stage) => stages.push(stage) }));
    expect(info).toMatchObject({ dimensions: 16, chunks: 36 });
    expect(info.terms).toBeGreaterThan(20);
    expect(info.ppmiTerms).toBeGreaterThan(10);
    expect(stages).toEqual(['reading chunks', 'lsa', 'ppmi', 'neighbours', 'saving']);
    expect(await infoOf()).toEqual(info);
    await store.close();
    store = (await Stores.open(place.target)).store;
    expect((await TermModel.load(store))?.info).toEqual(info);
    expect(await modelRows()).toHaveLength(info.terms);
  });

  test('behavior: the same seed gives the same model', async () => {
    await seed(corpus());
    const first = (await TermModel.build(store, { dimensions: 12, seed: 5 }));
    const rows = await modelRows();
    const second = (await TermModel.build(store, { dimensions: 12, seed: 5 }));
    expect({ ...second, builtAt: 0, updatedAt: 0 }).toEqual({ ...first, builtAt: 0, updatedAt: 0 });
    expect(await modelRows()).toEqual(rows);
  });

  test('behavior: a rebuild replaces the earlier model', async () => {
    await seed(corpus());
    (await TermModel.build(store, { dimensions: 12 }));
    const info = (await TermModel.build(store, { dimensions: 4 }));
    expect((await TermModel.load(store))?.info).toEqual(info);
    const lengths = await peek.column('SELECT DISTINCT length(lsa) FROM term_model_terms');
    expect(lengths).toEqual([4 * 4]);
  });

  test('behavior: a large index is sampled evenly', async () => {
    await seed(corpus());
    expect((await TermModel.build(store, { maxChunks: 10, dimensions: 8 })).chunks).toBe(10);
  });

  test('behavior: a capped vocabulary keeps the terms in the most chunks', async () => {
    await seed(corpus());
    const all = (await TermModel.build(store, { dimensions: 8 }));
    const allTerms = new Set((await modelRows()).map((r) => r.term));
    expect((await TermModel.build(store, { dimensions: 8, vocabulary: 10 }))).toMatchObject({ terms: 10, ppmiTerms: 10 });
    const kept = (await modelRows()).map((r) => r.term);
    expect(all.terms).toBeGreaterThan(10);
    const df = new Map<string, number>();
    for (const item of corpus()) for (const text of item.chunks) for (const stem of new Set(Text.stemsOf(`${item.title} ${text}`))) df.set(stem, (df.get(stem) ?? 0) + 1);
    const least = Math.min(...kept.map((term) => df.get(term)!));
    for (const term of allTerms) if (!kept.includes(term)) expect(df.get(term)).toBeLessThanOrEqual(least);
    expect(kept).toContain('kitchen');
  });

  test('behavior: private and paused content leaves no trace: the model is the one built without it', async () => {
    const channelId = await seed(corpus().slice(0, 6));
    const hiddenChannels = await addHiddenContent();
    await put(channelId, corpus().slice(6), 'later');
    const question = `Where does the fridge keep the ${hidden[0]} and ${hidden[1]}?`;
    const kitchen = { title: 'kitchen', text: `The refrigerator keeps the food cold. Close the fridge door, ${hidden[2]}.` };
    const build = async (options: TermModel.BuildOptions) => {
      const info = (await TermModel.build(store, { dimensions: 12, seed: 3, ...options }));
      const model = (await TermModel.load(store))!;
      const { builtAt: _b, updatedAt: _u, throughRowid: _t, ...kept } = info;
      return { info: kept, rows: await modelRows(), features: featuresOf(model, question, kitchen, ['The fridge keeps the milk cold.']) };
    };
    const withHidden = [await build({}), await build({ maxChunks: 20 })];
    const hiddenStems = hidden.map(Text.stem);
    const rows = withHidden[0]!.rows as { term: string; lsa_neighbours: string; ppmi_neighbours: string }[];
    expect(rows.length).toBeGreaterThan(20);
    for (const row of rows) for (const stem of hiddenStems) expect(JSON.stringify(row)).not.toContain(stem);

    for (const id of hiddenChannels) await peek.run('DELETE FROM channels WHERE id = ?', id);
    await peek.run(`DELETE FROM profiles WHERE slug = 'lab'`);
    expect([await build({}), await build({ maxChunks: 20 })]).toEqual(withHidden);
  });

  test('behavior: a tiny corpus builds with fewer dimensions than asked, and an empty one builds empty', async () => {
    await seed([{ title: 'Tiny', chunks: ['Cold milk.', 'Cold milk again.', 'Warm bread.', 'Warm bread and cold milk.', 'Milk.'] }]);
    const info = (await TermModel.build(store));
    expect(info.chunks).toBe(5);
    expect(info.dimensions).toBeLessThanOrEqual(info.terms);
    const f = featuresOf((await TermModel.load(store))!, 'milk', { title: 'Tiny', text: 'Warm bread.' }, ['Cold milk.']);
    for (const value of Object.values(f)) expect(Number.isFinite(value)).toBe(true);

    await peek.run('DELETE FROM items');
    expect((await TermModel.build(store))).toMatchObject({ chunks: 0, terms: 0, ppmiTerms: 0, dimensions: 0 });
    expect(featuresOf((await TermModel.load(store))!, 'milk', { title: 'Tiny', text: 'Cold milk.' }, ['Cold milk.'])).toMatchObject({ softPpmi: 0, softLsa: 0, feedback: 0 });
  });

  test('error: rejects bad options and keeps the earlier model', async () => {
    await seed(corpus());
    const info = (await TermModel.build(store, { dimensions: 8 }));
    await expect(TermModel.build(store, { dimensions: 0 })).rejects.toThrow(/dimensions/);
    await expect(TermModel.build(store, { maxChunks: -1 })).rejects.toThrow(/maxChunks/);
    await expect(TermModel.build(store, { seed: 1.5 })).rejects.toThrow(/seed/);
    await expect(TermModel.build(store, { vocabulary: 0 })).rejects.toThrow(/vocabulary/);
    expect((await TermModel.load(store))?.info).toEqual(info);
  });
});

describe('TermModel.features', () => {
  const refrigerator = { title: 'kitchen', text: 'The refrigerator keeps the food cold. Close the refrigerator door in the kitchen.' };
  const bicycle = { title: 'cycling', text: 'The bicycle chain needs oil. Ride the bicycle along the road.' };

  test('behavior: a synonym the question does not use counts as a soft match', async () => {
    await seed(corpus());
    (await TermModel.build(store, { dimensions: 16, seed: 3 }));
    const model = (await TermModel.load(store))!;
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

  test('behavior: feedback is the closeness to the first stage’s top candidates', async () => {
    await seed(corpus());
    (await TermModel.build(store, { dimensions: 16, seed: 3 }));
    const model = (await TermModel.load(store))!;
    const top = ['Milk and cheese stay cold in the fridge.', 'Wipe the fridge door and shelves.'];
    const kitchen = featuresOf(model, 'fridge', refrigerator, top).feedback;
    const cycling = featuresOf(model, 'fridge', bicycle, top).feedback;
    expect(kitchen).toBeGreaterThan(0.2);
    expect(Math.abs(cycling)).toBeLessThan(0.05);
    expect(featuresOf(model, 'fridge', refrigerator, []).feedback).toBe(0);
  });

  test('behavior: terms the model lacks give no soft match', async () => {
    await seed(corpus());
    (await TermModel.build(store, { dimensions: 8 }));
    const f = featuresOf((await TermModel.load(store))!, 'quasar nebula', { title: 'Sky', text: 'Quasars outshine every nebula. The telescope sees far.' }, ['Unknown words only.']);
    expect(f).toMatchObject({ softPpmi: 0, softLsa: 0, feedback: 0 });
    expect(TermModel.featureNames).toEqual(['softPpmi', 'softLsa', 'sentenceSoft', 'feedback']);
  });

  test('behavior: no model, nothing to load', async () => {
    await seed(corpus());
    expect((await TermModel.load(store))).toBeUndefined();
  });
});

describe('TermModel.update', () => {
  const refrigerator = { title: 'kitchen', text: 'The refrigerator keeps the food cold. Close the refrigerator door in the kitchen.' };
  const bicycle = { title: 'cycling', text: 'The bicycle chain needs oil. Ride the bicycle along the road.' };
  const icebox = [{ title: 'kitchen', chunks: ['The icebox keeps the milk and cheese cold.', 'Close the icebox door in the kitchen.', 'Leftover soup goes into the cold icebox.'] }];

  test('behavior: a word added after the build gets an LSA vector and neighbours, and the rest stays as built', async () => {
    const channelId = await seed(corpus());
    const built = (await TermModel.build(store, { dimensions: 16, seed: 3 }));
    const before = await modelRows();
    await put(channelId, icebox, 'new');

    expect((await TermModel.update(store))).toEqual({ chunks: 3, terms: 1 });
    const row = (await peek.get('SELECT lsa, lsa_neighbours AS lsa_neighbours, ppmi_neighbours, folded_at FROM term_model_terms WHERE term = ?', 'icebox'))!;
    expect(row.folded_at).toEqual(expect.any(Number));
    expect((row.lsa as Buffer).length).toBe(16 * 4);
    expect(row.ppmi_neighbours).toBe('[]');
    const neighbours = (JSON.parse(row.lsa_neighbours as string) as [string, number][]).map(([term]) => term);
    expect(neighbours.slice(0, 5)).toEqual(expect.arrayContaining(['kitchen']));
    expect(neighbours.slice(0, 10)).not.toEqual(expect.arrayContaining(['bicycl']));
    expect((await modelRows()).filter((r) => r.term !== 'icebox')).toEqual(before);
    expect(await infoOf()).toMatchObject({ ...built, updatedChunks: 3, foldedTerms: 1, updatedAt: expect.any(Number), throughRowid: expect.any(Number) });

    const model = (await TermModel.load(store))!;
    expect(featuresOf(model, 'Where is the icebox?', refrigerator).softLsa).toBeGreaterThan(featuresOf(model, 'Where is the icebox?', bicycle).softLsa);
    expect((await TermModel.update(store))).toEqual({ chunks: 0, terms: 0 });
  });

  test('behavior: private and paused content added after the build is not folded in', async () => {
    await seed(corpus());
    (await TermModel.build(store, { dimensions: 16, seed: 3 }));
    const rows = await modelRows();
    const info = await infoOf();
    await addHiddenContent();

    expect((await TermModel.update(store))).toEqual({ chunks: 0, terms: 0 });
    expect(await modelRows()).toEqual(rows);
    expect(await infoOf()).toMatchObject({ ...info, throughRowid: expect.any(Number), updatedAt: expect.any(Number) });
    expect((await infoOf()).throughRowid).toBeGreaterThan(info.throughRowid);
    expect((await TermModel.freshness(store))).toEqual({ rebuild: undefined, publicChunks: 36 });
  });

  test('behavior: a rebuild is due once public content grows by a fifth, or a channel is made private', async () => {
    const channelId = await seed(corpus());
    (await TermModel.build(store, { dimensions: 8 }));
    const more = (n: number, prefix: string) => put(channelId, [{ title: 'more', chunks: Array.from({ length: n }, (_, i) => `Fresh bread number ${i}.`) }], prefix);
    await more(7, 'a');
    expect((await TermModel.freshness(store))).toEqual({ rebuild: undefined, publicChunks: 43 });
    expect((await TermModel.refresh(store))).toEqual({ action: 'updated' });
    await more(1, 'b');
    expect((await TermModel.freshness(store))).toEqual({ rebuild: 'public content grew by 22% since the build', publicChunks: 44 });
    // Too large to rebuild here: fold in, and say a rebuild is due.
    expect((await TermModel.refresh(store, { rebuildLimit: 43 }))).toEqual({ action: 'updated', rebuildDue: 'public content grew by 22% since the build' });
    expect((await TermModel.refresh(store, { rebuildLimit: 44 }))).toEqual({ action: 'built' });
    expect((await TermModel.freshness(store)).rebuild).toBeUndefined();
    expect(await infoOf()).toMatchObject({ publicChunks: 44, updatedChunks: 0 });

    await store.channels.update(channelId, { accessLevel: 'private' });
    expect((await TermModel.freshness(store)).rebuild).toBe('the public channels changed since the build');
  });

  test('behavior: refresh builds a missing model, and leaves a store without public content alone', async () => {
    expect((await TermModel.refresh(store, { rebuildLimit: Infinity }))).toEqual({ action: 'unchanged' });
    expect((await TermModel.load(store))).toBeUndefined();
    await seed(corpus());
    expect((await TermModel.refresh(store))).toEqual({ action: 'unchanged', rebuildDue: 'there is no term model' });
    expect((await TermModel.refresh(store, { rebuildLimit: 36 }))).toEqual({ action: 'built' });
    expect((await TermModel.load(store))?.info).toMatchObject({ chunks: 36, publicChunks: 36 });
  });

  test('error: without a model there is nothing to update', async () => {
    await seed(corpus());
    expect((await TermModel.update(store))).toBeUndefined();
    await expect(TermModel.update(store, { maxChunks: 0 })).rejects.toThrow(/maxChunks/);
  });
});
