// What bench/instructions.mjs counts: `calls` forward calls of the mha-simd build of the checkout
// at <root> (its own loader, weights and inputs, so an older checkout runs its own code).
//   node bench/instructions-forward.mjs <root> <B> <L> <S> <E> <H> <calls> [config JSON]
// The config is added to the layer's ({"batchFirst":false} lays the same inputs out [L, B, E];
// {"dtype":"float64"} gives the same weights and inputs as Float64Arrays).
import { pathToFileURL } from 'node:url';

const [root, ...rest] = process.argv.slice(2);
const [B, L, S, E, H, calls] = rest.slice(0, 6).map(Number);
const config = JSON.parse(rest[6] ?? '{}');
const { loadBuild } = await import(pathToFileURL(`${root}/tools/load-wasm-build.mjs`));
const { benchWeights, randomArray } = await import(pathToFileURL(`${root}/bench/shapes.mjs`));
const { MultiHeadAttention } = await loadBuild('mha-simd');
// (loadBuild applies MHA_KERNELS=gemm=NAME, the GEMM variant instructions.mjs chose: the same in
// the 1-call and the (1 + calls)-call runs, so their difference is one variant's calls.)
const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, ...config });
const floats = (array) => (config.dtype === 'float64' ? Float64Array.from(array) : array);
layer.loadStateDict(Object.fromEntries(Object.entries(benchWeights(E)).map(([name, w]) => [name, floats(w)])));
const shape = (T) => (config.batchFirst === false ? [T, B, E] : [B, T, E]);
const q = { data: floats(randomArray(B * L * E, 11)), shape: shape(L) };
const k = { data: floats(randomArray(B * S * E, 12)), shape: shape(S) };
let sum = 0;
for (let i = 0; i < calls; i++) sum += (S === L ? layer.forward(q) : layer.forward(q, k, k)).output.data[0];
console.log(calls, sum);
