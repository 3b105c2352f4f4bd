// The model's output layer: logits = x W^T + b (PyTorch's nn.Linear), and its gradients.
import { matmul, matmulTransposedA, matmulTransposedB } from './matmul.js';

/** logits [N, V] from x [N, E], weight [V, E], bias [V]. */
export function unembed(x, weight, bias, N, V, E) {
  const logits = matmulTransposedB(x, weight, new Float32Array(N * V), N, V, E);
  for (let n = 0; n < N; n++) for (let v = 0; v < V; v++) logits[n * V + v] += bias[v];
  return logits;
}

/**
 * Given dLoss/dlogits [N, V]: adds the weight's [V, E] and the bias' [V] gradients into
 * `grads.weight`/`grads.bias`, and returns dLoss/dx [N, E].
 */
export function unembedBackward(dLogits, x, weight, grads, N, V, E) {
  matmulTransposedA(dLogits, x, grads.weight, V, E, N, true);
  for (let n = 0; n < N; n++) for (let v = 0; v < V; v++) grads.bias[v] += dLogits[n * V + v];
  return matmul(dLogits, weight, new Float32Array(N * E), N, E, V);
}
