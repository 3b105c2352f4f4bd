// The three matrix products the trainer's JavaScript layers need, on row-major Float32Arrays.
// Plain loops ordered so the innermost one walks contiguous memory, blocked by 4 so each loaded
// value serves four multiply-adds; the attention layers themselves run in mha-wasm.
import { dotRows } from '../../bindings/js/core/dot-rows.js';

/** C[M, N] (+)= A[M, K] · B[N, K]^T   (a linear layer's forward: x W^T): row i of C is row i of A dotted with B's rows. */
export function matmulTransposedB(A, B, C, M, N, K, accumulate = false) {
  for (let i = 0; i < M; i++) dotRows(A, i * K, B, 0, K, K, C, i * N, N, accumulate);
  return C;
}

/** C[M, N] (+)= A[M, K] · B[K, N]   (a linear layer's input gradient: dY W). */
export function matmul(A, B, C, M, N, K, accumulate = false) {
  if (!accumulate) C.fill(0, 0, M * N);
  for (let i = 0; i < M; i++) {
    const c = i * N;
    const a = i * K;
    let k = 0;
    for (; k + 3 < K; k += 4) {  // four rows of B per pass over C's row
      const a0 = A[a + k]; const a1 = A[a + k + 1]; const a2 = A[a + k + 2]; const a3 = A[a + k + 3];
      const b0 = k * N;
      const b1 = b0 + N;
      const b2 = b1 + N;
      const b3 = b2 + N;
      for (let j = 0; j < N; j++) C[c + j] += a0 * B[b0 + j] + a1 * B[b1 + j] + a2 * B[b2 + j] + a3 * B[b3 + j];
    }
    for (; k < K; k++) {
      const x = A[a + k];
      const b = k * N;
      for (let j = 0; j < N; j++) C[c + j] += x * B[b + j];
    }
  }
  return C;
}

/** C[M, N] (+)= A[K, M]^T · B[K, N]   (a linear layer's weight gradient: dY^T x). */
export function matmulTransposedA(A, B, C, M, N, K, accumulate = false) {
  if (!accumulate) C.fill(0, 0, M * N);
  let k = 0;
  for (; k + 3 < K; k += 4) {  // four rows of A and B per pass over C
    const b0 = k * N;
    const b1 = b0 + N;
    const b2 = b1 + N;
    const b3 = b2 + N;
    for (let i = 0; i < M; i++) {
      const a0 = A[k * M + i]; const a1 = A[(k + 1) * M + i]; const a2 = A[(k + 2) * M + i]; const a3 = A[(k + 3) * M + i];
      const c = i * N;
      for (let j = 0; j < N; j++) C[c + j] += a0 * B[b0 + j] + a1 * B[b1 + j] + a2 * B[b2 + j] + a3 * B[b3 + j];
    }
  }
  for (; k < K; k++) {
    const b = k * N;
    for (let i = 0; i < M; i++) {
      const x = A[k * M + i];
      const c = i * N;
      for (let j = 0; j < N; j++) C[c + j] += x * B[b + j];
    }
  }
  return C;
}
