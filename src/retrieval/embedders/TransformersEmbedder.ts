import fs from 'node:fs';
import path from 'node:path';
import { ServiceError } from '../../errors/ServiceError.js';
import { type Embedder, normalize } from './Embedder.js';
import type { Pooling } from '../../config/EmbeddingPresets.js';

type Extractor = (texts: string[], options: { pooling: Pooling; normalize: boolean }) => Promise<{ tolist(): number[][] }>;

/** The part of transformers.js this provider uses. */
export type Library = {
  env: { allowRemoteModels: boolean; allowLocalModels: boolean; localModelPath: string };
  pipeline: (task: 'feature-extraction', model: string, options: { local_files_only: boolean; dtype: Precision }) => Promise<Extractor>;
};

/** `fp32` runs `onnx/model.onnx`; `q8` runs the 8-bit `onnx/model_quantized.onnx` Optimum exports beside it. */
export type Precision = 'fp32' | 'q8';

const modelFiles: Record<Precision, string> = { fp32: 'model.onnx', q8: 'model_quantized.onnx' };

const packageName = '@huggingface/transformers';

/**
 * Local ONNX sentence-embedding models through transformers.js, loaded only from a directory on this machine (no hub
 * access): `<modelDir>/onnx/model.onnx` with its `tokenizer.json` and `config.json`. transformers.js is an optional
 * install (`npm install @huggingface/transformers`); it is imported on first use, so the service runs without it.
 */
export function create(options: {
  modelDir: string;
  /** How token vectors become one: `mean` (MiniLM, e5, gte) or the `cls` token's (bge). Mean unless given. */
  pooling?: Pooling;
  precision?: Precision;
  /** Texts per model run, 8 unless given: on 2 cores, 8 ran faster than 32 (less padding, smaller tensors). */
  batchSize?: number | undefined;
  importLibrary?: () => Promise<Library>;
}): Embedder {
  const modelDir = path.resolve(options.modelDir);
  const pooling = options.pooling ?? 'mean';
  const precision = options.precision ?? 'fp32';
  const file = path.join('onnx', modelFiles[precision]);
  const importLibrary = options.importLibrary ?? (() => import(/* @vite-ignore */ packageName) as Promise<Library>);
  let extractor: Promise<Extractor> | undefined;
  const load = async (): Promise<Extractor> => {
    let lib: Library;
    try {
      lib = await importLibrary();
    } catch (error) {
      throw new ServiceError('service_unavailable', `EMBEDDER=transformers needs the optional package: npm install ${packageName}`, { cause: error });
    }
    if (!fs.existsSync(path.join(modelDir, file))) {
      const hint = precision === 'q8' ? ' (EMBEDDING_PRECISION=q8 runs the quantized export; fp32 runs onnx/model.onnx)' : ': point it at a local transformers.js model directory';
      throw new ServiceError('service_unavailable', `EMBEDDING_MODEL_DIR ${modelDir} has no ${file}${hint}`);
    }
    lib.env.allowRemoteModels = false;
    lib.env.allowLocalModels = true;
    lib.env.localModelPath = path.dirname(modelDir);
    try {
      return await lib.pipeline('feature-extraction', path.basename(modelDir), { local_files_only: true, dtype: precision });
    } catch (error) {
      throw new ServiceError('service_unavailable', `could not load the model in ${modelDir}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  const batchSize = options.batchSize ?? 8;
  return {
    // What changes the vectors is in the id, so a change is noticed and the index rebuilt; the defaults add nothing.
    id: `transformers:${path.basename(modelDir)}${pooling === 'mean' ? '' : `:${pooling}`}${precision === 'fp32' ? '' : `:${precision}`}`,
    async embed(texts) {
      // A failed load is not cached: the operator can fix the directory without a restart.
      extractor ??= load().catch((error: unknown) => {
        extractor = undefined;
        throw error;
      });
      const run = await extractor;
      // Batched by length, so a batch pads its texts to about their own length rather than to the longest of all.
      const order = [...texts.keys()].sort((a, b) => texts[a]!.length - texts[b]!.length);
      const out: Float32Array[] = new Array<Float32Array>(texts.length);
      for (let i = 0; i < order.length; i += batchSize) {
        const batch = order.slice(i, i + batchSize);
        const result = await run(
          batch.map((t) => texts[t]!),
          { pooling, normalize: true },
        );
        result.tolist().forEach((v, j) => (out[batch[j]!] = normalize(v)));
      }
      return out;
    },
  };
}
