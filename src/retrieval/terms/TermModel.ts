/**
 * Soft term matching learnt from the indexed corpus itself: which words stand in for a question's words (PPMI-SVD
 * embeddings of co-occurrence within sentences, and LSA of the TF-IDF term×chunk matrix), and how close a chunk is
 * to the topic of the first stage's best candidates. Learnt from public content only, by `build` (offline, bounded by
 * a sample and a vocabulary cap) and `update` (new terms folded in); read at query time through `load`.
 *
 * This is the term model as the rest of the service uses it; each part lives in a file of its own in this folder.
 */

export { build, type BuildOptions } from './Build.js';
export type { BuildInfo } from './BuildInfo.js';
export { update, type UpdateInfo, type UpdateOptions } from './FoldIn.js';
export { automaticLimit, freshness, refresh, type Freshness, type Refresh, type RefreshOptions } from './Freshness.js';
export { featureNames, load, type FeatureInput, type TermFeatures, type TermModel } from './SoftFeatures.js';
