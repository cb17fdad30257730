/**
 * The linear algebra of the term spaces: randomized SVD (Halko et al.) with CholeskyQR2 and a Jacobi eigensolver on
 * the small core. The dense loops take four rows (or nonzeros) per pass: JavaScript has no SIMD, and this halves loads
 * and stores.
 */

/** A sparse matrix by columns: column j has rows `idx[ptr[j]..ptr[j+1])` with values `val[...]`. */
export type Sparse = { rows: number; cols: number; ptr: Int32Array; idx: Int32Array; val: Float64Array };

const oversample = 20;
const powerIterations = 2;

/** The top left singular vectors (rows × k, row-major) and values; k drops below `dimensions` when the rank does. */
export function randomized(A: Sparse, options: { dimensions: number; seed: number }): { U: Float64Array; sigma: Float64Array } {
  const l = Math.min(options.dimensions + oversample, A.rows, A.cols);
  if (l === 0) return { U: new Float64Array(0), sigma: new Float64Array(0) };
  const At = transpose(A);
  const random = mulberry32(options.seed);
  const omega = new Float64Array(A.cols * l);
  for (let i = 0; i < omega.length; i++) omega[i] = gaussian(random);
  // The power iterations only need a well-conditioned basis (one Cholesky pass); the final Q must be orthonormal (two).
  // Z = AᵀQ is not orthonormalized: A·Z spans the same space either way, and with Q orthonormal its conditioning
  // (σ₁/σₗ squared) is far within what CholeskyQR takes, so that pass over the larger side (the chunks) is saved.
  let Q = transposedTimes(At, omega, l);
  orthonormalize(Q, { rows: A.rows, l, passes: 1 });
  for (let i = 0; i < powerIterations; i++) {
    Q = transposedTimes(At, transposedTimes(A, Q, l), l);
    orthonormalize(Q, { rows: A.rows, l, passes: i === powerIterations - 1 ? 2 : 1 });
  }
  // B = QᵀA is l × cols; the eigenvectors of BBᵀ rotate Q into the left singular vectors.
  const { values, vectors } = eigen(gram(transposedTimes(A, Q, l), A.cols, l), l);
  const top = Math.max(0, ...values);
  const order = [...values.keys()]
    .sort((a, b) => values[b]! - values[a]! || a - b)
    .filter((e) => values[e]! > 1e-10 * top)
    .slice(0, options.dimensions);
  const k = order.length;
  const E = new Float64Array(l * k);
  for (let j = 0; j < l; j++) for (let c = 0; c < k; c++) E[j * k + c] = vectors[j * l + order[c]!]!;
  const U = new Float64Array(A.rows * k);
  for (let r = 0; r < A.rows; r++) {
    const uo = r * k;
    const qo = r * l;
    let j = 0;
    for (; j + 3 < l; j += 4) {
      const q0 = Q[qo + j]!;
      const q1 = Q[qo + j + 1]!;
      const q2 = Q[qo + j + 2]!;
      const q3 = Q[qo + j + 3]!;
      const e0 = j * k;
      const e1 = e0 + k;
      const e2 = e1 + k;
      const e3 = e2 + k;
      for (let c = 0; c < k; c++) U[uo + c]! += q0 * E[e0 + c]! + q1 * E[e1 + c]! + q2 * E[e2 + c]! + q3 * E[e3 + c]!;
    }
    for (; j < l; j++) {
      const q = Q[qo + j]!;
      const eo = j * k;
      for (let c = 0; c < k; c++) U[uo + c]! += q * E[eo + c]!;
    }
  }
  return { U, sigma: Float64Array.from(order, (e) => Math.sqrt(values[e]!)) };
}

/** The same matrix by rows (its transpose by columns), so both products gather instead of scatter. */
function transpose(A: Sparse): Sparse {
  const ptr = new Int32Array(A.rows + 1);
  for (let p = 0; p < A.ptr[A.cols]!; p++) ptr[A.idx[p]! + 1]! += 1;
  for (let r = 0; r < A.rows; r++) ptr[r + 1]! += ptr[r]!;
  const fill = ptr.slice(0, A.rows);
  const idx = new Int32Array(ptr[A.rows]!);
  const val = new Float64Array(ptr[A.rows]!);
  for (let j = 0; j < A.cols; j++) {
    for (let p = A.ptr[j]!; p < A.ptr[j + 1]!; p++) {
      const at = fill[A.idx[p]!]!++;
      idx[at] = j;
      val[at] = A.val[p]!;
    }
  }
  return { rows: A.cols, cols: A.rows, ptr, idx, val };
}

/** Aᵀ·X for X dense (rows × l, row-major): cols × l. With `transpose(A)` for A, it is A·X. */
function transposedTimes(A: Sparse, X: Float64Array, l: number): Float64Array {
  const Y = new Float64Array(A.cols * l);
  for (let j = 0; j < A.cols; j++) {
    const yo = j * l;
    const end = A.ptr[j + 1]!;
    let p = A.ptr[j]!;
    for (; p + 3 < end; p += 4) {
      const x0 = A.idx[p]! * l;
      const x1 = A.idx[p + 1]! * l;
      const x2 = A.idx[p + 2]! * l;
      const x3 = A.idx[p + 3]! * l;
      const v0 = A.val[p]!;
      const v1 = A.val[p + 1]!;
      const v2 = A.val[p + 2]!;
      const v3 = A.val[p + 3]!;
      for (let c = 0; c < l; c++) Y[yo + c]! += v0 * X[x0 + c]! + v1 * X[x1 + c]! + v2 * X[x2 + c]! + v3 * X[x3 + c]!;
    }
    for (; p < end; p++) {
      const xo = A.idx[p]! * l;
      const v = A.val[p]!;
      for (let c = 0; c < l; c++) Y[yo + c]! += v * X[xo + c]!;
    }
  }
  return Y;
}

/** MᵀM (l × l) for M rows × l, row-major. */
function gram(M: Float64Array, rows: number, l: number): Float64Array {
  const G = new Float64Array(l * l);
  let r = 0;
  for (; r + 3 < rows; r += 4) {
    const o0 = r * l;
    const o1 = o0 + l;
    const o2 = o1 + l;
    const o3 = o2 + l;
    for (let i = 0; i < l; i++) {
      const a0 = M[o0 + i]!;
      const a1 = M[o1 + i]!;
      const a2 = M[o2 + i]!;
      const a3 = M[o3 + i]!;
      const gi = i * l;
      for (let j = i; j < l; j++) G[gi + j]! += a0 * M[o0 + j]! + a1 * M[o1 + j]! + a2 * M[o2 + j]! + a3 * M[o3 + j]!;
    }
  }
  for (; r < rows; r++) {
    const o = r * l;
    for (let i = 0; i < l; i++) {
      const a = M[o + i]!;
      const gi = i * l;
      for (let j = i; j < l; j++) G[gi + j]! += a * M[o + j]!;
    }
  }
  for (let i = 0; i < l; i++) for (let j = 0; j < i; j++) G[i * l + j] = G[j * l + i]!;
  return G;
}

/**
 * Orthonormalizes the columns of M (rows × l, row-major) in place by CholeskyQR (two passes: CholeskyQR2). A column
 * that depends on earlier ones (a rank-deficient matrix: a tiny corpus, duplicate chunks) becomes zero, not noise.
 */
function orthonormalize(M: Float64Array, shape: { rows: number; l: number; passes: number }): void {
  const { rows, l } = shape;
  for (let pass = 0; pass < shape.passes; pass++) {
    const G = gram(M, rows, l);
    // The Cholesky factor G = RᵀR, upper triangular, row-major; a zero diagonal marks a dependent column.
    const R = new Float64Array(l * l);
    for (let i = 0; i < l; i++) {
      let d = G[i * l + i]!;
      for (let k = 0; k < i; k++) d -= R[k * l + i]! ** 2;
      if (!(d > 1e-13 * G[i * l + i]!)) continue;
      const rii = Math.sqrt(d);
      R[i * l + i] = rii;
      for (let j = i + 1; j < l; j++) {
        let s = G[i * l + j]!;
        for (let k = 0; k < i; k++) s -= R[k * l + i]! * R[k * l + j]!;
        R[i * l + j] = s / rii;
      }
    }
    // R⁻¹ by back substitution, restricted to the independent columns (a dependent one gets a zero row and column).
    const Rinv = new Float64Array(l * l);
    for (let j = 0; j < l; j++) {
      if (R[j * l + j] === 0) continue;
      Rinv[j * l + j] = 1 / R[j * l + j]!;
      for (let i = j - 1; i >= 0; i--) {
        if (R[i * l + i] === 0) continue;
        let s = 0;
        for (let m = i + 1; m <= j; m++) s += R[i * l + m]! * Rinv[m * l + j]!;
        Rinv[i * l + j] = -s / R[i * l + i]!;
      }
    }
    // M ← M R⁻¹, a row at a time, four entries of the row per pass over the (upper triangular) rows of R⁻¹.
    const row = new Float64Array(l);
    for (let r = 0; r < rows; r++) {
      const o = r * l;
      for (let c = 0; c < l; c++) row[c] = M[o + c]!;
      M.fill(0, o, o + l);
      let i = 0;
      for (; i + 3 < l; i += 4) {
        const m0 = row[i]!;
        const m1 = row[i + 1]!;
        const m2 = row[i + 2]!;
        const m3 = row[i + 3]!;
        const r0 = i * l;
        const r1 = r0 + l;
        const r2 = r1 + l;
        const r3 = r2 + l;
        for (let j = i; j < l; j++) M[o + j]! += m0 * Rinv[r0 + j]! + m1 * Rinv[r1 + j]! + m2 * Rinv[r2 + j]! + m3 * Rinv[r3 + j]!;
      }
      for (; i < l; i++) {
        const m = row[i]!;
        const ri = i * l;
        for (let j = i; j < l; j++) M[o + j]! += m * Rinv[ri + j]!;
      }
    }
  }
}

/** Eigenvalues and eigenvectors (columns of `vectors`) of a symmetric n × n matrix, by cyclic Jacobi; A is destroyed. */
function eigen(A: Float64Array, n: number): { values: number[]; vectors: Float64Array } {
  const V = new Float64Array(n * n);
  for (let i = 0; i < n; i++) V[i * n + i] = 1;
  let scale = 0;
  for (const a of A) scale += a * a;
  for (let sweep = 0; sweep < 50; sweep++) {
    let off = 0;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) off += A[i * n + j]! ** 2;
    if (off <= 1e-26 * scale) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = A[p * n + q]!;
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (A[q * n + q]! - A[p * n + p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = A[k * n + p]!;
          const akq = A[k * n + q]!;
          A[k * n + p] = c * akp - s * akq;
          A[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = A[p * n + k]!;
          const aqk = A[q * n + k]!;
          A[p * n + k] = c * apk - s * aqk;
          A[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = V[k * n + p]!;
          const vkq = V[k * n + q]!;
          V[k * n + p] = c * vkp - s * vkq;
          V[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  return { values: Array.from({ length: n }, (_, i) => A[i * n + i]!), vectors: V };
}

function mulberry32(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(random: () => number): number {
  let u = 0;
  while (u === 0) u = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}
