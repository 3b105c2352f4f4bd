// The model's input: x[b, t] = token_embedding[ids[b, t]] + positions[offset + t] (sinusoidal,
// fixed), and the embedding table's gradient (each used row gathers the gradient of its positions).

/**
 * @param {Int32Array} ids [B, T] token ids
 * @param {Float32Array} table [V, E] the token embedding
 * @param {Float32Array} positions [P, E] sinusoidal positions (web/model.js sinusoidalPositions)
 * @param {number[]} offsets per sequence, the position of its first token
 * @returns {Float32Array} x [B, T, E]
 */
export function embed(ids, table, positions, offsets, B, T, E) {
  const x = new Float32Array(B * T * E);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const row = (b * T + t) * E;
      const token = ids[b * T + t] * E;
      const position = (offsets[b] + t) * E;
      for (let i = 0; i < E; i++) x[row + i] = table[token + i] + positions[position + i];
    }
  }
  return x;
}

/** Adds dLoss/dtable to `gradient` [V, E], given dLoss/dx [B*T, E] and the ids that made x. */
export function embedBackward(ids, dx, gradient, N, E) {
  for (let n = 0; n < N; n++) {
    const token = ids[n] * E;
    for (let i = 0; i < E; i++) gradient[token + i] += dx[n * E + i];
  }
  return gradient;
}
