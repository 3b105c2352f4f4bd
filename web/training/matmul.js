// The three matrix products the trainer's JavaScript layers need, on row-major Float32Arrays.
// Plain loops ordered so the innermost one walks contiguous memory, blocked by 4 so each loaded
// value serves four multiply-adds; the attention layers themselves run in mha-wasm.

/** C[M, N] (+)= A[M, K] · B[N, K]^T   (a linear layer's forward: x W^T). */
export function matmulTransposedB(A, B, C, M, N, K, accumulate = false) {
  for (let i = 0; i < M; i++) {
    const a = i * K;
    let j = 0;
    for (; j + 3 < N; j += 4) {  // four output columns share each A[i, k]
      const b0 = j * K;
      const b1 = b0 + K;
      const b2 = b1 + K;
      const b3 = b2 + K;
      let s0 = 0; let s1 = 0; let s2 = 0; let s3 = 0;
      for (let k = 0; k < K; k++) {
        const x = A[a + k];
        s0 += x * B[b0 + k];
        s1 += x * B[b1 + k];
        s2 += x * B[b2 + k];
        s3 += x * B[b3 + k];
      }
      const c = i * N + j;
      if (accumulate) {
        C[c] += s0; C[c + 1] += s1; C[c + 2] += s2; C[c + 3] += s3;
      } else {
        C[c] = s0; C[c + 1] = s1; C[c + 2] = s2; C[c + 3] = s3;
      }
    }
    for (; j < N; j++) {
      const b = j * K;
      let sum = 0;
      for (let k = 0; k < K; k++) sum += A[a + k] * B[b + k];
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
