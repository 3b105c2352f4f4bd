// Whether a training loop can reload its weights with loadStateDict after every optimizer step
// (issue 22: an in-place update only if the reload costs more than 5% of a step): the reload's
// time against a forward + backward step at the Keras tutorial's layer (B 64, L 32, E 100,
// 4 heads x head size 128), one thread, in the same run, 3 rounds.
//   node bench/reload-cost.mjs
import { init } from '../bindings/js/index.js';

const mha = await init({ threads: 1 });
const [B, L, E, H, Dh] = [64, 32, 100, 4, 128];
const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H, headDim: Dh }).initialize({ seed: 1 });
const random = (n) => new Float32Array(n).map(() => Math.random() - 0.5);
const x = { data: random(B * L * E), shape: [B, L, E] };
const dOut = { data: random(B * L * E), shape: [B, L, E] };
const weights = layer.stateDict();
const msPerCall = (f, n) => {
  for (let i = 0; i < 3; i++) f();
  const start = performance.now();
  for (let i = 0; i < n; i++) f();
  return (performance.now() - start) / n;
};
console.log(`build ${mha.build.name}; shape ${B}x${L}x${E}x${H}x${Dh}`);
for (let round = 0; round < 3; round++) {
  const step = msPerCall(() => layer.forward(x, null, null, { grad: true }).backward(dOut), 10);
  const reload = msPerCall(() => layer.loadStateDict(weights), 30);
  console.log(`forward+backward ${step.toFixed(1)} ms, loadStateDict ${reload.toFixed(2)} ms: ${(100 * reload / step).toFixed(1)}% of a step`);
}
layer.dispose();
