/** What this file uses of the WebAssembly API, which TypeScript declares only with the DOM library (not used here). */
type Wasm = {
  Memory: new (descriptor: { initial: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
};
type WasmMemory = { buffer: ArrayBuffer };
const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

/**
 * The dot products of a block of rows (at most 64) with another (at most 256), computed by a small WebAssembly
 * module with 128-bit SIMD: about six times the throughput of a JavaScript loop, which V8 does not vectorize. The
 * rows are copied into the module's memory, each padded to a multiple of four floats, with zero rows to a multiple of
 * four. Results are row-major, `stride` floats per row of the first block.
 */
export function over(vectors: Float32Array, shape: { rows: number; dims: number }): (i0: number, ni: number, j0: number, nj: number) => { values: Float32Array; stride: number } {
  const width = Math.ceil(shape.dims / 4) * 4;
  const rows = Math.ceil(shape.rows / 4) * 4 + 256;
  const outAt = rows * width * 4;
  const memory = new wasm.Memory({ initial: Math.ceil((outAt + 64 * 256 * 4) / 65_536) });
  const padded = new Float32Array(memory.buffer, 0, rows * width);
  for (let r = 0; r < shape.rows; r++) padded.set(vectors.subarray(r * shape.dims, (r + 1) * shape.dims), r * width);
  const block = dotModule(memory);
  const out = new Float32Array(memory.buffer, outAt, 64 * 256);
  return (i0, ni, j0, nj) => {
    const stride = Math.ceil(nj / 4) * 4;
    block(i0 * width * 4, ni, j0 * width * 4, stride, width * 4, outAt);
    return { values: out, stride };
  };
}

/**
 * `block(a, na, b, nb, rowBytes, out)`: out[i·nb + j] = a_i · b_j for i < na, j < nb (nb a multiple of 4), where a_i
 * is the row of `rowBytes` bytes (a multiple of 16) at byte a + i·rowBytes. Each pass of the inner loop loads four
 * floats of a_i once and multiplies them into four rows of b. In the text format:
 *
 *   (func (param $a $na $b $nb $kb $out i32) (local $i $j $pa $pb $end $o $kb2 $kb3 i32) (local $s0 $s1 $s2 $s3 $x v128)
 *     ($kb2, $kb3) := 2·$kb, 3·$kb;  $i := 0
 *     (loop  $j := 0
 *       (loop  $pa := $a + $i·$kb;  $end := $pa + $kb;  $pb := $b + $j·$kb;  $s0..$s3 := 0
 *         (loop  $x := v128.load $pa;  $sN := f32x4.add $sN (f32x4.mul $x (v128.load $pb + N·$kb)) for N in 0..3
 *                $pb += 16;  $pa += 16;  (br_if 0 (i32.lt_u $pa $end)))
 *         f32.store $out + 4·($i·$nb + $j) + 4N (the sum of the lanes of $sN) for N in 0..3
 *         $j += 4;  (br_if 0 (i32.lt_u $j $nb)))
 *       $i += 1;  (br_if 0 (i32.lt_u $i $na))))
 */
function dotModule(memory: WasmMemory): (a: number, na: number, b: number, nb: number, rowBytes: number, out: number) => void {
  const uleb = (n: number): number[] => (n < 0x80 ? [n] : [(n & 0x7f) | 0x80, ...uleb(n >>> 7)]);
  const vector = (bytes: number[]) => [...uleb(bytes.length), ...bytes];
  const name = (s: string) => vector([...s].map((c) => c.charCodeAt(0)));
  const local = (op: number) => (index: number) => [op, index];
  const [get, set, tee] = [local(0x20), local(0x21), local(0x22)];
  const i32 = (value: number) => [0x41, value]; // i32.const, for values below 64
  const [add, mul, shl, lessThan, f32Add, brIf] = [0x6a, 0x6c, 0x74, 0x49, 0x92, 0x0d];
  const simd = (op: number) => [0xfd, ...uleb(op)];
  const load = [...simd(0x00), 4, 0]; // v128.load, 16-byte alignment hint, offset 0
  const zero = [...simd(0x0c), ...new Array<number>(16).fill(0)]; // v128.const 0
  const [f32x4Add, f32x4Mul] = [simd(0xe4), simd(0xe6)];
  const lane = (l: number) => [...simd(0x1f), l]; // f32x4.extract_lane
  const loop = (...body: number[]) => [0x03, 0x40, ...body, 0x0b];
  const [a, na, b, nb, kb, out, i, j, pa, pb, end, o, kb2, kb3, x] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 18];
  const sums = [14, 15, 16, 17];
  const rowOffset = [[], [...get(kb), add], [...get(kb2), add], [...get(kb3), add]];
  const laneSum = (s: number) => [...get(s), ...lane(0), ...[1, 2, 3].flatMap((l) => [...get(s), ...lane(l), f32Add])];
  const code = [
    ...[2, 8, 0x7f, 5, 0x7b], // locals: 8 i32, then 5 v128
    ...get(kb), ...get(kb), add, ...set(kb2), ...get(kb2), ...get(kb), add, ...set(kb3),
    ...i32(0), ...set(i),
    ...loop(
      ...i32(0), ...set(j),
      ...loop(
        ...get(a), ...get(i), ...get(kb), mul, add, ...tee(pa), ...get(kb), add, ...set(end),
        ...get(b), ...get(j), ...get(kb), mul, add, ...set(pb),
        ...sums.flatMap((s) => [...zero, ...set(s)]),
        ...loop(
          ...get(pa), ...load, ...set(x),
          ...sums.flatMap((s, n) => [...get(s), ...get(x), ...get(pb), ...rowOffset[n]!, ...load, ...f32x4Mul, ...f32x4Add, ...set(s)]),
          ...get(pb), ...i32(16), add, ...set(pb),
          ...get(pa), ...i32(16), add, ...tee(pa), ...get(end), lessThan, brIf, 0,
        ),
        ...get(out), ...get(i), ...get(nb), mul, ...get(j), add, ...i32(2), shl, add, ...set(o),
        ...sums.flatMap((s, n) => [...get(o), ...laneSum(s), 0x38, 2, 4 * n]), // f32.store, 4-byte alignment, offset 4n
        ...get(j), ...i32(4), add, ...tee(j), ...get(nb), lessThan, brIf, 0,
      ),
      ...get(i), ...i32(1), add, ...tee(i), ...get(na), lessThan, brIf, 0,
    ),
    0x0b,
  ];
  const section = (id: number, bytes: number[]) => [id, ...vector(bytes)];
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
    ...section(1, [1, 0x60, 6, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0]), // type: six i32 parameters, no result
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 0x01]), // import: memory, at least one page
    ...section(3, [1, 0]), // function 0 has type 0
    ...section(7, [1, ...name('block'), 0x00, 0]), // export function 0 as "block"
    ...section(10, [1, ...vector(code)]),
  ];
  const instance = new wasm.Instance(new wasm.Module(new Uint8Array(bytes)), { env: { memory } });
  return instance.exports.block as (a: number, na: number, b: number, nb: number, rowBytes: number, out: number) => void;
}
