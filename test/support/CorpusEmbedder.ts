import * as TinyOnnxModel from './TinyOnnxModel.js';

/**
 * Writes a small local embedding model learned from a corpus, for tests that need an embedder with some sense of
 * meaning and no download: word vectors by random indexing (each document gets a sparse random signature; a word's
 * vector is the sum of the signatures of the documents it occurs in), exported as a transformers.js model directory
 * that mean-pools them. Words seen in fewer than `minCount` documents are left out, as [UNK].
 */
export function write(directory: string, documents: string[], options: { dimensions?: number; minCount?: number; seed?: number } = {}): string {
  const dimensions = options.dimensions ?? 64;
  const minCount = options.minCount ?? 2;
  let seed = options.seed ?? 11;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const sums = new Map<string, Float32Array>();
  const counts = new Map<string, number>();
  for (const doc of documents) {
    // Eight ±1 entries a document: sparse signatures stay nearly orthogonal.
    const signature = Array.from({ length: 8 }, () => [Math.floor(random() * dimensions), random() < 0.5 ? -1 : 1] as const);
    for (const word of new Set(doc.toLowerCase().match(/[a-z0-9]+/g) ?? [])) {
      let v = sums.get(word);
      if (!v) sums.set(word, (v = new Float32Array(dimensions)));
      for (const [i, sign] of signature) v[i]! += sign;
      counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  const vectors: Record<string, number[]> = {};
  for (const [word, v] of sums) {
    // Words in most documents carry no topic: they are left out as stopwords would be.
    const n = counts.get(word)!;
    if (n >= minCount && n < documents.length / 10) vectors[word] = [...v].map((x) => x / Math.sqrt(n));
  }
  return TinyOnnxModel.write(directory, vectors);
}
