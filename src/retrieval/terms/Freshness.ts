import type { Store } from '../../store/Store.js';
import type { Stats } from '../index/Stats.js';
import * as Build from './Build.js';
import * as BuildInfo from './BuildInfo.js';
import * as FoldIn from './FoldIn.js';

/** Keeping the model current: whether a rebuild is due, and bringing the model up to date after new content. */

/** Public content this much larger than at the build (new chunks over the built count) makes a rebuild due. */
const rebuildGrowth = 0.2;

/** Stores with up to this many public chunks get their term model built automatically (under half a minute at the limit). */
export const automaticLimit = 20_000;

/** Whether the model needs a full rebuild: `update` only adds terms, it never re-learns the spaces. */
export type Freshness = {
  /** Why a rebuild is due, or undefined when folding in new content keeps the model good. */
  rebuild: string | undefined;
  /** Public chunks now, as far as the model has counted them (deletions since the build are not subtracted). */
  publicChunks: number;
};

/**
 * Whether a rebuild is due: there is no model, or the public channels changed since the build (content made private
 * or paused must leave the model; content made public joins it), or new public content has grown past a fifth of
 * what the build read. Cheap: it counts only chunks newer than the model.
 */
export async function freshness(store: Store): Promise<Freshness> {
  const info = await BuildInfo.stored(store);
  const counted = () => store.termModel.publicChunkCount();
  if (!info) return { rebuild: 'there is no term model', publicChunks: await counted() };
  if (!BuildInfo.incremental(info)) return { rebuild: 'the term model was built by an earlier version', publicChunks: await counted() };
  // By rowid first: the count costs what is new, not what the store holds.
  const pending = await store.termModel.publicChunkCount(info.throughRowid);
  const added = info.updatedChunks + pending;
  const publicChunks = info.publicChunks + added;
  if ((await BuildInfo.channelDigest(store, info.builtAt)) !== info.channels) return { rebuild: 'the public channels changed since the build', publicChunks };
  if (added > rebuildGrowth * info.publicChunks) {
    const growth = info.publicChunks > 0 ? `by ${Math.round((100 * added) / info.publicChunks)}%` : `from nothing to ${added} chunks`;
    return { rebuild: `public content grew ${growth} since the build`, publicChunks };
  }
  return { rebuild: undefined, publicChunks };
}

export type RefreshOptions = {
  /** Rebuild when one is due and public content is at most this many chunks; fold in only otherwise. Default 0. */
  rebuildLimit?: number;
  stats?: Stats;
  onProgress?: (stage: string) => void;
};

/** What `refresh` did, and whether a rebuild is still due (too large to do here). */
export type Refresh = { action: 'built' | 'updated' | 'unchanged'; rebuildDue?: string };

/**
 * Brings the model up to date after new content: a full build when one is due and the store is within
 * `rebuildLimit`, else new public chunks folded in (time in proportion to them, not to the corpus).
 */
export async function refresh(store: Store, options: RefreshOptions = {}): Promise<Refresh> {
  const { rebuild, publicChunks } = await freshness(store);
  // No public content, no model to learn: not a rebuild anyone needs to run.
  if (rebuild !== undefined && publicChunks === 0 && !(await BuildInfo.stored(store))) return { action: 'unchanged' };
  if (rebuild !== undefined && publicChunks <= (options.rebuildLimit ?? 0)) {
    await Build.build(store, { stats: options.stats, onProgress: options.onProgress });
    return { action: 'built' };
  }
  const updated = await FoldIn.update(store, { stats: options.stats });
  return { action: updated && updated.chunks > 0 ? 'updated' : 'unchanged', ...(rebuild !== undefined && { rebuildDue: rebuild }) };
}
