import type { Store } from '../../store/Store.js';
import type { ItemDraft, IndexedDraft } from '../../store/Items.js';
import * as Text from '../Text.js';

/**
 * What the search index counts of a chunk: each distinct stem of its text and its item's title, the title's counting
 * three times (as BM25F weighs a title field), and its length in tokens. Written with the chunk (`Items.put`).
 */

/** The weight of a title occurrence against one in the text. */
export const titleWeight = 3;

/** Bumped when the analysis changes: stored rows are then written again when an index opens (`fill`). */
export const analysisVersion = '1';

/** Adds each stem of a text to `counts`, `weight` per occurrence; tokens are counted first, so each is stemmed once. */
function countStems(text: string, weight: number, counts: Map<string, number>): void {
  const tokens = new Map<string, number>();
  for (const token of Text.tokens(text)) tokens.set(token, (tokens.get(token) ?? 0) + 1);
  for (const [token, n] of tokens) {
    const stem = Text.stem(token);
    counts.set(stem, (counts.get(stem) ?? 0) + n * weight);
  }
}

/** Each distinct stem of a chunk and its title with its weighted count. */
export function analyze(title: string, text: string): Map<string, number> {
  const counts = new Map<string, number>();
  countStems(title, titleWeight, counts);
  countStems(text, 1, counts);
  return counts;
}

/** An item draft with what the index counts of each chunk, ready for `store.items.put`. */
export function indexed(draft: ItemDraft): IndexedDraft {
  const titleTokens = Text.tokens(draft.title).length;
  const title = analyze(draft.title, '');
  return {
    ...draft,
    chunks: draft.chunks.map((chunk) => {
      const terms = new Map(title);
      countStems(chunk.text, 1, terms);
      return { ...chunk, tokenCount: chunk.tokenCount ?? titleTokens + Text.tokens(chunk.text).length, terms };
    }),
  };
}

/**
 * The meta key saying every chunk had its row, under the analysis it names: written once a fill finds none missing.
 * From then on every chunk is given its row in the transaction that writes it, so later opens skip the search for
 * chunks without one (seconds at a million chunks: the look at each chunk's row, not the rows themselves).
 */
const filledKey = 'search_docs_filled';

/**
 * Writes the rows of chunks that have none (a store from before the index, or after an analysis change), in batches of
 * one transaction each, so an interrupted fill resumes where it stopped. Returns how many chunks were added.
 */
export async function fill(store: Store, options: { batch?: number; onProgress?: (done: number, total: number) => void } = {}): Promise<number> {
  if ((await store.search.analysis()) !== analysisVersion) await store.search.reset(analysisVersion);
  if ((await store.meta.get(filledKey)) === analysisVersion) return 0;
  const total = await store.search.unindexedCount();
  if (total === 0) {
    await store.meta.set(filledKey, analysisVersion);
    return 0;
  }
  const batch = options.batch ?? 5_000;
  let after = 0;
  let done = 0;
  for (;;) {
    const rows = await store.search.unindexed(after, batch);
    if (rows.length === 0) break;
    await store.search.put(rows.map((r) => ({ rowid: r.rowid, channelId: r.channelId, length: r.length, terms: analyze(r.title, r.text) })));
    after = rows[rows.length - 1]!.rowid;
    await store.search.trimLog();
    done += rows.length;
    options.onProgress?.(done, total);
  }
  // Chunks written meanwhile were given their rows as they were written: the store is whole.
  await store.meta.set(filledKey, analysisVersion);
  return done;
}
