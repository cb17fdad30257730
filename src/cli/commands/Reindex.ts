import * as TermModel from '../../retrieval/TermModel.js';
import * as VectorIndex from '../../store/VectorIndex.js';
import { type Command, number } from '../Command.js';

type Row = { rowid: number; title: string; text: string };

export const reindex: Command = {
  name: 'reindex',
  summary: 'Rebuild the corpus term model, and the vector index with the configured embedder (with EMBEDDER=none, remove it).',
  usage: 'reindex [--batch N] [--no-terms]',
  options: { batch: { type: 'string' }, 'no-terms': { type: 'boolean' } },
  async run({ services: open, out }, { values }) {
    const services = open();
    const { db, embedder } = services;
    if (!values['no-terms']) {
      const started = performance.now();
      const info = TermModel.build(db, { onProgress: (stage) => out.status(`term model: ${stage}`) });
      // The model reads public content only, and a sample of it on a large store: say how much of it.
      out.line(`term model: ${info.terms} terms from ${info.chunks} of ${info.publicChunks} public chunks in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    if (!embedder) {
      VectorIndex.drop(db);
      out.line('EMBEDDER=none: vector index removed; retrieval is lexical only.');
      return;
    }
    const batch = number(values, 'batch', { min: 1, max: 2048, integer: true }) ?? 64;
    const total = db.prepare('SELECT count(*) FROM chunks').pluck().get() as number;
    const page = db.prepare(
      'SELECT c.rowid AS rowid, i.title, c.text FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid > ? ORDER BY c.rowid LIMIT ?',
    );
    const progress = out.progress(total, `reindex ${embedder.id}`);
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
      progress.update(done, '');
    }
    progress.stop();
    if (!created) VectorIndex.create(db, { embedderId: embedder.id, dimensions: (await embedder.embed(['dimension probe'], 'query'))[0]!.length });
    VectorIndex.markBuilt(db, embedder.id);
    out.line(`vector index: ${VectorIndex.count(db)} of ${total} chunks embedded with ${embedder.id}`);
  },
};
