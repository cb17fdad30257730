import type { Dataset } from '../../src/eval/Beir.js';

/**
 * A smaller judged dataset drawn from a BEIR one, the same on every run: every `step`-th judged query (in id order),
 * every document judged for them, and unjudged documents spread evenly over the corpus as distractors, up to
 * `documents` in all. For checks that hold on any judged dataset (a fitted weight never ranks below the lexical
 * baseline it was fitted against), where the whole corpus would only cost time.
 */
export function sample(data: Dataset, options: { queries: number; documents: number }): Dataset {
  const judged = [...data.qrels.keys()].sort();
  const step = Math.max(1, Math.floor(judged.length / options.queries));
  const kept = judged.filter((_, i) => i % step === 0).slice(0, options.queries);
  const relevant = new Set(kept.flatMap((id) => [...data.qrels.get(id)!.keys()]));
  const others = data.corpus.filter((d) => !relevant.has(d.id));
  const room = Math.max(0, options.documents - relevant.size);
  const every = others.length / Math.max(1, room);
  const distractors = new Set(Array.from({ length: Math.min(room, others.length) }, (_, i) => others[Math.floor(i * every)]!.id));
  return {
    corpus: data.corpus.filter((d) => relevant.has(d.id) || distractors.has(d.id)),
    queries: new Map(kept.map((id) => [id, data.queries.get(id)!])),
    qrels: new Map(kept.map((id) => [id, data.qrels.get(id)!])),
  };
}
