import fs from 'node:fs';
import path from 'node:path';

/**
 * Writes a tiny BERT-shaped sentence-embedding model that transformers.js loads like a real one: an ONNX graph
 * (token embedding lookup, masked by the attention mask), a WordPiece tokenizer.json and a config.json. Each word of
 * `vectors` gets its own embedding row; any other word is [UNK], whose row is zero, as are the special tokens (but a
 * `[CLS]` row may be given), so mean pooling averages the known words' vectors. `file` names the ONNX file
 * (`model_quantized.onnx` for the 8-bit export).
 */
export function write(directory: string, vectors: Record<string, number[]>, options: { file?: string } = {}): string {
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]'];
  const words = Object.keys(vectors).filter((w) => !specials.includes(w));
  const dimensions = vectors[words[0]!]!.length;
  const vocabulary = [...specials, ...words];
  const table = new Float32Array(vocabulary.length * dimensions);
  words.forEach((word, i) => table.set(vectors[word]!, (specials.length + i) * dimensions));
  // A [CLS] row, when given, is what CLS pooling returns for any text (the graph has no attention to mix tokens).
  if (vectors['[CLS]']) table.set(vectors['[CLS]'], specials.indexOf('[CLS]') * dimensions);

  fs.mkdirSync(path.join(directory, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(directory, 'onnx', options.file ?? 'model.onnx'), model(table, vocabulary.length, dimensions));
  fs.writeFileSync(path.join(directory, 'config.json'), JSON.stringify({ model_type: 'bert', architectures: ['BertModel'], hidden_size: dimensions }));
  fs.writeFileSync(
    path.join(directory, 'tokenizer_config.json'),
    JSON.stringify({ tokenizer_class: 'BertTokenizer', do_lower_case: true, model_max_length: 128, cls_token: '[CLS]', sep_token: '[SEP]', pad_token: '[PAD]', unk_token: '[UNK]' }),
  );
  fs.writeFileSync(path.join(directory, 'tokenizer.json'), JSON.stringify(tokenizer(vocabulary)));
  return directory;
}

function tokenizer(vocabulary: string[]) {
  const special = (token: string) => ({ id: token, type_id: 0 });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: vocabulary.slice(0, 4).map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: special('[CLS]') }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: special('[SEP]') }],
      pair: [],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: Object.fromEntries(vocabulary.map((w, i) => [w, i])) },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The ONNX graph, written as protobuf by hand (field numbers from onnx.proto): no protobuf library needed for five nodes.

const FLOAT = 1;
const INT64 = 7;
const ATTRIBUTE_INT = 2;

function varint(value: number | bigint): Buffer {
  let n = BigInt(value);
  if (n < 0n) n += 1n << 64n;
  const out: number[] = [];
  do {
    let byte = Number(n & 0x7fn);
    n >>= 7n;
    if (n > 0n) byte |= 0x80;
    out.push(byte);
  } while (n > 0n);
  return Buffer.from(out);
}
const integer = (field: number, value: number | bigint) => Buffer.concat([varint(field << 3), varint(value)]);
const bytes = (field: number, value: Buffer | string) => {
  const b = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([varint((field << 3) | 2), varint(b.length), b]);
};
const message = (field: number, ...parts: Buffer[]) => bytes(field, Buffer.concat(parts));

/** ValueInfoProto: a named tensor of an element type, with symbolic or fixed dimensions. */
const valueInfo = (field: number, name: string, elementType: number, dims: (string | number)[]) =>
  message(field, bytes(1, name), message(2, message(1, integer(1, elementType), message(2, ...dims.map((d) => message(1, typeof d === 'number' ? integer(1, d) : bytes(2, d)))))));
const tensor = (name: string, dims: number[], dataType: number, raw: ArrayBufferView) =>
  message(5, ...dims.map((d) => integer(1, d)), integer(2, dataType), bytes(8, name), bytes(9, Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)));
const intAttribute = (name: string, value: number) => message(5, bytes(1, name), integer(3, value), integer(20, ATTRIBUTE_INT));
const node = (op: string, inputs: string[], output: string, attributes: Buffer[] = []) =>
  message(1, ...inputs.map((i) => bytes(1, i)), bytes(2, output), bytes(3, `${op}_${output}`), bytes(4, op), ...attributes);

/** last_hidden_state = embeddings[input_ids] × attention_mask, opset 13. */
function model(table: Float32Array, rows: number, dimensions: number): Buffer {
  const graph = message(
    7,
    node('Gather', ['embeddings', 'input_ids'], 'gathered', [intAttribute('axis', 0)]),
    node('Cast', ['attention_mask'], 'mask', [intAttribute('to', FLOAT)]),
    node('Unsqueeze', ['mask', 'last_axis'], 'mask3'),
    node('Mul', ['gathered', 'mask3'], 'last_hidden_state'),
    bytes(2, 'tiny-sentence-embedder'),
    tensor('embeddings', [rows, dimensions], FLOAT, table),
    tensor('last_axis', [1], INT64, new BigInt64Array([-1n])),
    valueInfo(11, 'input_ids', INT64, ['batch', 'sequence']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'sequence']),
    valueInfo(12, 'last_hidden_state', FLOAT, ['batch', 'sequence', dimensions]),
  );
  return Buffer.concat([integer(1, 8), bytes(2, 'profile-edge-tests'), graph, message(8, bytes(1, ''), integer(2, 13))]);
}
