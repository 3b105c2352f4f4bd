// The model's output layer: logits = x W^T + b (PyTorch's nn.Linear), and its gradients. With the
// loaded mha-wasm package (`mha`, whose linear()/linearBackward() run the attention layers' GEMM in
// wasm) the products run there; without it (the JavaScript reference backend, or a build older
// than linear()), in the plain loops of matmul.js. Both give the same values up to rounding.
import { matmul, matmulTransposedA, matmulTransposedB } from './matmul.js';

/** Whether `mha` (the loaded package, or null) has the wasm linear layer. */
export const hasWasmLinear = (mha) => typeof mha?.linear === 'function' && typeof mha?.linearBackward === 'function';

/** logits [N, V] from x [N, E], weight [V, E], bias [V] (into `out` when given). */
export function unembed(x, weight, bias, N, V, E, mha = null, out = new Float32Array(N * V)) {
  if (hasWasmLinear(mha)) {
    return mha.linear({ data: x, shape: [N, E] }, { data: weight, shape: [V, E] }, bias, { out }).data;
  }
  const logits = matmulTransposedB(x, weight, out, N, V, E);
  for (let n = 0; n < N; n++) for (let v = 0; v < V; v++) logits[n * V + v] += bias[v];
  return logits;
}

/**
 * Given dLoss/dlogits [N, V]: writes the weight's [V, E] and the bias' [V] gradients into
 * `grads.weight`/`grads.bias`, and returns dLoss/dx [N, E] (into `dx` when given).
 */
export function unembedBackward(dLogits, x, weight, grads, N, V, E, mha = null, dx = new Float32Array(N * E)) {
  if (hasWasmLinear(mha)) {
    return mha.linearBackward({ data: dLogits, shape: [N, V] }, { data: x, shape: [N, E] }, { data: weight, shape: [V, E] },
      { dInput: dx, dWeight: grads.weight, dBias: grads.bias }).input.data;
  }
  matmulTransposedA(dLogits, x, grads.weight, V, E, N);
  grads.bias.fill(0);
  for (let n = 0; n < N; n++) for (let v = 0; v < V; v++) grads.bias[v] += dLogits[n * V + v];
  return matmul(dLogits, weight, dx, N, E, V);
}
