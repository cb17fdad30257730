/**
 * A near-free embeddings endpoint in a process of its own, as an embedder is in production (another process or
 * machine), so the query benchmark's own thread is not the one answering it. Prints its URL, then serves until killed.
 *
 *   npx tsx bench/embedding-stand-in.ts
 */
import * as Text from '../src/retrieval/Text.js';
import * as EmbeddingServer from '../test/support/EmbeddingServer.js';

/** A hashed bag of stems in 384 signed dimensions: the shape of a small sentence model's vectors, at no cost. */
function hashed384(text: string): number[] {
  const v = new Array<number>(384).fill(0);
  for (const stem of Text.stemsOf(text)) {
    let h = 2166136261;
    for (const ch of stem) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
    v[(h >>> 0) % 384]! += h & 1 ? 1 : -1;
  }
  return v;
}

const server = await EmbeddingServer.start({ embed: hashed384 });
process.stdout.write(`${server.url}\n`);
