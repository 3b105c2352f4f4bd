// The demo's trainer (web/training/trainer.js) with its attention layers on WebGPU
// (trainStepAsync: forward, backward and AdamW on the GPU, gpu-layers.js) against the same trainer
// on wasm (trainStep): the same seed gives the same training curve and held-out figures within float
// rounding; steps may alternate between the backends; an ablated head is handled as on wasm; a
// device destroyed mid-step leaves the CPU state as it was, and the step runs again on wasm.
// Few, small steps: the software adapter is slow.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { Trainer } from '../../web/training/trainer.js';
import { openDevice } from './devices.js';

const wasm = await init();
const gpu = await init({ backend: 'webgpu', device: await openDevice(true) });
const vocab = JSON.parse(readFileSync(new URL('../../web/model/vocab.json', import.meta.url), 'utf8'));
const SETTINGS = { seed: 7, batchSize: 3, seqLen: 12, steps: 100, warmupSteps: 2, dModel: 16, numHeads: 2, numLayers: 2 };
const STEPS = 4;

/** Runs `STEPS` steps; `onGpu(i)` says whether step i runs on WebGPU. Returns the losses, held-out loss, scores and params. */
async function run(onGpu, { ablate = null, device = gpu, beforeStep = () => {} } = {}) {
  const trainer = new Trainer({ mha: wasm, vocab, settings: SETTINGS });
  try {
    if (ablate) trainer.setAblated(...ablate);
    const losses = [], backends = [];
    for (let i = 0; i < STEPS; i++) {
      const batch = trainer.nextBatch();
      let r;
      if (onGpu(i)) {
        try {
          r = await trainer.trainStepAsync(batch, device);
        } catch (error) {
          if (!/device was lost/.test(error.message) && !device.lost) throw error;
          const before = trainer.step;
          r = trainer.trainStep(batch);
          assert.equal(r.step, before + 1, 'the failed step did not count');
          r.retried = true;
        }
      } else {
        r = trainer.trainStep(batch);
      }
      beforeStep(i + 1, trainer);
      losses.push(r.loss);
      backends.push(r.retried ? 'retried on wasm' : r.backend);
    }
    const { heldOutLoss, headScores } = trainer.evaluate();
    return { losses, backends, heldOutLoss, headScores, params: trainer.stateDict(), step: trainer.step };
  } finally {
    trainer.dispose();
  }
}

function assertSameCurve(got, want, what) {
  got.losses.forEach((loss, i) => assert.ok(Math.abs(loss - want.losses[i]) <= 1e-5 * Math.abs(want.losses[i]) + 1e-6,
    `${what}: step ${i + 1}'s loss ${loss} vs ${want.losses[i]}`));
  assert.ok(Math.abs(got.heldOutLoss - want.heldOutLoss) <= 1e-5 * want.heldOutLoss, `${what}: held-out loss ${got.heldOutLoss} vs ${want.heldOutLoss}`);
  got.headScores.forEach((h, i) => {
    for (const kind of ['previousToken', 'induction', 'bracket', 'bos']) {
      assert.ok(Math.abs(h[kind] - want.headScores[i][kind]) <= 1e-4, `${what}: L${h.layer} H${h.head} ${kind}`);
    }
  });
  // Every parameter but the key biases (a zero gradient but for rounding, which AdamW scales up:
  // docs/webgpu.md) within float rounding of wasm's.
  const E = SETTINGS.dModel;
  for (const [name, values] of Object.entries(want.params)) {
    const got1 = got.params[name];
    for (let i = 0; i < values.length; i++) {
      if (name.endsWith('in_proj_bias') && i >= E && i < 2 * E) continue;
      if (!(Math.abs(got1[i] - values[i]) <= 1e-4 * Math.abs(values[i]) + 1e-5)) assert.fail(`${what}: ${name}[${i}] ${got1[i]} vs ${values[i]}`);
    }
  }
}

describe('the demo\'s trainer with its attention on WebGPU', () => {
  const onWasm = run(() => false);

  test('the same seed: the same curve, held-out loss, head scores and parameters as on wasm', async () => {
    const want = await onWasm;
    const got = await run(() => true);
    assert.deepEqual(got.backends, Array(STEPS).fill('webgpu'));
    assertSameCurve(got, want, 'WebGPU vs wasm');
  });

  test('steps alternating between the backends (the switch mid-run): the same curve', async () => {
    const got = await run((i) => i % 2 === 1);
    assert.deepEqual(got.backends, ['wasm', 'webgpu', 'wasm', 'webgpu']);
    assertSameCurve(got, await onWasm, 'alternating');
  });

  test('an ablated head: the same curve on both backends', async () => {
    const want = await run(() => false, { ablate: [1, 0] });
    const got = await run(() => true, { ablate: [1, 0] });
    assertSameCurve(got, want, 'ablated');
  });

  test('the device destroyed mid-step: the step runs again on wasm from the unchanged state, the curve is wasm\'s', async () => {
    const own = await init({ backend: 'webgpu', device: await openDevice(false) });
    // The device is destroyed while step 3 runs (its forward is in flight: destroy() in a microtask).
    const got = await run((i) => i >= 1, {
      device: own,
      beforeStep: (done) => { if (done === 2) queueMicrotask(() => own.device.destroy()); },
    });
    assert.equal(got.step, STEPS);
    assert.deepEqual(got.backends.slice(0, 3), ['wasm', 'webgpu', 'retried on wasm']);
    assert.ok(own.lost, 'the module says its device was lost');
    assertSameCurve(got, await onWasm, 'after the loss');
  });
});
