import { createHash } from 'node:crypto';
import type { Store } from '../../store/Store.js';

/**
 * What a build of the term model produced and updates added since, as kept in the meta table: how a later update or
 * freshness check knows what the model has read.
 */

/** What a build produced, and what updates added since; kept in the meta table under `term_model`. */
export type BuildInfo = {
  /** Dimensions of the stored LSA term vectors. */
  dimensions: number;
  ppmiDimensions: number;
  /** Chunks the model was built from (the sample). */
  chunks: number;
  /** Terms with an LSA vector; `ppmiTerms` of them also have PPMI neighbours. Folded-in terms are not counted. */
  terms: number;
  ppmiTerms: number;
  seed: number;
  /** When the build read the store. */
  builtAt: number;
  /** Public chunks when built: the sample was drawn from them. */
  publicChunks: number;
  /** A digest of the public channels the build read, so a channel made private or paused since shows. */
  channels: string;
  /** Chunks up to this rowid have been read, by the build or an update; later ones are new content. */
  throughRowid: number;
  /** New public chunks read by `update` since the build, and the terms it folded in from them. */
  updatedChunks: number;
  foldedTerms: number;
  updatedAt: number;
};

/** The stored build's record, or undefined when no model was built. */
export async function stored(store: Store): Promise<BuildInfo | undefined> {
  const raw = await store.termModel.info();
  return raw === undefined ? undefined : (JSON.parse(raw) as BuildInfo);
}

/** A model built before updates existed lacks what an update needs (where it read up to, which channels). */
export function incremental(info: BuildInfo): boolean {
  return typeof info.throughRowid === 'number' && typeof info.channels === 'string';
}

/** The public channels that existed at `asOf`, as a digest: it moves when one of them is made private or paused. */
export async function channelDigest(store: Store, asOf: number): Promise<string> {
  const ids = await store.termModel.publicChannelsAsOf(asOf);
  return createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 32);
}
