// Trains an attention layer in plain JavaScript with mha-wasm's forward and backward passes.
// The toy task: a sequence of random tokens holds a marker somewhere; the last token is the marker
// again, and the model must name the token that followed the marker's first appearance. One
// attention layer can learn it: the last query (the marker) looks for the key whose previous
// token was the marker, and copies that key's token.
//
//   node examples/train-copy.mjs            (about ten seconds; the loss falls from ln(15) = 2.7 to near 0)
import { init } from 'mha-wasm';

const VOCAB = 16;        // token 0 is the marker, 1..15 are content
const LENGTH = 12;       // tokens per sequence
const FEATURES = 2 * VOCAB;  // each position: one-hot of its token and of the previous token
const BATCH = 32;
const STEPS = 200;

let state = 12345;  // a small seeded generator, so every run prints the same losses
const random = () => {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state / 2 ** 32;
};
const randomToken = () => 1 + Math.floor(random() * (VOCAB - 1));

/** A batch: inputs [BATCH, LENGTH, FEATURES] and the answer for each sequence. */
function makeBatch() {
  const x = new Float32Array(BATCH * LENGTH * FEATURES);
  const answers = [];
  for (let b = 0; b < BATCH; b++) {
    const tokens = Array.from({ length: LENGTH }, randomToken);
    const marker = Math.floor(random() * (LENGTH - 3));
    tokens[marker] = 0;
    tokens[LENGTH - 1] = 0;
    answers.push(tokens[marker + 1]);
    tokens.forEach((token, i) => {
      const row = (b * LENGTH + i) * FEATURES;
      x[row + token] = 1;
      if (i > 0) x[row + VOCAB + tokens[i - 1]] = 1;
    });
  }
  return { x: { data: x, shape: [BATCH, LENGTH, FEATURES] }, answers };
}

/** Adam (Kingma & Ba) over named Float32Arrays, updating them in place. */
function adam(params, lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8) {
  const m = {}, v = {};
  for (const [k, p] of Object.entries(params)) { m[k] = new Float32Array(p.length); v[k] = new Float32Array(p.length); }
  let t = 0;
  return (grads) => {
    t++;
    const c1 = 1 - beta1 ** t, c2 = 1 - beta2 ** t;
    for (const [k, p] of Object.entries(params)) {
      const g = grads[k];
      for (let i = 0; i < p.length; i++) {
        m[k][i] = beta1 * m[k][i] + (1 - beta1) * g[i];
        v[k][i] = beta2 * v[k][i] + (1 - beta2) * g[i] * g[i];
        p[i] -= (lr * m[k][i] / c1) / (Math.sqrt(v[k][i] / c2) + eps);
      }
    }
  };
}

const mha = await init();
const layer = new mha.MultiHeadAttention({ embedDim: FEATURES, numHeads: 2 }).initialize({ seed: 1 });
// Everything that learns: the layer's weights, and a readout from the last output to the tokens.
const params = { ...layer.stateDict(), readout: new Float32Array(VOCAB * FEATURES).map(() => (random() - 0.5) * 0.2) };
const step = adam(params);

for (let s = 1; s <= STEPS; s++) {
  const { x, answers } = makeBatch();
  const r = layer.forward(x, null, null, { causal: true, grad: true });
  // Logits of the last position, softmax cross-entropy, and its gradient.
  const dOut = new Float32Array(r.output.data.length);
  const dReadout = new Float32Array(params.readout.length);
  let loss = 0, correct = 0;
  for (let b = 0; b < BATCH; b++) {
    const last = (b * LENGTH + LENGTH - 1) * FEATURES;
    const y = r.output.data.subarray(last, last + FEATURES);
    const logits = Array.from({ length: VOCAB }, (_, t) => y.reduce((sum, yi, i) => sum + yi * params.readout[t * FEATURES + i], 0));
    const max = Math.max(...logits);
    const exp = logits.map((z) => Math.exp(z - max));
    const total = exp.reduce((a, e) => a + e, 0);
    loss -= Math.log(exp[answers[b]] / total) / BATCH;
    if (logits.indexOf(max) === answers[b]) correct++;
    for (let t = 0; t < VOCAB; t++) {
      const dLogit = (exp[t] / total - (t === answers[b] ? 1 : 0)) / BATCH;
      for (let i = 0; i < FEATURES; i++) {
        dReadout[t * FEATURES + i] += dLogit * y[i];
        dOut[last + i] += dLogit * params.readout[t * FEATURES + i];
      }
    }
  }
  const g = r.backward({ data: dOut, shape: r.output.shape });
  step({ ...g.params, readout: dReadout });
  const { readout, ...weights } = params;
  layer.loadStateDict(weights);
  if (s % 25 === 0 || s === 1) {
    console.log(`step ${String(s).padStart(3)}  loss ${loss.toFixed(4)}  accuracy ${(correct / BATCH).toFixed(2)}`);
  }
}
layer.dispose();
