// A small self-attention layer in Node: 2 heads over 4 tokens, with a causal mask.
import { init } from 'mha-wasm';

const mha = await init();
const E = 8, H = 2, L = 4;
const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });

// Deterministic weights in PyTorch's state-dict layout.
const fill = (n, f) => Float32Array.from({ length: n }, (_, i) => f(i));
layer.loadStateDict({
  in_proj_weight: fill(3 * E * E, (i) => Math.sin(i) / Math.sqrt(E)),
  in_proj_bias: fill(3 * E, () => 0),
  'out_proj.weight': fill(E * E, (i) => Math.cos(i) / Math.sqrt(E)),
  'out_proj.bias': fill(E, () => 0),
});

const tokens = { data: fill(L * E, (i) => Math.sin(0.7 * i)), shape: [1, L, E] };
const { output, weights } = layer.forward(tokens, null, null, { causal: true, needWeights: true, averageWeights: false });
layer.dispose();

console.log(`output ${JSON.stringify(output.shape)}:`);
for (let i = 0; i < L; i++) console.log('  ' + [...output.data.slice(i * E, (i + 1) * E)].map((x) => x.toFixed(3)).join(' '));
for (let h = 0; h < H; h++) {
  console.log(`head ${h} attention weights (rows: queries, columns: keys):`);
  for (let i = 0; i < L; i++) {
    const row = weights.data.slice((h * L + i) * L, (h * L + i + 1) * L);
    console.log('  ' + [...row].map((x) => x.toFixed(3)).join(' '));
  }
}
