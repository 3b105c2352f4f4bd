// The three matrix products the trainer's JavaScript layers need, on row-major Float32Arrays.
// Plain loops ordered so the innermost one walks contiguous memory (V8 keeps them in registers);
// the attention layers themselves run in mha-wasm.

/** C[M, N] (+)= A[M, K] · B[N, K]^T   (a linear layer's forward: x W^T). */
export function matmulTransposedB(A, B, C, M, N, K, accumulate = false) {
  for (let i = 0; i < M; i++) {
    const a = i * K;
    for (let j = 0; j < N; j++) {
      const b = j * K;
      // Four partial sums: shorter dependency chains for the JIT.
      let s0 = 0; let s1 = 0; let s2 = 0; let s3 = 0;
      let k = 0;
      for (; k + 3 < K; k += 4) {
        s0 += A[a + k] * B[b + k];
        s1 += A[a + k + 1] * B[b + k + 1];
        s2 += A[a + k + 2] * B[b + k + 2];
        s3 += A[a + k + 3] * B[b + k + 3];
      }
      for (; k < K; k++) s0 += A[a + k] * B[b + k];
      const sum = (s0 + s1) + (s2 + s3);
      C[i * N + j] = accumulate ? C[i * N + j] + sum : sum;
    }
  }
  return C;
}

/** C[M, N] (+)= A[M, K] · B[K, N]   (a linear layer's input gradient: dY W). */
export function matmul(A, B, C, M, N, K, accumulate = false) {
  if (!accumulate) C.fill(0, 0, M * N);
  for (let i = 0; i < M; i++) {
    const c = i * N;
    for (let k = 0; k < K; k++) {
      const a = A[i * K + k];
      if (a === 0) continue;
      const b = k * N;
      for (let j = 0; j < N; j++) C[c + j] += a * B[b + j];
    }
  }
  return C;
}

/** C[M, N] (+)= A[K, M]^T · B[K, N]   (a linear layer's weight gradient: dY^T x). */
export function matmulTransposedA(A, B, C, M, N, K, accumulate = false) {
  if (!accumulate) C.fill(0, 0, M * N);
  for (let k = 0; k < K; k++) {
    const b = k * N;
    for (let i = 0; i < M; i++) {
      const a = A[k * M + i];
      if (a === 0) continue;
      const c = i * N;
      for (let j = 0; j < N; j++) C[c + j] += a * B[b + j];
    }
  }
  return C;
}
