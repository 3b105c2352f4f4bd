// "Bring your own" in Chromium: a user's token embeddings (.json / .npy) and nn.MultiheadAttention
// state dict (.safetensors, nested under a model prefix, grouped-query) give the same views, with
// weights equal to the package's in Node; the Steps view ablates a head and patches its z from a second
// embeddings file, as the package does; malformed files give a clear message and the page keeps working.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { init, writeSafetensors } from '../../bindings/js/index.js';
import { startDemo } from './browser.js';
import { maxDifference } from './node-reference.js';

const E = 16;
const H = 4;
const KV_HEADS = 2;
const L = 7;
const PREFIX = 'encoder.layers.0.self_attn.';
const fill = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7.3 + i * 0.37) * 0.5);

// A grouped-query layer as PyTorch-style separate projections: 4 query heads share 2 key/value heads.
const headDim = E / H;
const stateDict = {
  q_proj_weight: fill(E * E, 1),
  k_proj_weight: fill(KV_HEADS * headDim * E, 2),
  v_proj_weight: fill(KV_HEADS * headDim * E, 3),
  in_proj_bias: fill(E + 2 * KV_HEADS * headDim, 4),
  'out_proj.weight': fill(E * E, 5),
  'out_proj.bias': fill(E, 6),
};
const shapes = {
  q_proj_weight: [E, E], k_proj_weight: [KV_HEADS * headDim, E], v_proj_weight: [KV_HEADS * headDim, E],
  in_proj_bias: [E + 2 * KV_HEADS * headDim], 'out_proj.weight': [E, E], 'out_proj.bias': [E],
};
const safetensors = Buffer.from(writeSafetensors({
  ...Object.fromEntries(Object.entries(stateDict).map(([k, data]) => [PREFIX + k, { data, shape: shapes[k] }])),
  'encoder.embed.weight': { data: fill(10 * E, 7), shape: [10, E] },
}));
const embeddings = fill(L * E, 8);
const rows = Array.from({ length: L }, (_, i) => Array.from(embeddings.subarray(i * E, (i + 1) * E)));
const tokens = ['The', 'quick', 'brown', 'fox', 'jumps', '<pad>', '<pad>'];
const padding = [false, false, false, false, false, true, true];

/** A NumPy .npy (version 1.0) file holding float32 [rows, cols]. */
function npy(data, shape) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const head = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(head);
  head.writeUInt16LE(header.length, 8);
  return Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
}

async function nodeWeights({ causal, keyPadding }) {
  const mha = await init();
  const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: KV_HEADS });
  try {
    layer.loadStateDict(stateDict);
    return layer.forward({ data: embeddings, shape: [L, E] }, null, null, {
      causal, needWeights: true, averageWeights: false,
      ...(keyPadding && { keyPaddingMask: { data: Uint8Array.from(keyPadding, Number), shape: [L] } }),
    }).weights.data;
  } finally {
    layer.dispose();
  }
}

let demo;
let page;
let problems; // console errors and uncaught exceptions

before(async () => {
  demo = await startDemo();
  ({ page, problems } = demo);
  await page.locator('#source-custom').click();
});

after(() => demo?.close());

const state = () => page.evaluate(() => window.__mhaDemo.getState());
const message = () => page.locator('#message').textContent();

async function submit({ embeddingsFile, weightsFile = { name: 'layer.safetensors', mimeType: 'application/octet-stream', buffer: safetensors }, heads = H, causal = false }) {
  await page.locator('#byo-embeddings').setInputFiles(embeddingsFile);
  await page.locator('#byo-weights').setInputFiles(weightsFile);
  await page.locator('#byo-heads').fill(String(heads));
  await page.locator('#byo-causal').setChecked(causal);
  // Clear the last message, so the wait below sees this submission's answer (success or error).
  await page.evaluate(() => { document.getElementById('message').hidden = true; });
  await page.locator('#byo-run').click();
  await page.waitForFunction(() => !document.getElementById('message').hidden);
}

test('JSON embeddings + a nested grouped-query state dict: same views, weights equal Node', async () => {
  const json = JSON.stringify({ tokens, embeddings: rows, padding });
  await submit({ embeddingsFile: { name: 'tokens.json', mimeType: 'application/json', buffer: Buffer.from(json) }, causal: true });
  assert.match(await message(), /Loaded layer\.safetensors \(layer 'encoder\.layers\.0\.self_attn\.'\): embedDim 16, 4 heads, 2 key\/value heads, 7 tokens/);
  const s = await state();
  assert.equal(s.source, 'custom');
  assert.deepEqual(s.labels, tokens);
  assert.deepEqual(s.padding, [0, 0, 0, 0, 0, 1, 1]);
  assert.equal(s.causal, true);
  assert.deepEqual([s.config.numHeads, s.config.numKvHeads], [H, KV_HEADS]);
  // The head grid groups the query heads that share a key/value head.
  assert.equal(await page.locator('.kv-group.shared').count(), KV_HEADS);
  assert.equal(await page.locator('.kv-group.shared').first().locator('.tile').count(), H / KV_HEADS);
  const expected = await nodeWeights({ causal: true, keyPadding: padding });
  for (let h = 0; h < H; h++) {
    const shown = await page.evaluate((head) => window.__mhaDemo.getWeights(0, head), h);
    assert.ok(maxDifference(shown, expected.subarray(h * L * L, (h + 1) * L * L)) <= 1e-5, `head ${h}`);
  }
  assert.deepEqual(problems, []);
});

test('a Mistral-style layer (rotary + GQA + sliding window, head size free of E / H): weights equal Node', async () => {
  // E 16, 4 query heads of size 8 (32 rows), 2 key/value heads; rotary on the whole head, window of 3.
  const M = { E: 16, H: 4, kv: 2, head: 8 };
  const mistral = {
    q_proj_weight: { data: fill(M.H * M.head * M.E, 11), shape: [M.H * M.head, M.E] },
    k_proj_weight: { data: fill(M.kv * M.head * M.E, 12), shape: [M.kv * M.head, M.E] },
    v_proj_weight: { data: fill(M.kv * M.head * M.E, 13), shape: [M.kv * M.head, M.E] },
    'out_proj.weight': { data: fill(M.E * M.H * M.head, 14), shape: [M.E, M.H * M.head] },
  };
  const file = Buffer.from(writeSafetensors(Object.fromEntries(Object.entries(mistral).map(([k, t]) => [`model.layers.3.self_attn.${k}`, t]))));
  await page.locator('#byo-family').selectOption('mistral');
  await page.locator('#byo-window').fill('3');
  await submit({ embeddingsFile: { name: 'tokens.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(rows)) },
    weightsFile: { name: 'mistral.safetensors', mimeType: 'application/octet-stream', buffer: file }, heads: M.H, causal: true });
  assert.match(await message(), /Loaded mistral\.safetensors .*embedDim 16, 4 heads, 2 key\/value heads, 7 tokens/);
  const s = await state();
  assert.deepEqual([s.config.headDim, s.config.numKvHeads, s.config.slidingWindow, s.config.rotary.dim], [8, 2, 3, 8]);
  assert.equal(await page.locator('.kv-group.shared').count(), M.kv);
  const mha = await init();
  const layer = new mha.MultiHeadAttention({ embedDim: M.E, numHeads: M.H, numKvHeads: M.kv, headDim: M.head, bias: false,
    rotary: { dim: 8 }, slidingWindow: 3 });
  layer.loadStateDict(Object.fromEntries(Object.entries(mistral).map(([k, t]) => [k, t.data])));
  const expected = layer.forward({ data: embeddings, shape: [L, M.E] }, null, null, { causal: true, needWeights: true, averageWeights: false }).weights.data;
  const { captured } = layer.forward({ data: embeddings, shape: [L, M.E] }, null, null, { causal: true, capture: true });
  // Activation patching: head 1's z from a second input of the same shape.
  const second = fill(L * M.E, 9);
  const secondZ = layer.forward({ data: second, shape: [L, M.E] }, null, null, { causal: true, capture: ['z'] }).captured.z;
  const patched = layer.forward({ data: embeddings, shape: [L, M.E] }, null, null, { causal: true, patch: { z: secondZ, heads: [1] } }).output.data;
  layer.dispose();
  for (let h = 0; h < M.H; h++) {
    const shown = await page.evaluate((head) => window.__mhaDemo.getWeights(0, head), h);
    assert.ok(maxDifference(shown, expected.subarray(h * L * L, (h + 1) * L * L)) <= 1e-5, `head ${h}`);
    // The window: query 6 sees keys 4, 5, 6 only.
    assert.deepEqual(Array.from(shown.slice(6 * L, 7 * L), (w) => w > 0), [false, false, false, false, true, true, true]);
  }
  // The Steps view of head 1 (key/value head 0), query 6: the package's capture, the window blocked.
  const steps = await page.evaluate(() => window.__mhaDemo.showSteps({ layer: 0, head: 1, query: 6 }));
  const row = (t, start, n) => Array.from(t.data.subarray(start, start + n));
  assert.deepEqual(steps.logits.slice(0, 4), [-Infinity, -Infinity, -Infinity, -Infinity]);
  assert.ok(maxDifference(steps.scores, row(captured.scores, (1 * L + 6) * L, L)) <= 1e-5);
  assert.ok(maxDifference(steps.q, row(captured.q, (1 * L + 6) * M.head, M.head)) <= 1e-5);
  assert.ok(maxDifference(steps.keys.flat(), row(captured.k, 0, L * M.head)) <= 1e-5);
  // Ablating the head reruns the layer with zeros in its z.
  await page.locator('#steps-ablate').check();
  await page.waitForFunction(() => window.__mhaDemo.getState().steps?.z.every((x) => x === 0));
  await page.locator('#steps-ablate').uncheck();
  await page.waitForFunction(() => window.__mhaDemo.getState().steps?.z.some((x) => x !== 0));
  // Patching head 1's z from a second embeddings file: its z is the second input's, the output follows.
  const jsonFile = (name, data, n) => ({ name, mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(Array.from({ length: n }, (_, i) => Array.from(data.subarray(i * M.E, (i + 1) * M.E))))) });
  assert.equal(await page.locator('#steps-patch-label').textContent(), 'second embeddings (the same [L, E])');
  await page.locator('#steps-patch-file').setInputFiles(jsonFile('second.json', second, L));
  await page.locator('#steps-patch').click();
  await page.waitForFunction((z) => window.__mhaDemo.getState().steps?.z.some((x, i) => x !== z[i]), steps.z);
  const shown = (await state()).steps;
  assert.ok(maxDifference(shown.z, row(secondZ, (6 * M.H + 1) * M.head, M.head)) <= 1e-5, 'head 1\'s z is the second input\'s');
  assert.ok(maxDifference(shown.output, Array.from(patched.subarray(6 * M.E, 7 * M.E))) <= 1e-5, 'the output follows the patch');
  assert.deepEqual((await state()).stepsView.patchFile, 'second.json');
  assert.match(await page.locator('#steps-summary').textContent(), /L0 H1 patched from second\.json/);
  // A second input of another shape is refused with a message; Clear restores the layer.
  await page.locator('#steps-patch-file').setInputFiles(jsonFile('short.json', second, L - 1));
  await page.locator('#steps-patch').click();
  await page.waitForFunction(() => /patch: the second embeddings are \[6, 16\]; patching needs the shape of the embeddings shown \[7, 16\]/
    .test(document.getElementById('message').textContent));
  await page.locator('#steps-clear').click();
  await page.waitForFunction((z) => window.__mhaDemo.getState().stepsView.patched.length === 0
    && window.__mhaDemo.getState().steps?.z.every((x, i) => x === z[i]), steps.z);
  await page.locator('#view-heatmap').click();
  await page.locator('#byo-family').selectOption('pytorch');
  assert.deepEqual(problems, []);
});

test('.npy embeddings work too (no labels: positions are numbered)', async () => {
  await submit({ embeddingsFile: { name: 'tokens.npy', mimeType: 'application/octet-stream', buffer: npy(embeddings, [L, E]) } });
  const s = await state();
  assert.deepEqual(s.labels, ['0', '1', '2', '3', '4', '5', '6']);
  assert.equal(s.causal, false);
  const expected = await nodeWeights({ causal: false });
  const shown = await page.evaluate(() => window.__mhaDemo.getWeights(0, 3));
  assert.ok(maxDifference(shown, expected.subarray(3 * L * L, 4 * L * L)) <= 1e-5);
});

test('malformed files give a clear message on the page, never a broken page', async () => {
  const goodJson = { name: 'tokens.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(rows)) };
  const cases = [
    [{ embeddingsFile: { name: 'tokens.json', mimeType: 'application/json', buffer: Buffer.from('{"embeddings": [[1, 2], [3') } },
      /tokens\.json: not valid JSON/],
    [{ embeddingsFile: { name: 'tokens.json', mimeType: 'application/json', buffer: Buffer.from('[[1, 2], [3]]') } },
      /tokens\.json: row 1 has 1 numbers, row 0 has 2/],
    [{ embeddingsFile: { name: 'tokens.npy', mimeType: 'application/octet-stream', buffer: Buffer.from('not numpy at all') } },
      /tokens\.npy: not a \.npy file/],
    [{ embeddingsFile: goodJson, weightsFile: { name: 'cut.safetensors', mimeType: 'application/octet-stream', buffer: safetensors.subarray(0, 100) } },
      /cut\.safetensors: .*header length/],
    [{ embeddingsFile: goodJson, weightsFile: { name: 'other.safetensors', mimeType: 'application/octet-stream',
      buffer: Buffer.from(writeSafetensors({ 'fc.weight': { data: new Float32Array(4), shape: [2, 2] } })) } },
    /other\.safetensors: no nn\.MultiheadAttention weights .* fc\.weight/],
    [{ embeddingsFile: goodJson, heads: 3 }, /heads: 3 must be a positive integer dividing the embedding size 16/],
    [{ embeddingsFile: { name: 'small.json', mimeType: 'application/json', buffer: Buffer.from('[[1, 2, 3]]') }, heads: 1 },
      /q_proj_weight must be \[3, 3\]/],
  ];
  for (const [files, expected] of cases) {
    await submit(files);
    assert.match(await message(), expected);
    assert.equal(await page.locator('#message').getAttribute('class'), '');
  }
  // The page still works: the last good layer stays drawn, and the default model runs again.
  assert.equal((await state()).source, 'custom');
  await page.locator('#source-default').click();
  await page.evaluate(() => window.__mhaDemo.setText('the end.'));
  const s = await state();
  assert.equal(s.source, 'default');
  assert.equal(s.labels.length, 9);
  assert.deepEqual(problems, []);
});
