import type { Config } from '../config/Config.js';
import type { Embedder } from './Embedder.js';
import * as OpenAiEmbedder from './OpenAiEmbedder.js';
import * as TransformersEmbedder from './TransformersEmbedder.js';

/** The embedder configuration asks for, or undefined for lexical-only retrieval. */
export function fromConfig(config: Config): Embedder | undefined {
  const e = config.embedding;
  switch (e.provider) {
    case 'none':
      return undefined;
    case 'openai':
      return OpenAiEmbedder.create({ baseUrl: e.baseUrl, apiKey: e.apiKey, model: e.model, dimensions: e.dimensions });
    case 'transformers':
      return TransformersEmbedder.create({ modelDir: e.modelDir });
  }
}
