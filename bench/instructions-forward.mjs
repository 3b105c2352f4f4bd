// What bench/instructions.mjs counts: `calls` forward calls of the mha-simd build of the checkout
// at <root> (its own loader, weights and inputs, so an older checkout runs its own code).
//   node bench/instructions-forward.mjs <root> <B> <L> <S> <E> <H> <calls>
import { pathToFileURL } from 'node:url';

const [root, ...rest] = process.argv.slice(2);
const [B, L, S, E, H, calls] = rest.map(Number);
const { loadBuild } = await import(pathToFileURL(`${root}/tools/load-wasm-build.mjs`));
const { benchWeights, randomArray } = await import(pathToFileURL(`${root}/bench/shapes.mjs`));
const { MultiHeadAttention } = await loadBuild('mha-simd');
const layer = new MultiHeadAttention({ embedDim: E, numHeads: H });
layer.loadStateDict(benchWeights(E));
const q = { data: randomArray(B * L * E, 11), shape: [B, L, E] };
const k = { data: randomArray(B * S * E, 12), shape: [B, S, E] };
let sum = 0;
for (let i = 0; i < calls; i++) sum += (S === L ? layer.forward(q) : layer.forward(q, k, k)).output.data[0];
console.log(calls, sum);
