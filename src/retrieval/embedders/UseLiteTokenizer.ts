/**
 * The Universal Sentence Encoder lite's SentencePiece tokenizer, as its TF.js package runs it
 * (`@energetic-ai/embeddings`, after tfjs-models' universal-sentence-encoder): a Viterbi segmentation over the
 * vocabulary's unigram scores. The vectors are faithful only if the ids are the package's, so its quirks are kept:
 * - only the space is a word boundary (`▁`); tabs and newlines stay characters of their own;
 * - a character that starts no piece is the unknown id 0 with score 0, better than any piece's negative score, and a
 *   run of unknown ids is one;
 * - a path whose score sums to exactly 0 counts as none yet, and among equal scores the piece that starts later wins;
 * - the best path is walked back by each piece's length in UTF-16 code units, though it was found over code points.
 */
export type Tokenizer = { encode(text: string): number[] };

/** The vocabulary as `vocab.json` holds it: `[piece, score]`, the id being the index. */
export type Vocabulary = [string, number][];

/** The first ids are control symbols (unknown, `<s>`, `</s>`, extra ids), never matched in text. */
const reserved = 6;

const boundary = '\u2581';

type Node = { children: Map<string, Node>; id: number };

export function create(vocabulary: Vocabulary): Tokenizer {
  const root: Node = { children: new Map(), id: -1 };
  for (let id = reserved; id < vocabulary.length; id++) {
    let node = root;
    for (const symbol of vocabulary[id]![0]) {
      let next = node.children.get(symbol);
      if (!next) node.children.set(symbol, (next = { children: new Map(), id: -1 }));
      node = next;
    }
    node.id = id;
  }
  const scores = Float64Array.from(vocabulary, ([, score]) => score);
  const lengths = Int32Array.from(vocabulary, ([piece]) => piece.length);

  return {
    encode(text) {
      const normalized = text.normalize('NFKC');
      if (normalized.length === 0) return [];
      const symbols = Array.from(boundary + normalized.replaceAll(' ', boundary));
      const n = symbols.length;
      const best = new Float64Array(n + 1);
      const ids = new Int32Array(n + 1);
      // Forward: the pieces starting at `start`, shortest first, offered to the position each ends at. Each end sees
      // its candidates by ascending start, as the package's table of starts per end gives them.
      for (let start = 0; start < n; start++) {
        let node = root.children.get(symbols[start]!);
        let matched = false;
        for (let end = start + 1; node && end <= n; end++) {
          if (node.id >= 0) {
            matched = true;
            offer(end, node.id, scores[node.id]! + best[start]!);
          }
          node = end < n ? node.children.get(symbols[end]!) : undefined;
        }
        if (!matched) offer(start + 1, 0, best[start]!);
      }
      function offer(end: number, id: number, score: number) {
        if (best[end] === 0 || score >= best[end]!) {
          best[end] = score;
          ids[end] = id;
        }
      }
      const reversed: number[] = [];
      for (let at = n; at > 0; at -= lengths[ids[at]!]!) reversed.push(ids[at]!);
      const out: number[] = [];
      for (let i = reversed.length - 1; i >= 0; i--) {
        const id = reversed[i]!;
        // A run of unknowns is one: the package keeps the last of a run, walking back from the end.
        if (id === 0 && i > 0 && reversed[i - 1] === 0) continue;
        out.push(id);
      }
      return out;
    },
  };
}
