/**
 * How common small English embedding models expect to be used: how their token vectors become one vector, and what
 * each text is prefixed with. A model used otherwise still runs, but ranks worse: bge models were trained on their
 * [CLS] token and a query instruction, e5 models on `query: ` and `passage: ` prefixes.
 */
export type Pooling = 'mean' | 'cls';

export type Preset = { pooling: Pooling; queryPrefix: string; documentPrefix: string };

export const presets = {
  /** The model used plainly, whatever its name: for a model whose name matches a preset it was not trained as. */
  none: { pooling: 'mean', queryPrefix: '', documentPrefix: '' },
  'all-MiniLM-L6-v2': { pooling: 'mean', queryPrefix: '', documentPrefix: '' },
  'all-mpnet-base-v2': { pooling: 'mean', queryPrefix: '', documentPrefix: '' },
  'bge-small-en-v1.5': { pooling: 'cls', queryPrefix: 'Represent this sentence for searching relevant passages: ', documentPrefix: '' },
  'bge-base-en-v1.5': { pooling: 'cls', queryPrefix: 'Represent this sentence for searching relevant passages: ', documentPrefix: '' },
  'e5-small-v2': { pooling: 'mean', queryPrefix: 'query: ', documentPrefix: 'passage: ' },
  'e5-base-v2': { pooling: 'mean', queryPrefix: 'query: ', documentPrefix: 'passage: ' },
  'multilingual-e5-small': { pooling: 'mean', queryPrefix: 'query: ', documentPrefix: 'passage: ' },
  'gte-small': { pooling: 'mean', queryPrefix: '', documentPrefix: '' },
  'nomic-embed-text-v1.5': { pooling: 'mean', queryPrefix: 'search_query: ', documentPrefix: 'search_document: ' },
} as const satisfies Record<string, Preset>;

export type PresetName = keyof typeof presets;

export const presetNames = Object.keys(presets) as PresetName[];

/** What a model is used as when nothing says otherwise: mean pooling, no prefixes. */
export const plain: Preset = presets.none;

/**
 * The preset a model's name implies (`/models/bge-small-en-v1.5`, `BAAI/bge-small-en-v1.5`, `intfloat/e5-small-v2`),
 * matched on the name's last path segment, case-insensitively; undefined for other models.
 */
export function forModel(name: string): PresetName | undefined {
  const last = name.split(/[\\/]/).filter(Boolean).pop()?.toLowerCase() ?? '';
  return presetNames.find((preset) => last === preset.toLowerCase());
}
