// The first use case the package was made for, typed: a self-attention layer's per-head weights.
// tests/stages/40-package.sh type-checks it with tsc --strict against the installed package: a
// call with needWeights: true has non-null weights, one without has null, and one whose
// needWeights is known only at run time must be checked (the @ts-expect-error lines fail the
// check if the types stop telling these apart).
import { init } from 'mha-wasm';
import type { ForwardResult, Tensor } from 'mha-wasm';

const mha = await init();
const E = 16, H = 4, L = 5;
const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });
const sizeOf = (shape: number[]): number => shape.reduce((a, b) => a * b, 1);
layer.loadStateDict(Object.fromEntries(Object.entries(layer.stateDictShapes())
  .map(([key, shape]) => [key, new Float32Array(sizeOf(shape)).fill(0.01)])));
const x: Tensor = { data: Float32Array.from({ length: L * E }, (_, i) => Math.sin(i)), shape: [1, L, E] };

const { weights } = layer.forward(x, null, null, { causal: true, needWeights: true, averageWeights: false });
const [, heads, queries, keys] = weights.shape;
for (let h = 0; h < heads; h++) {
  const head: Float32Array = weights.data.subarray(h * queries * keys, (h + 1) * queries * keys);
  console.log(`head ${h}: last query's weights`, head.subarray((queries - 1) * keys));
}

const without = layer.forward(x);
const none: null = without.weights;
const causalOnly: null = layer.forward(x, null, null, { causal: true }).weights;
const runtime: ForwardResult = layer.forward(x, null, null, { needWeights: L > 3 });
// @ts-expect-error: weights may be null when needWeights is only known at run time
console.log(runtime.weights.shape, none, causalOnly);
if (runtime.weights) console.log(runtime.weights.shape);
layer.dispose();
