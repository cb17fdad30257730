import { createHash } from 'node:crypto';
import type { Config } from '../config/Config.js';
import type { Embedder } from './Embedder.js';
import * as EmbeddingPresets from './EmbeddingPresets.js';
import * as OpenAiEmbedder from './OpenAiEmbedder.js';
import * as TransformersEmbedder from './TransformersEmbedder.js';

/** The embedder configuration asks for, or undefined for lexical-only retrieval. */
export function fromConfig(config: Config): Embedder | undefined {
  const e = config.embedding;
  if (e.provider === 'none') return undefined;
  const named = e.preset ?? EmbeddingPresets.forModel(e.provider === 'openai' ? e.model : e.modelDir);
  const preset = named ? EmbeddingPresets.presets[named] : EmbeddingPresets.plain;
  const prefixes = { query: e.queryPrefix ?? preset.queryPrefix, document: e.documentPrefix ?? preset.documentPrefix };
  const embedder =
    e.provider === 'openai'
      ? OpenAiEmbedder.create({ baseUrl: e.baseUrl, apiKey: e.apiKey, model: e.model, dimensions: e.dimensions, batchSize: e.batchSize })
      : TransformersEmbedder.create({ modelDir: e.modelDir, pooling: e.pooling ?? preset.pooling, precision: e.precision, batchSize: e.batchSize });
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
