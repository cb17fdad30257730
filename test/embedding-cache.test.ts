import { describe, expect, test } from 'vitest';
import type { Embedder } from '../src/retrieval/embedders/Embedder.js';
import * as EmbeddingCache from '../src/retrieval/embedders/EmbeddingCache.js';

/** An embedder that records what reaches it: each text's vector is its length and its purpose. */
function counting(fail?: (texts: string[]) => boolean) {
  const calls: string[][] = [];
  const embedder: Embedder = {
    id: 'counting',
    async embed(texts, purpose) {
      calls.push(texts);
      if (fail?.(texts)) throw new Error('the model is down');
      return texts.map((t) => Float32Array.from([t.length, purpose === 'query' ? 1 : 0]));
    },
  };
  return { embedder, calls };
}

const plain = (vectors: Float32Array[]) => vectors.map((v) => [...v]);

describe('the embedding cache', () => {
  test('behavior: it answers as the embedder does, in order, duplicates included, under the embedder\'s id', async () => {
    const { embedder } = counting();
    const cache = EmbeddingCache.cached(embedder);
    expect(cache.id).toBe('counting');
    const texts = ['a question?', 'ab', 'a question?', ''];
    expect(plain(await cache.embed(texts, 'query'))).toEqual(plain(await embedder.embed(texts, 'query')));
  });

  test('behavior: only texts it does not remember reach the model, once each, in one call', async () => {
    const { embedder, calls } = counting();
    const cache = EmbeddingCache.cached(embedder);
    await cache.embed(['one', 'two', 'one'], 'document');
    await cache.embed(['two', 'three', 'one', 'three'], 'document');
    await cache.embed(['one', 'two', 'three'], 'document');
    expect(calls).toEqual([['one', 'two'], ['three']]);
  });

  test('behavior: a question and a passage of the same words are embedded apart', async () => {
    const { embedder, calls } = counting();
    const cache = EmbeddingCache.cached(embedder);
    const [query] = await cache.embed(['same words'], 'query');
    const [passage] = await cache.embed(['same words'], 'document');
    expect([...query!]).toEqual([10, 1]);
    expect([...passage!]).toEqual([10, 0]);
    expect(calls).toHaveLength(2);
  });

  test('behavior: past its size, the text used longest ago is forgotten first', async () => {
    const { embedder, calls } = counting();
    const cache = EmbeddingCache.cached(embedder, { entries: 2 });
    await cache.embed(['a', 'b'], 'query');
    await cache.embed(['a'], 'query'); // a is now the most recent
    await cache.embed(['c'], 'query'); // b goes
    await cache.embed(['a', 'c'], 'query');
    await cache.embed(['b'], 'query');
    expect(calls).toEqual([['a', 'b'], ['c'], ['b']]);
  });

  test('behavior: more new texts than it keeps are all answered', async () => {
    const { embedder } = counting();
    const cache = EmbeddingCache.cached(embedder, { entries: 1 });
    expect(plain(await cache.embed(['x', 'yy', 'zzz'], 'query'))).toEqual([[1, 1], [2, 1], [3, 1]]);
  });

  test('behavior: a caller that changes the vector it got changes nothing kept', async () => {
    const { embedder } = counting();
    const cache = EmbeddingCache.cached(embedder);
    const [first] = await cache.embed(['kept'], 'query');
    first!.fill(0);
    expect(plain(await cache.embed(['kept'], 'query'))).toEqual([[4, 1]]);
  });

  test('error: a model that answers for fewer texts than it was given fails the call, and nothing is remembered from it', async () => {
    const { embedder, calls } = counting();
    const short: Embedder = { id: 'short', embed: async (texts, purpose) => (await embedder.embed(texts, purpose)).slice(1) };
    const cache = EmbeddingCache.cached(short);
    await expect(cache.embed(['a', 'b'], 'query')).rejects.toThrow('the embedder returned 1 vectors for 2 texts');
    await expect(cache.embed(['a', 'b'], 'query')).rejects.toThrow();
    expect(calls).toEqual([['a', 'b'], ['a', 'b']]);
  });

  test('error: a model that fails fails the call, and nothing is remembered from it', async () => {
    let down = true;
    const { embedder, calls } = counting(() => down);
    const cache = EmbeddingCache.cached(embedder);
    await expect(cache.embed(['q'], 'query')).rejects.toThrow('the model is down');
    down = false;
    expect(plain(await cache.embed(['q'], 'query'))).toEqual([[1, 1]]);
    expect(calls).toEqual([['q'], ['q']]);
  });
});
