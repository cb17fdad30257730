import protobuf from 'protobufjs';

/**
 * Writes ONNX models: a graph of nodes over named tensors, serialized as the ONNX protobuf. Only what a converter of
 * inference graphs needs is declared, with the field numbers of onnx/onnx.proto3 (ONNX IR version 8).
 */
const schema = `
syntax = "proto3";
package onnx;
message AttributeProto {
  string name = 1;
  int32 type = 20;
  float f = 2;
  int64 i = 3;
  bytes s = 4;
  TensorProto t = 5;
  repeated float floats = 7;
  repeated int64 ints = 8;
}
message ValueInfoProto { string name = 1; TypeProto type = 2; }
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  string name = 3;
  string op_type = 4;
  string domain = 7;
  repeated AttributeProto attribute = 5;
}
message StringStringEntryProto { string key = 1; string value = 2; }
message GraphProto {
  repeated NodeProto node = 1;
  string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message TensorProto {
  repeated int64 dims = 1;
  int32 data_type = 2;
  string name = 8;
  bytes raw_data = 9;
}
message TensorShapeProto {
  message Dimension { oneof value { int64 dim_value = 1; string dim_param = 2; } }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor { int32 elem_type = 1; TensorShapeProto shape = 2; }
  oneof value { Tensor tensor_type = 1; }
}
message OperatorSetIdProto { string domain = 1; int64 version = 2; }
message ModelProto {
  int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  string producer_name = 2;
  string producer_version = 3;
  string doc_string = 6;
  GraphProto graph = 7;
  repeated StringStringEntryProto metadata_props = 14;
}
`;

/** Element types, as TensorProto.DataType numbers them. */
const dataTypes = { float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, bool: 9 } as const;

export type DataType = keyof typeof dataTypes;

/** A constant of the graph (a weight). Its bytes are little-endian, as typed arrays are on every platform Node runs on. */
export type Tensor = { dims: number[]; type: DataType; data: Float32Array | Int8Array | Uint8Array | Int32Array | BigInt64Array };

/** An attribute's value, tagged with its ONNX type (a JavaScript number is either an int or a float). */
export type Attribute = { int: number } | { float: number } | { ints: number[] } | { floats: number[] } | { tensor: Tensor };

/** A graph input or output: its element type and shape, a string naming a dimension that varies. */
export type Value = { name: string; type: DataType; shape: (number | string)[] };

/**
 * Builds a graph node by node: `op` returns the names of the node's outputs, `constant` names a weight. Names are
 * made unique by a counter, so a converter reads as the computation it writes.
 */
export type Graph = {
  op(type: string, inputs: string[], attributes?: Record<string, Attribute>, options?: { outputs?: number; domain?: string }): string[];
  constant(name: string, tensor: Tensor): string;
  /** Names a node output as a graph output (an Identity node, so the name is the caller's). */
  output(name: string, from: string): void;
};

type Built = { nodes: object[]; initializers: object[] };

/** A new graph builder, and what it built so far (for `encode`). */
export function graph(): Graph & { built: Built } {
  const built: Built = { nodes: [], initializers: [] };
  const used = new Set<string>();
  let counter = 0;
  const fresh = (hint: string) => {
    let name = hint;
    while (used.has(name)) name = `${hint}_${++counter}`;
    used.add(name);
    return name;
  };
  return {
    built,
    op(type, inputs, attributes = {}, options = {}) {
      const outputs = Array.from({ length: options.outputs ?? 1 }, () => fresh(`${type}_${built.nodes.length}`));
      built.nodes.push({
        input: inputs,
        output: outputs,
        name: `${type}_${built.nodes.length}`,
        op_type: type,
        domain: options.domain ?? '',
        attribute: Object.entries(attributes).map(([name, value]) => attribute(name, value)),
      });
      return outputs;
    },
    constant(name, tensor) {
      const unique = fresh(name);
      built.initializers.push(tensorProto(unique, tensor));
      return unique;
    },
    output(name, from) {
      used.add(name);
      built.nodes.push({ input: [from], output: [name], name: `output_${name}`, op_type: 'Identity', domain: '', attribute: [] });
    },
  };
}

/** Serializes a model: the graph with its inputs and outputs, the operator sets it uses, and metadata (key to value). */
export function encode(model: {
  graph: Graph & { built: Built };
  name: string;
  inputs: Value[];
  outputs: Value[];
  opsets: Record<string, number>;
  producer: { name: string; version: string };
  doc: string;
  metadata: Record<string, string>;
}): Uint8Array {
  const ModelProto = root().lookupType('onnx.ModelProto');
  const message = ModelProto.fromObject({
    ir_version: 8,
    opset_import: Object.entries(model.opsets).map(([domain, version]) => ({ domain, version })),
    producer_name: model.producer.name,
    producer_version: model.producer.version,
    doc_string: model.doc,
    graph: {
      name: model.name,
      node: model.graph.built.nodes,
      initializer: model.graph.built.initializers,
      input: model.inputs.map(valueInfo),
      output: model.outputs.map(valueInfo),
    },
    metadata_props: Object.entries(model.metadata).map(([key, value]) => ({ key, value })),
  });
  return ModelProto.encode(message).finish();
}

let parsed: protobuf.Root | undefined;
const root = () => (parsed ??= protobuf.parse(schema, { keepCase: true }).root);

const attributeTypes = { float: 1, int: 2, tensor: 4, floats: 6, ints: 7 } as const;

function attribute(name: string, value: Attribute): object {
  if ('int' in value) return { name, type: attributeTypes.int, i: value.int };
  if ('float' in value) return { name, type: attributeTypes.float, f: value.float };
  if ('ints' in value) return { name, type: attributeTypes.ints, ints: value.ints };
  if ('floats' in value) return { name, type: attributeTypes.floats, floats: value.floats };
  return { name, type: attributeTypes.tensor, t: tensorProto('', value.tensor) };
}

function tensorProto(name: string, tensor: Tensor): object {
  const count = tensor.dims.reduce((a, b) => a * b, 1);
  if (count !== tensor.data.length) throw new Error(`tensor ${name}: ${tensor.data.length} values for shape [${tensor.dims.join(', ')}]`);
  return { name, dims: tensor.dims, data_type: dataTypes[tensor.type], raw_data: new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength) };
}

function valueInfo(value: Value): object {
  const dim = value.shape.map((d) => (typeof d === 'number' ? { dim_value: d } : { dim_param: d }));
  return { name: value.name, type: { tensor_type: { elem_type: dataTypes[value.type], shape: { dim } } } };
}
