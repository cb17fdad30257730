import { z } from 'zod';
import * as Features from './Features.js';
import * as Reranker from './Reranker.js';

/*
 * Vector similarity joins ranking as one more feature of the reranker's linear model: the cosine similarity of the
 * question to every candidate, wherever the candidate was found. Its weight belongs to the embedder (the spread of
 * cosines differs from model to model), so `profile-edge fit` measures it on judged queries and stores it with the
 * vector index. Until then the weight is 0: an embedder nobody measured ranks exactly as the words do.
 */

export const feature = 'similarity';

/** The reranker's features with vectors on, in the order the model reads them. */
export const names: readonly string[] = [...Features.names, feature];

/** The lexical model with similarity as its last feature, standardized by `mean` and `scale`, of weight `weight`. */
export function withSimilarity(
  lexical: Reranker.Model,
  similarity: { mean: number; scale: number; weight: number },
  calibration: Reranker.Model['calibration'] = lexical.calibration,
  fit: Record<string, unknown> = {},
): Reranker.Model {
  return {
    features: [...names],
    mean: [...lexical.mean, similarity.mean],
    scale: [...lexical.scale, similarity.scale],
    weights: [...lexical.weights, similarity.weight],
    calibration,
    fit,
  };
}

/** The default for an embedder with no fit: similarity weighs nothing, so scores are the lexical model's own. */
export function unfitted(lexical: Reranker.Model = Reranker.defaultModel): Reranker.Model {
  return withSimilarity(lexical, { mean: 0, scale: 1, weight: 0 }, lexical.calibration, { fitted: false });
}

/** The weight similarity carries in a model (0 for a lexical one). */
export function weightOf(model: Reranker.Model): number {
  return model.features.at(-1) === feature ? model.weights.at(-1)! : 0;
}

const finite = z.number().finite();
const Stored = z.object({
  features: z.array(z.string()),
  mean: z.array(finite),
  scale: z.array(finite),
  weights: z.array(finite),
  calibration: z.object({ slope: finite, intercept: finite }),
  fit: z.record(z.string(), z.unknown()),
});

/**
 * A stored fusion model, if it still fits this build: the same features in the same order. One fitted by a version
 * with other features is undefined (and the caller says so): its weights would be read against the wrong features.
 */
export function parse(stored: unknown): Reranker.Model | undefined {
  const parsed = Stored.safeParse(stored);
  if (!parsed.success) return undefined;
  const m = parsed.data;
  const sized = [m.mean, m.scale, m.weights].every((a) => a.length === names.length);
  return sized && m.features.join() === names.join() ? m : undefined;
}
