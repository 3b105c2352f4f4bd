// The trainer's first steps against PyTorch (tests/js/training-reference.json, made by
// tools/make_training_fixture.py from the same initial weights, batches and schedule): each step's
// loss and gradient norm, and the parameters after the last update. Run with the JavaScript
// reference attention, and with mha-wasm's backward when the build has one.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { oneCycle } from '../../web/training/adamw.js';
import { clipGradients, Trainer } from '../../web/training/trainer.js';

const read = async (path) => JSON.parse(await readFile(new URL(path, import.meta.url), 'utf8'));
const vocab = await read('../../web/model/vocab.json');
const reference = await read('./training-reference.json');

/** sum |v|, for in_proj_bias without its key third (as the fixture: its gradient is rounding noise, which Adam amplifies). */
function absSum(name, v) {
  const d = v.length / 3;
  const kept = name.endsWith('in_proj_bias') ? [...v.subarray(0, d), ...v.subarray(2 * d)] : v;
  return kept.reduce((s, x) => s + Math.abs(x), 0);
}

function replay(mha, c) {
  const trainer = new Trainer({ mha, vocab, settings: c.settings });
  try {
    const { batchSize: B, seqLen: S } = trainer.settings;
    const losses = [];
    const gradNorms = [];
    for (let step = 1; step <= c.steps; step++) {
      const batch = trainer.nextBatch();
      const { loss, grads } = trainer.lossAndGradients(batch.ids, B, S, batch.offsets);
      losses.push(loss);
      gradNorms.push(clipGradients(grads, trainer.settings.clipGradNorm));
      const { lr, beta1 } = trainer.schedule();
      trainer.optimizer.step(grads, lr, beta1);
      trainer.step = step;
      trainer.setAblated(0, 0, false);  // reloads the layers with the updated parameters
    }
    const absSums = Object.fromEntries(Object.entries(trainer.params).map(([k, v]) => [k, absSum(k, v)]));
    return { backend: trainer.backend, losses, gradNorms, absSums };
  } finally {
    trainer.dispose();
  }
}

function compare(got, c) {
  got.losses.forEach((loss, i) => assert.ok(Math.abs(loss - c.losses[i]) < 2e-4,
    `${c.name}, step ${i + 1}: loss ${loss} vs PyTorch ${c.losses[i]}`));
  got.gradNorms.forEach((norm, i) => assert.ok(Math.abs(norm - c.gradNorms[i]) < 1e-3 * c.gradNorms[i],
    `${c.name}, step ${i + 1}: gradient norm ${norm} vs PyTorch ${c.gradNorms[i]}`));
  for (const [name, sum] of Object.entries(c.finalAbsSums)) {
    assert.ok(Math.abs(got.absSums[name] - sum) < 1e-4 * sum, `${c.name}: sum |${name}| after ${c.steps} steps ${got.absSums[name]} vs PyTorch ${sum}`);
  }
  // The losses fall: the steps are real updates, not a replay of one batch.
  assert.ok(got.losses.at(-1) < got.losses[0] - 0.5, `${c.name}: ${got.losses[0]} -> ${got.losses.at(-1)}`);
}

for (const c of reference.cases) {
  test(`${c.name}: ${c.steps} steps match PyTorch (JavaScript reference attention)`, () => {
    const got = replay(null, c);
    assert.equal(got.backend, 'javascript');
    compare(got, c);
  });

  test(`${c.name}: ${c.steps} steps match PyTorch (mha-wasm backward; skipped until the build has one)`, async (t) => {
    const mha = await init({ threads: 1 });
    const probe = new Trainer({ mha, vocab, settings: { ...c.settings } });
    const { backend } = probe;
    probe.dispose();
    if (backend !== 'mha-wasm') {
      t.skip('this mha-wasm build has no backward yet');
      return;
    }
    compare(replay(mha, c), c);
  });

  if (c.torchSchedule) {
    test(`${c.name}: oneCycle() gives PyTorch's OneCycleLR learning rate and beta1 at every step`, () => {
      c.torchSchedule.forEach(([lr, beta1], i) => {
        const got = oneCycle(i + 1, c.settings.steps, c.settings.learningRate);
        assert.ok(Math.abs(got.lr - lr) < 1e-12 + 1e-9 * lr, `step ${i + 1}: lr ${got.lr} vs ${lr}`);
        assert.ok(Math.abs(got.beta1 - beta1) < 1e-12, `step ${i + 1}: beta1 ${got.beta1} vs ${beta1}`);
      });
    });
  }
}
