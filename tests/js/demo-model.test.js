// The demo page's default model, run in Node through the package: its logits must match the
// ones PyTorch computed when tools/train_demo_model.py trained it (web/model/reference.json).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { DemoModel, sinusoidalPositions, tokenize, topK } from '../../web/model.js';

const modelDir = new URL('../../web/model/', import.meta.url);
const readJson = async (name) => JSON.parse(await readFile(new URL(name, modelDir), 'utf8'));

async function loadModel() {
  const mha = await init();
  const weights = readSafetensors(await readFile(new URL('demo-model.safetensors', modelDir)));
  return new DemoModel(mha, weights, await readJson('vocab.json'));
}

test('the JS pipeline (embeddings + positions -> mha-wasm layers -> unembed) reproduces PyTorch logits', async () => {
  const reference = await readJson('reference.json');
  const model = await loadModel();
  try {
    const { ids } = tokenize(reference.text, model.vocab);
    assert.deepEqual(ids, reference.tokens);
    const { logits, layers } = model.forward(ids);
    assert.deepEqual([ids.length, model.vocab.tokens.length], reference.logitsShape);
    let worst = 0;
    logits.forEach((v, k) => { worst = Math.max(worst, Math.abs(v - reference.logits[k])); });
    assert.ok(worst < 1e-3, `largest logit difference ${worst}`);
    // The last query's attention in every head, against PyTorch's.
    const L = ids.length;
    layers.forEach(({ weights }, l) => {
      reference.lastRowWeights[l].forEach((row, h) => {
        row.forEach((w, j) => assert.ok(Math.abs(weights[(h * L + L - 1) * L + j] - w) < 1e-5, `layer ${l} head ${h} key ${j}`));
      });
    });
  } finally {
    model.dispose();
  }
});

test('the heads heads.json calls induction heads copy in JS too: fresh repeated letters are predicted', async () => {
  const model = await loadModel();
  const { heads } = await readJson('heads.json');
  try {
    // Blocks of random letters (a fixed LCG's high bits, not the trainer's generator), each then repeated.
    let seed = 12345;
    const letter = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return 'abcdefghijklmnopqrstuvwxyz'[Math.floor((seed / 2 ** 31) * 26)];
    };
    const period = 30;
    const V = model.vocab.tokens.length;
    const second = Array.from({ length: period - 1 }, (_, k) => period + 1 + k); // queries in the second copy
    const inductionHeads = heads.filter((h) => h.role === 'induction');
    assert.ok(inductionHeads.length > 0, 'the trained model has an induction head');
    const scores = inductionHeads.map(() => 0);
    let correct = 0;
    const blocks = 8;
    for (let b = 0; b < blocks; b++) {
      const block = Array.from({ length: period }, letter).join('');
      const { ids } = tokenize(block + block, model.vocab);
      const { layers, logits } = model.forward(ids);
      const L = ids.length;
      inductionHeads.forEach(({ layer, head }, k) => {
        // Weight on the token after the earlier occurrence of the current token.
        scores[k] += second.reduce((sum, q) => sum + layers[layer].weights[(head * L + q) * L + q - period + 1], 0)
          / second.length / blocks;
      });
      correct += second.filter((q) => topK(Array.from(logits.subarray(q * V, (q + 1) * V)), model.vocab.tokens, 1)[0].id === ids[q + 1]).length;
    }
    inductionHeads.forEach(({ layer, head, scores: trained }, k) => {
      assert.ok(scores[k] > 0.2, `layer ${layer} head ${head}: induction score ${scores[k].toFixed(3)} (trainer measured ${trained.induction})`);
    });
    // Letters of the second copy are predicted far above chance (1/26).
    const accuracy = correct / (blocks * second.length);
    assert.ok(accuracy > 0.5, `top-1 accuracy in the copies: ${accuracy.toFixed(2)}`);
    console.log(`induction heads in JS: ${inductionHeads.map(({ layer, head }, k) => `L${layer} H${head} ${scores[k].toFixed(2)}`).join(', ')}; `
      + `top-1 accuracy on the copies ${accuracy.toFixed(2)}`);
  } finally {
    model.dispose();
  }
});

test('tokenize maps unknown characters to <unk> and keeps their text as the label', async () => {
  const vocab = await readJson('vocab.json');
  const { ids, labels } = tokenize('Hi€', vocab);
  assert.deepEqual(labels, ['<bos>', 'h', 'i', '€']);
  assert.deepEqual(ids, [vocab.bos, vocab.tokens.indexOf('h'), vocab.tokens.indexOf('i'), vocab.unk]);
});

test('sinusoidal positions follow sin/cos of pos / 10000^(i/d)', () => {
  const table = sinusoidalPositions(3, 4);
  assert.equal(table.length, 12);
  assert.deepEqual(Array.from(table.subarray(0, 4)), [0, 1, 0, 1]);
  assert.ok(Math.abs(table[8] - Math.sin(2)) < 1e-7);
  assert.ok(Math.abs(table[10] - Math.sin(2 / 100)) < 1e-7);
});
