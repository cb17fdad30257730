import type { Model } from '../retrieval/ranking/Reranker.js';

/** One judged query: its candidates' feature vectors and relevance labels. */
export type Group = { features: number[][]; labels: number[] };

const dot = (w: number[], z: number[]) => w.reduce((s, v, i) => s + v * z[i]!, 0);

function standardize(groups: Group[], dims: number): { mean: number[]; scale: number[] } {
  const mean = new Array<number>(dims).fill(0);
  const scale = new Array<number>(dims).fill(0);
  let n = 0;
  for (const g of groups) {
    for (const x of g.features) {
      x.forEach((v, i) => (mean[i]! += v));
      n += 1;
    }
  }
  mean.forEach((v, i) => (mean[i] = v / (n || 1)));
  for (const g of groups) for (const x of g.features) x.forEach((v, i) => (scale[i]! += (v - mean[i]!) ** 2));
  scale.forEach((v, i) => (scale[i] = Math.sqrt(v / (n || 1)) || 1));
  return { mean, scale };
}

function idealDcg(labels: number[]): number {
  return [...labels].sort((a, b) => b - a).slice(0, 10).reduce((s, g, i) => s + g / Math.log2(i + 2), 0);
}

/**
 * Linear LambdaRank: gradient steps on pairwise logistic loss, each pair weighted by the nDCG@10 it would change.
 * Starts from the first feature alone (the first-stage score), so a fit can only move away from it if that helps.
 */
export function lambdaRank(groups: Group[], options: { epochs?: number; rate?: number; l2?: number } = {}): Pick<Model, 'mean' | 'scale' | 'weights'> {
  const dims = groups[0]?.features[0]?.length ?? 0;
  const { mean, scale } = standardize(groups, dims);
  const z = groups.map((g) => ({ labels: g.labels, ideal: idealDcg(g.labels), x: g.features.map((x) => x.map((v, i) => (v - mean[i]!) / scale[i]!)) }));
  let w = new Array<number>(dims).fill(0);
  w[0] = 1;
  const epochs = options.epochs ?? 60;
  const rate = options.rate ?? 0.05;
  const l2 = options.l2 ?? 0.01;
  for (let epoch = 0; epoch < epochs; epoch++) {
    const grad = new Array<number>(dims).fill(0);
    for (const g of z) {
      if (g.ideal === 0) continue;
      const scores = g.x.map((x) => dot(w, x));
      const order = scores.map((s, i) => [s, i] as const).sort((a, b) => b[0] - a[0]);
      const rank = new Array<number>(scores.length);
      order.forEach(([, i], r) => (rank[i] = r));
      for (let a = 0; a < g.x.length; a++) {
        if (g.labels[a]! <= 0) continue;
        for (let b = 0; b < g.x.length; b++) {
          if (g.labels[b]! >= g.labels[a]! || Math.min(rank[a]!, rank[b]!) >= 20) continue;
          const delta = Math.abs((g.labels[a]! - g.labels[b]!) * (1 / Math.log2(rank[a]! + 2) - 1 / Math.log2(rank[b]! + 2))) / g.ideal;
          const rho = 1 / (1 + Math.exp(scores[a]! - scores[b]!));
          for (let i = 0; i < dims; i++) grad[i]! += delta * rho * (g.x[a]![i]! - g.x[b]![i]!);
        }
      }
    }
    w = w.map((v, i) => v + rate * (grad[i]! / z.length - l2 * v));
  }
  return { mean, scale, weights: w };
}

function ndcgOf(groups: { labels: number[]; ideal: number; x: number[][] }[], w: number[]): number {
  let sum = 0;
  for (const g of groups) {
    if (g.ideal === 0) continue;
    const order = g.x.map((x, i) => [dot(w, x), i] as const).sort((a, b) => b[0] - a[0]);
    sum += order.slice(0, 10).reduce((s, [, i], r) => s + g.labels[i]! / Math.log2(r + 2), 0) / g.ideal;
  }
  return sum / (groups.length || 1);
}

/**
 * Coordinate ascent on nDCG@10 itself, from a starting model: each weight but the first (the scale) is tried at a
 * few multiples and kept where the metric improves. A few rounds refine what LambdaRank's smooth loss left.
 */
export function coordinateAscent(groups: Group[], start: Pick<Model, 'mean' | 'scale' | 'weights'>, rounds = 3): Pick<Model, 'mean' | 'scale' | 'weights'> {
  const z = groups.map((g) => ({ labels: g.labels, ideal: idealDcg(g.labels), x: g.features.map((x) => x.map((v, i) => (v - start.mean[i]!) / start.scale[i]!)) }));
  let w = [...start.weights];
  let best = ndcgOf(z, w);
  for (let round = 0; round < rounds; round++) {
    for (let i = 1; i < w.length; i++) {
      for (const factor of [-1, 0, 0.25, 0.5, 0.75, 1.25, 1.5, 2, 3]) {
        const candidate = [...w];
        candidate[i] = factor === -1 ? -w[i]! : w[i]! * factor + (w[i] === 0 ? factor * 0.1 : 0);
        const value = ndcgOf(z, candidate);
        if (value > best + 1e-6) {
          best = value;
          w = candidate;
        }
      }
    }
  }
  return { ...start, weights: w };
}

/** Platt scaling: a logistic fit of relevance on the linear score, so scores read as probabilities of relevance. */
export function calibrate(points: { score: number; label: number }[], options: { epochs?: number } = {}): Model['calibration'] {
  let slope = 1;
  let intercept = 0;
  const positives = points.filter((p) => p.label > 0).length;
  // Platt's smoothed targets keep the fit finite when the classes separate.
  const high = (positives + 1) / (positives + 2);
  const low = 1 / (points.length - positives + 2);
  for (let epoch = 0; epoch < (options.epochs ?? 400); epoch++) {
    let gs = 0;
    let gi = 0;
    for (const p of points) {
      const y = p.label > 0 ? high : low;
      const q = 1 / (1 + Math.exp(-(slope * p.score + intercept)));
      gs += (q - y) * p.score;
      gi += q - y;
    }
    slope -= (0.5 * gs) / points.length;
    intercept -= (0.5 * gi) / points.length;
  }
  return { slope, intercept };
}

/** L2-regularized logistic regression on standardized features, by full-batch gradient descent. */
export function logistic(rows: { x: number[]; y: number }[], options: { epochs?: number; rate?: number; l2?: number } = {}): { mean: number[]; scale: number[]; weights: number[]; bias: number } {
  const dims = rows[0]?.x.length ?? 0;
  const { mean, scale } = standardize([{ features: rows.map((r) => r.x), labels: [] }], dims);
  const z = rows.map((r) => r.x.map((v, i) => (v - mean[i]!) / scale[i]!));
  const weights = new Array<number>(dims).fill(0);
  let bias = 0;
  const rate = options.rate ?? 0.5;
  const l2 = options.l2 ?? 0.01;
  for (let epoch = 0; epoch < (options.epochs ?? 400); epoch++) {
    const grad = new Array<number>(dims).fill(0);
    let gb = 0;
    z.forEach((x, k) => {
      const error = 1 / (1 + Math.exp(-(dot(weights, x) + bias))) - rows[k]!.y;
      gb += error;
      for (let i = 0; i < dims; i++) grad[i]! += error * x[i]!;
    });
    for (let i = 0; i < dims; i++) weights[i] = weights[i]! - rate * (grad[i]! / (rows.length || 1) + l2 * weights[i]!);
    bias -= (rate * gb) / (rows.length || 1);
  }
  return { mean, scale, weights, bias };
}
