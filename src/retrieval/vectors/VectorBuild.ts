import * as SignCodes from '../../store/SignCodes.js';
import type { Store } from '../../store/Store.js';
import * as VectorIndex from '../../store/VectorIndex.js';
import type { Embedder } from '../embedders/Embedder.js';

type Row = { rowid: number; title: string; text: string };

/** What a build did: chunks in the store, vectors stored, and how long embedding and writing took. */
export type BuildReport = { chunks: number; vectors: number; seconds: number };

/**
 * Embeds every chunk (its item's title, then its text, as ingestion does) into a new vector index for the embedder.
 * The index carries a `building` id until the last batch is written, so a build that fails half-way is never searched.
 */
export async function build(store: Store, embedder: Embedder, options: { batch?: number; onProgress?: (done: number, total: number) => void } = {}): Promise<BuildReport> {
  const started = performance.now();
  const batch = options.batch ?? 64;
  const total = await store.chunks.count();
  const create = async (dimensions: number, embedderId: string) => {
    // The codes held in memory take at most this many dimensions.
    if (dimensions > SignCodes.maxDimensions) throw new Error(`bad vector dimension ${dimensions}`);
    await store.vectors.create({ embedderId, dimensions });
  };
  let after = 0;
  let done = 0;
  let created = false;
  for (;;) {
    const rows: Row[] = await store.chunks.page(after, batch);
    if (rows.length === 0) break;
    // Embed first, then write: a transaction cannot wait on the network.
    const vectors = await embedder.embed(rows.map((r) => `${r.title}\n${r.text}`), 'document');
    if (!created) {
      await create(vectors[0]!.length, VectorIndex.building(embedder.id));
      created = true;
    }
    await store.vectors.put(rows.map((r, i) => ({ rowid: r.rowid, vector: vectors[i]! })));
    after = rows.at(-1)!.rowid;
    done += rows.length;
    options.onProgress?.(done, total);
  }
  if (!created) await create((await embedder.embed(['dimension probe'], 'query'))[0]!.length, embedder.id);
  await store.vectors.markBuilt(embedder.id);
  return { chunks: total, vectors: await store.vectors.count(), seconds: (performance.now() - started) / 1000 };
}
