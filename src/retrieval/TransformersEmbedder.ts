import fs from 'node:fs';
import path from 'node:path';
import { ServiceError } from '../errors/ServiceError.js';
import { type Embedder, normalize } from './Embedder.js';

type Extractor = (texts: string[], options: { pooling: 'mean'; normalize: boolean }) => Promise<{ tolist(): number[][] }>;

/** The part of transformers.js this provider uses. */
export type Library = {
  env: { allowRemoteModels: boolean; allowLocalModels: boolean; localModelPath: string };
  pipeline: (task: 'feature-extraction', model: string, options: { local_files_only: boolean }) => Promise<Extractor>;
};

const packageName = '@huggingface/transformers';

/**
 * Local ONNX sentence-embedding models through transformers.js, loaded only from a directory on this machine (no hub
 * access): `<modelDir>/onnx/model.onnx` with its `tokenizer.json` and `config.json`. transformers.js is an optional
 * install (`npm install @huggingface/transformers`); it is imported on first use, so the service runs without it.
 */
export function create(options: { modelDir: string; batchSize?: number; importLibrary?: () => Promise<Library> }): Embedder {
  const modelDir = path.resolve(options.modelDir);
  const importLibrary = options.importLibrary ?? (() => import(/* @vite-ignore */ packageName) as Promise<Library>);
  let extractor: Promise<Extractor> | undefined;
  const load = async (): Promise<Extractor> => {
    let lib: Library;
    try {
      lib = await importLibrary();
    } catch (error) {
      throw new ServiceError('service_unavailable', `EMBEDDER=transformers needs the optional package: npm install ${packageName}`, { cause: error });
    }
    if (!fs.existsSync(path.join(modelDir, 'onnx', 'model.onnx'))) {
      throw new ServiceError('service_unavailable', `EMBEDDING_MODEL_DIR ${modelDir} has no onnx/model.onnx: point it at a local transformers.js model directory`);
    }
    lib.env.allowRemoteModels = false;
    lib.env.allowLocalModels = true;
    lib.env.localModelPath = path.dirname(modelDir);
    try {
      return await lib.pipeline('feature-extraction', path.basename(modelDir), { local_files_only: true });
    } catch (error) {
      throw new ServiceError('service_unavailable', `could not load the model in ${modelDir}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  const batchSize = options.batchSize ?? 32;
  return {
    id: `transformers:${path.basename(modelDir)}`,
    async embed(texts) {
      // A failed load is not cached: the operator can fix the directory without a restart.
      extractor ??= load().catch((error: unknown) => {
        extractor = undefined;
        throw error;
      });
      const run = await extractor;
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += batchSize) {
        const result = await run(texts.slice(i, i + batchSize), { pooling: 'mean', normalize: true });
        out.push(...result.tolist().map((v) => normalize(v)));
      }
      return out;
    },
  };
}
