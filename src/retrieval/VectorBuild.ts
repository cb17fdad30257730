import type { Database } from '../store/Database.js';
import * as VectorIndex from '../store/VectorIndex.js';
import type { Embedder } from './Embedder.js';

type Row = { rowid: number; title: string; text: string };

/** What a build did: chunks in the store, vectors stored, and how long embedding and writing took. */
export type BuildReport = { chunks: number; vectors: number; seconds: number };

/**
 * Embeds every chunk (its item's title, then its text, as ingestion does) into a new vector index for the embedder.
 * The index carries a `building` id until the last batch is written, so a build that fails half-way is never searched.
 */
export async function build(db: Database, embedder: Embedder, options: { batch?: number; onProgress?: (done: number, total: number) => void } = {}): Promise<BuildReport> {
  const started = performance.now();
  const batch = options.batch ?? 64;
  const total = db.prepare('SELECT count(*) FROM chunks').pluck().get() as number;
  const page = db.prepare('SELECT c.rowid AS rowid, i.title, c.text FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid > ? ORDER BY c.rowid LIMIT ?');
  let after = 0;
  let done = 0;
  let created = false;
  for (;;) {
    const rows = page.all(after, batch) as Row[];
    if (rows.length === 0) break;
    // Embed first, then write: a transaction cannot wait on the network.
    const vectors = await embedder.embed(rows.map((r) => `${r.title}\n${r.text}`), 'document');
    if (!created) {
      VectorIndex.create(db, { embedderId: VectorIndex.building(embedder.id), dimensions: vectors[0]!.length });
      created = true;
    }
    db.transaction(() => VectorIndex.put(db, rows.map((r, i) => ({ rowid: r.rowid, vector: vectors[i]! }))))();
    after = rows.at(-1)!.rowid;
    done += rows.length;
    options.onProgress?.(done, total);
  }
  if (!created) VectorIndex.create(db, { embedderId: embedder.id, dimensions: (await embedder.embed(['dimension probe'], 'query'))[0]!.length });
  VectorIndex.markBuilt(db, embedder.id);
  return { chunks: total, vectors: VectorIndex.count(db), seconds: (performance.now() - started) / 1000 };
}
