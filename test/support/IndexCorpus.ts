import { afterEach } from 'vitest';
import * as SearchTerms from '../../src/retrieval/index/SearchTerms.js';
import * as Text from '../../src/retrieval/Text.js';
import * as Stores from '../../src/store/Store.js';
import * as Engines from './Engines.js';
import * as Peek from './Peek.js';

/**
 * Stores of random chunks for the lexical index's suites, on this run's engine: what a case opens (stores, their
 * places, peeks) is closed and removed after it, last first.
 */

export type Place = Awaited<ReturnType<typeof Engines.fresh>>;

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

/** Runs `close` after the case. */
export const after = (close: () => Promise<void>): void => void opened.push(close);

export async function fresh(name: string): Promise<Place> {
  const place = await Engines.fresh(Engines.current, `index-${name}`);
  opened.push(place.drop);
  return place;
}

/** One more connection to the store at `place`, with the Store over it, as another process would have. */
export async function connect(place: Place): Promise<Stores.Store> {
  const { store } = await Stores.open(place.target);
  opened.push(() => store.close());
  return store;
}

export const vocabulary = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}x`);

export function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

/** A random item of 3 chunks, words drawn with a skew so some are common and most are rare. */
export function item(r: () => number, channelId: string, externalId: string) {
  const word = () => vocabulary[Math.floor(r() * r() * r() * vocabulary.length)]!;
  const chunks = [0, 1, 2].map(() => ({ text: Array.from({ length: 10 + Math.floor(r() * 80) }, word).join(' ') }));
  return SearchTerms.indexed({ channelId, externalId, title: `${word()} ${word()}`, contentHash: `h${externalId}`, chunks });
}

/** A store of `items` items over three public channels, with a peek at its tables. */
export async function corpus(name: string, items: number, seed = 7): Promise<{ place: Place; store: Stores.Store; peek: Peek.Peek; channels: string[] }> {
  const place = await fresh(name);
  const store = await connect(place);
  const peek = await Peek.open(place.env);
  opened.push(() => peek.close());
  const r = random(seed);
  const profile = await store.profiles.create({ slug: `p${seed}`, name: 'P', visibility: 'public' });
  const channels: string[] = [];
  for (const c of [0, 1, 2]) channels.push((await store.channels.create({ profileId: profile.id, kind: 'rss', label: `c${c}`, accessLevel: 'public', ratePerMillionTokens: 1 })).id);
  for (let i = 0; i < items; i++) await store.items.put(item(r, channels[i % 3]!, `i${i}`));
  return { place, store, peek, channels };
}

export const query = (words: string[], channelIds: Iterable<string>, limit = 100) => ({
  terms: words.map((w) => ({ token: w, stem: Text.stem(w) })),
  text: words.join(' '),
  channelIds: new Set(channelIds),
  limit,
});
