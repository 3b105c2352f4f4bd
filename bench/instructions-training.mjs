// What bench/instructions.mjs counts for its training row: `calls` training steps of the mha-simd
// build of the checkout at <root> (its own loader and weights, so an older checkout runs its own
// code). A step is bench/training-worker.mjs's: forward with grad: true on self-attention, then
// backward(dOut), the input's gradient and out_proj.weight's read out.
//   node bench/instructions-training.mjs <root> <B> <L> <E> <H> <Dh> <calls>
import { pathToFileURL } from 'node:url';

const [root, ...rest] = process.argv.slice(2);
const [B, L, E, H, Dh, calls] = rest.slice(0, 6).map(Number);
const { loadBuild } = await import(pathToFileURL(`${root}/tools/load-wasm-build.mjs`));
const { randomArray, trainingWeights } = await import(pathToFileURL(`${root}/bench/shapes.mjs`));
const { MultiHeadAttention } = await loadBuild('mha-simd');
const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, ...(Dh !== E / H ? { headDim: Dh } : {}) });
layer.loadStateDict(trainingWeights({ E, H, Dh }));
const input = { data: randomArray(B * L * E, 11), shape: [B, L, E] };
const dOut = { data: randomArray(B * L * E, 13), shape: [B, L, E] };
let sum = 0;
for (let i = 0; i < calls; i++) {
  const grads = layer.forward(input, null, null, { grad: true }).backward(dOut);
  sum += grads.query.data[0] + grads.params['out_proj.weight'][0];
}
console.log(calls, sum);
