// The tiny checkpoints of tools/make_tiny_checkpoints.py (tests/fixtures/your-model/) and the check
// of a loaded model against the torch forward's values: the "Your model" mode's tests on wasm
// (tests/js/your-model.test.js) and WebGPU (tests/webgpu/your-model.test.js) share it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { readSafetensors } from '../../bindings/js/index.js';
import { zPatch } from '../../web/z-patch.js';

export const FIXTURES = ['gpt2', 'llama', 'qwen2', 'mistral', 'pythia', 'gemma', 'gemma2', 'phi3', 'pythia-sequential', 'qwen3', 'olmo2', 'gemma3'];
const dir = (name) => new URL(`../fixtures/your-model/${name}/`, import.meta.url);

/** A checkpoint folder's files as the page takes them, { name, bytes }, without the expected values. */
export function checkpointFiles(name) {
  return readdirSync(dir(name)).filter((file) => !file.startsWith('expected') && !file.startsWith('hooks'))
    .map((file) => ({ name: file, bytes: new Uint8Array(readFileSync(new URL(file, dir(name)))) }));
}

/** The torch forward's values: expected.json plus expected.safetensors' tensors (Float32Arrays). */
export function expectedValues(name) {
  const meta = JSON.parse(readFileSync(new URL('expected.json', dir(name)), 'utf8'));
  const { tensors } = readSafetensors(readFileSync(new URL('expected.safetensors', dir(name))));
  return { ...meta, tensors };
}

/** The top-5 token ids of the last row of torch's logits ({ data, shape [L, V] }), most likely first. */
export function torchTop(logits) {
  const V = logits.shape[1];
  const last = logits.data.subarray(logits.data.length - V);
  return [...last.keys()].sort((a, b) => last[b] - last[a]).slice(0, 5);
}

/** |actual - expected| <= tolerance * (1 + |expected|) everywhere; the message names the worst index. */
export function assertClose(actual, expected, tolerance, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let worst = 0, at = -1;
  for (let i = 0; i < expected.length; i++) {
    const error = Math.abs(actual[i] - expected[i]) / (1 + Math.abs(expected[i]));
    if (!(error <= worst)) { worst = error; at = i; }
  }
  assert.ok(worst <= tolerance, `${what}: relative difference ${worst} at ${at} (got ${actual[at]}, torch ${expected[at]})`);
}

/**
 * The model's logits, every layer's attention pattern, the logit lens, one head ablated and one
 * head patched from the other text, against torch's. `model` is a CheckpointModel.
 */
export async function checkAgainstTorch(model, name, tolerance = 1e-4) {
  const expected = expectedValues(name);
  const { ids, otherIds, tensors } = expected;
  const { numHeads: H, headDim: D, numLayers } = model.architecture;
  const L = ids.length;
  const run = await model.forward(ids);
  assertClose(run.logits, tensors.logits.data, tolerance, `${name} logits`);
  for (let l = 0; l < numLayers; l++) {
    assert.deepEqual(tensors[`pattern.${l}`].shape, [H, L, L]);
    assertClose(run.layers[l].weights, tensors[`pattern.${l}`].data, tolerance, `${name} layer ${l} pattern`);
  }
  assertClose(Float32Array.from(run.lens.flatMap((row) => [...row])), tensors.lens.data, tolerance, `${name} logit lens`);

  const { layer: al, head: ah } = expected.ablate;
  const ablated = await model.forward(ids, { patches: { [al]: zPatch([ah], [], null, L, H, D) } });
  assertClose(ablated.logits, tensors.ablated_logits.data, tolerance, `${name} ablated logits`);

  const { layer: pl, head: ph } = expected.patch;
  const other = await model.forward(otherIds, { capture: ['z'] });
  const patched = await model.forward(ids, { patches: { [pl]: zPatch([], [ph], other.layers[pl].z, L, H, D) } });
  assertClose(patched.logits, tensors.patched_logits.data, tolerance, `${name} patched logits`);
  // The edits change the logits (so the comparisons above test something).
  assert.ok(Math.abs(ablated.logits[0] - run.logits[0]) + Math.abs(ablated.logits.at(-1) - run.logits.at(-1)) > 1e-4);
}
