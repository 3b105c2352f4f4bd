// What bench/instructions.mjs counts: `calls` forward calls of the mha-simd build of the checkout
// at <root> (its own loader, weights and inputs, so an older checkout runs its own code).
//   node bench/instructions-forward.mjs <root> <B> <L> <S> <E> <H> <calls> [config JSON]
// The config is added to the layer's ({"batchFirst":false} lays the same inputs out [L, B, E]).
import { pathToFileURL } from 'node:url';

const [root, ...rest] = process.argv.slice(2);
const [B, L, S, E, H, calls] = rest.slice(0, 6).map(Number);
const config = JSON.parse(rest[6] ?? '{}');
const { loadBuild } = await import(pathToFileURL(`${root}/tools/load-wasm-build.mjs`));
const { benchWeights, randomArray } = await import(pathToFileURL(`${root}/bench/shapes.mjs`));
const { MultiHeadAttention } = await loadBuild('mha-simd');
const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, ...config });
layer.loadStateDict(benchWeights(E));
const shape = (T) => (config.batchFirst === false ? [T, B, E] : [B, T, E]);
const q = { data: randomArray(B * L * E, 11), shape: shape(L) };
const k = { data: randomArray(B * S * E, 12), shape: shape(S) };
let sum = 0;
for (let i = 0; i < calls; i++) sum += (S === L ? layer.forward(q) : layer.forward(q, k, k)).output.data[0];
console.log(calls, sum);
