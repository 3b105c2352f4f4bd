// Softmax cross-entropy averaged over the rows (PyTorch's F.cross_entropy, reduction 'mean'), with
// its gradient: (softmax(logits) - one_hot(target)) / N. Sums in float64.

/**
 * @param {Float32Array} logits [N, V]
 * @param {ArrayLike<number>} targets [N] class ids
 * @param {{ gradient?: boolean }} options gradient: also return dLoss/dlogits [N, V]
 * @returns {{ loss: number, dLogits: Float32Array | null }}
 */
export function softmaxCrossEntropy(logits, targets, N, V, { gradient = true } = {}) {
  if (logits.length !== N * V) throw new RangeError(`softmaxCrossEntropy: logits must hold N*V = ${N * V} floats, got ${logits.length}`);
  const dLogits = gradient ? new Float32Array(N * V) : null;
  let total = 0;
  for (let n = 0; n < N; n++) {
    const row = n * V;
    const target = targets[n];
    if (!(target >= 0 && target < V)) throw new RangeError(`softmaxCrossEntropy: target ${n} is ${target}, not in [0, ${V})`);
    let max = -Infinity;
    for (let v = 0; v < V; v++) max = Math.max(max, logits[row + v]);
    let sum = 0;
    for (let v = 0; v < V; v++) {
      const e = Math.exp(logits[row + v] - max);
      if (dLogits) dLogits[row + v] = e;
      sum += e;
    }
    total += Math.log(sum) + max - logits[row + target];
    if (dLogits) {
      const scale = 1 / (sum * N);
      for (let v = 0; v < V; v++) dLogits[row + v] *= scale;
      dLogits[row + target] -= 1 / N;
    }
  }
  return { loss: total / N, dLogits };
}
