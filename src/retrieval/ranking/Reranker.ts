import model from './reranker.json' with { type: 'json' };
import * as Features from './Features.js';

/** A linear model over standardized features, with a logistic calibration that turns its output into [0, 1]. */
export type Model = {
  features: string[];
  mean: number[];
  scale: number[];
  weights: number[];
  calibration: { slope: number; intercept: number };
  /** Where and how the model was fit, for the record. */
  fit: Record<string, unknown>;
};

export const defaultModel = model as Model;

/** The model's raw linear output for one feature vector. */
export function linear(m: Model, x: number[]): number {
  let s = 0;
  for (let i = 0; i < m.weights.length; i++) s += (m.weights[i]! * (x[i]! - m.mean[i]!)) / (m.scale[i]! || 1);
  return s;
}

/**
 * The relevance score of a candidate: the calibrated probability that it answers the question. Calibrated on held-out
 * judgements, so 0.5 means the same thing for any question and any profile.
 */
export function score(m: Model, x: number[]): number {
  return 1 / (1 + Math.exp(-(m.calibration.slope * linear(m, x) + m.calibration.intercept)));
}

/** Checks that a model matches the features this build computes. */
export function check(m: Model): Model {
  if (m.features.join() !== Features.names.join()) throw new Error(`reranker model features ${m.features.join()} do not match ${Features.names.join()}`);
  return m;
}
