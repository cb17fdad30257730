import { lazy } from '../../errors/Lazy.js';
import { type Command, number } from '../Command.js';

const loadJobs = lazy('The job leases', () => import('../../health/Jobs.js'));
const loadTermModel = lazy('The term model', () => import('../../retrieval/terms/TermModel.js'));
const loadVectorBuild = lazy('The vector index build', () => import('../../retrieval/vectors/VectorBuild.js'));

export const reindex: Command = {
  name: 'reindex',
  summary: 'Rebuild the corpus term model, and the vector index with the configured embedder (with EMBEDDER=none, remove it).',
  usage: 'reindex [--batch N] [--no-terms]',
  options: { batch: { type: 'string' }, 'no-terms': { type: 'boolean' } },
  async run({ services: open, out }, { values }) {
    const [services, Jobs, TermModel, VectorBuild] = await Promise.all([open(), loadJobs(), loadTermModel(), loadVectorBuild()]);
    const { embedder } = services;
    if (!values['no-terms']) {
      const started = performance.now();
      const info = await Jobs.oneAtATime(services.store, 'term_model', () => TermModel.build(services.store, { onProgress: (stage) => out.status(`term model: ${stage}`) }), {
        onWait: (lease) => out.status(`term model: waiting for another process rebuilding it (${Jobs.holderOf(lease)})`),
      });
      // The model reads public content only, and a sample of it on a large store: say how much of it.
      out.line(`term model: ${info.terms} terms from ${info.chunks} of ${info.publicChunks} public chunks in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    if (!embedder) {
      await services.store.vectors.drop();
      out.line('EMBEDDER=none: vector index removed; retrieval is lexical only.');
      return;
    }
    const batch = number(values, 'batch', { min: 1, max: 2048, integer: true }) ?? 64;
    let progress: ReturnType<typeof out.progress> | undefined;
    const built = await Jobs.oneAtATime(
      services.store,
      'vector_index',
      () =>
        VectorBuild.build(services.store, embedder, {
          batch,
          onProgress: (done, total) => {
            progress ??= out.progress(total, `reindex ${embedder.id}`);
            progress.update(done, '');
          },
        }),
      { onWait: (lease) => out.status(`vector index: waiting for another process building it (${Jobs.holderOf(lease)})`) },
    );
    progress?.stop();
    out.line(`vector index: ${built.vectors} of ${built.chunks} chunks embedded with ${embedder.id} (${(built.chunks / Math.max(built.seconds, 1e-3)).toFixed(1)} chunks/s)`);
    if (!(await services.store.vectors.fusion(embedder.id))) out.line('vector fusion is not fitted for this embedder: similarity weighs nothing until `profile-edge fit --dataset DIR` (see README, Vectors).');
  },
};
