import path from 'node:path';
import { ServiceError } from '../errors/ServiceError.js';
import { type Embedder, normalize } from './Embedder.js';

type Extractor = (texts: string[], options: { pooling: 'mean'; normalize: boolean }) => Promise<{ tolist(): number[][] }>;

/**
 * Local ONNX sentence-embedding models through transformers.js, loaded only from a directory on this machine (no hub
 * access). transformers.js is an optional install: `npm install @huggingface/transformers`.
 */
export function create(options: { modelDir: string; batchSize?: number }): Embedder {
  let extractor: Promise<Extractor> | undefined;
  const load = async (): Promise<Extractor> => {
    const name = '@huggingface/transformers';
    let lib: {
      env: { allowRemoteModels: boolean; allowLocalModels: boolean; localModelPath: string };
      pipeline: (task: string, model: string, options: Record<string, unknown>) => Promise<Extractor>;
    };
    try {
      lib = await import(/* @vite-ignore */ name);
    } catch (error) {
      throw new ServiceError('service_unavailable', 'EMBEDDER=transformers needs the optional package: npm install @huggingface/transformers', { cause: error });
    }
    lib.env.allowRemoteModels = false;
    lib.env.allowLocalModels = true;
    lib.env.localModelPath = path.dirname(options.modelDir);
    return lib.pipeline('feature-extraction', path.basename(options.modelDir), { local_files_only: true });
  };
  const batchSize = options.batchSize ?? 32;
  return {
    id: `transformers:${path.basename(options.modelDir)}`,
    async embed(texts) {
      extractor ??= load();
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
