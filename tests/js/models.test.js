// mha-wasm/models on wasm: the tiny checkpoints of every family the package loads (GPT-2, Llama
// sharded, Qwen2 bf16, Mistral f16 with a sliding window, Pythia f16 with parallel blocks, Gemma bf16,
// Gemma 2 with softcaps and post-norms, Phi-3 with fused projections) against the float64 torch reference:
// every hook point under TransformerLens' names and shapes, hooks that replace activations, the
// patching sweeps, direct logit attribution and head scores; then the API's errors, generate, the
// folder helper and dispose().
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { init } from '../../bindings/js/index.js';
import { activationPatching, directLogitAttribution, headScores, loadModel, loadModelFromFolder } from '../../bindings/js/models/index.js';
import { checkHookPoints, checkReplacements, checkWorkflows, hookReference, loadFixture } from './models-reference.js';
import { assertClose, checkpointFiles, FIXTURES } from './your-model-fixtures.js';

const mha = await init({ threads: 1 });

for (const name of FIXTURES) {
  test(`${name}: every hook point matches the torch reference (names, shapes, values)`, async () => {
    const model = await loadFixture(mha, name);
    try {
      await checkHookPoints(model, name);
    } finally {
      model.dispose();
    }
  });

  test(`${name}: hooks that replace an activation change the rest of the forward as torch's`, async () => {
    const model = await loadFixture(mha, name);
    try {
      await checkReplacements(model, name);
    } finally {
      model.dispose();
    }
  });

  test(`${name}: activation patching, direct logit attribution and head scores match the reference`, async () => {
    const model = await loadFixture(mha, name);
    try {
      await checkWorkflows(model, name);
    } finally {
      model.dispose();
    }
  });
}

test('runWithCache keeps only the names asked for; a predicate and one name work too', async () => {
  const model = await loadFixture(mha, 'llama');
  try {
    const { ids } = hookReference('llama');
    const names = ['blocks.1.attn.hook_pattern', 'blocks.0.hook_resid_pre'];
    const { cache } = await model.runWithCache(ids, { names });
    assert.deepEqual(cache.names, ['blocks.0.hook_resid_pre', 'blocks.1.attn.hook_pattern']);  // forward order
    assert.deepEqual(cache.get('blocks.1.attn.hook_pattern').shape, [1, 4, ids.length, ids.length]);
    assert.deepEqual([...cache.ids], ids);
    assert.throws(() => cache.get('blocks.0.hook_mlp_out'), {
      name: 'TypeError', message: 'cache.get: no activation "blocks.0.hook_mlp_out": it holds 2 (cache.names); runWithCache(ids, { names }) keeps only the names asked for',
    });
    const byPredicate = await model.runWithCache(ids, { names: (n) => n.endsWith('hook_z') });
    assert.deepEqual(byPredicate.cache.names, ['blocks.0.attn.hook_z', 'blocks.1.attn.hook_z', 'blocks.2.attn.hook_z']);
    assert.deepEqual((await model.runWithCache(ids, { names: 'hook_embed' })).cache.names, ['hook_embed']);
    assert.deepEqual(model.hookShape('blocks.0.attn.hook_k', 5), [1, 5, 2, 8]);  // kv heads under GQA
  } finally {
    model.dispose();
  }
});

test('bad inputs get an Error naming the argument, the hook and the shape expected', async () => {
  const model = await loadFixture(mha, 'gpt2');
  try {
    const { ids, otherIds, answer, wrong } = hookReference('gpt2');
    const L = ids.length;
    await assert.rejects(model.runWithHooks(ids, { hooks: { 'blocks.0.attn.hook_patern': () => {} } }), {
      name: 'TypeError',
      message: "runWithHooks: hooks: unknown hook point \"blocks.0.attn.hook_patern\"; names look like 'blocks.0.attn.hook_pattern', 'blocks.0.hook_resid_pre', 'hook_embed' (model.hookNames lists all 40)",
    });
    await assert.rejects(model.runWithCache(ids, { names: ['blocks.7.hook_resid_pre'] }), {
      name: 'TypeError', message: 'runWithCache: names[0]: unknown hook point "blocks.7.hook_resid_pre"; the model has blocks 0 to 1',
    });
    await assert.rejects(model.runWithCache(ids, { names: ['blocks.0.attn.hook_rot_q'] }), /unknown hook point "blocks.0.attn.hook_rot_q"/);  // GPT-2 has no rotary
    await assert.rejects(model.runWithHooks(ids, { hooks: { 'blocks.0.attn.hook_z': () => ({ data: new Float32Array(3), shape: [1, 3] }) } }), {
      name: 'RangeError', message: `runWithHooks: hook 'blocks.0.attn.hook_z' returned shape [1, 3]; expected [1, ${L}, 4, 8] (the activation's shape)`,
    });
    await assert.rejects(model.runWithHooks(ids, { hooks: { hook_embed: () => 5 } }), /hook 'hook_embed' must return nothing or \{ data, shape \} with shape \[1, 8, 32\], got number/);
    await assert.rejects(model.runWithHooks(ids, { hooks: { hook_embed: 'zero' } }), { message: 'runWithHooks: hooks["hook_embed"] must be a function, got string' });
    await assert.rejects(model.forward([1, 2, 9999]), { name: 'RangeError', message: `forward: ids[2] = 9999 is not a token id of the vocabulary [0, ${model.config.vocabSize})` });
    await assert.rejects(model.forward([]), { name: 'RangeError', message: 'forward: ids must hold at least one token' });
    await assert.rejects(model.forward('the cat'), /forward: ids must be an array or Int32Array of token ids, got a string \(encode it first/);
    await assert.rejects(activationPatching(model, { clean: ids, corrupted: otherIds.slice(1), answer, wrong, over: 'resid_pre' }), {
      name: 'RangeError', message: `activationPatching: clean is ${L} tokens and corrupted ${L - 1}; patching needs two of the same length`,
    });
    await assert.rejects(activationPatching(model, { clean: ids, corrupted: otherIds, answer, wrong, over: 'heads' }),
      { message: "activationPatching: over must be one of 'resid_pre', 'attn_out', 'mlp_out', 'head_out', 'head_out_by_pos', got \"heads\"" });
    await assert.rejects(activationPatching(model, { clean: ids, corrupted: otherIds, answer: -1, wrong, over: 'resid_pre' }),
      { message: `activationPatching: answer must be a token id in [0, ${model.config.vocabSize}), got -1` });
    const { cache } = await model.runWithCache(ids, { names: ['blocks.0.attn.hook_pattern'] });
    assert.throws(() => headScores(model, cache, 'copying'), /headScores: kind must be one of 'previous_token', 'duplicate_token', 'induction', got "copying"/);
    assert.throws(() => headScores(model, cache, 'induction'), /headScores: the cache has no blocks.1.attn.hook_pattern/);
    assert.throws(() => directLogitAttribution(model, cache, { answer, wrong }), /directLogitAttribution: the cache lacks ln_final.hook_scale, blocks.1.hook_resid_post, blocks.0.attn.hook_result and \d+ more/);
    await assert.rejects(loadModel(mha, []), /loadModel: files must be a non-empty array/);
    // An option the API does not implement is refused by name, never ignored.
    await assert.rejects(loadModel(mha, checkpointFiles('gpt2'), { prependBos: false }), {
      name: 'TypeError', message: "loadModel: unknown option 'prependBos'; known options: wasm, onProgress, signal, weightDtype, contextLength" });
    await assert.rejects(model.runWithCache(ids, { name: ['hook_embed'] }), { message: "runWithCache: unknown option 'name'; known options: names" });
    await assert.rejects(model.generate(ids, { maxTokens: 3 }), /generate: unknown option 'maxTokens'; known options: maxNewTokens, onToken, stopAtEos, signal/);
    await assert.rejects(activationPatching(model, { clean: ids, corrupted: otherIds, answer, wrong, over: 'resid_pre', normalize: false }),
      /activationPatching: unknown option 'normalize'/);
    assert.throws(() => directLogitAttribution(model, cache, { answer, wrong, pos: 3 }), /directLogitAttribution: unknown option 'pos'/);
    assert.throws(() => model.tokenizer.encode('the', { bos: true }), /tokenizer.encode: unknown option 'bos'; known options: prependBos/);
    await assert.rejects(loadModel({}, checkpointFiles('gpt2')), /loadModel: mha must be the module init\(\) resolved to/);
    await assert.rejects(loadModelFromFolder(mha, '/nonexistent/folder'), /loadModelFromFolder: cannot read the folder \/nonexistent\/folder/);
  } finally {
    model.dispose();
  }
});

test('two replacements in one attention: a later step carries an earlier one; parallel ones are refused by name', async () => {
  const model = await loadFixture(mha, 'llama');
  try {
    const { ids } = hookReference('llama');
    const double = (a) => ({ data: a.data.map((v) => 2 * v), shape: a.shape });
    // k then the pattern: the pattern patch follows k, so the k edit is kept as far as the pattern.
    const kThenPattern = await model.runWithHooks(ids, { hooks: { 'blocks.0.attn.hook_k': double, 'blocks.0.attn.hook_pattern': (a) => a } });
    const kOnly = await model.runWithHooks(ids, { hooks: { 'blocks.0.attn.hook_k': double } });
    assertClose(kThenPattern.logits.data, kOnly.logits.data, 1e-6, 'k, then an unchanged pattern');
    await assert.rejects(model.runWithHooks(ids, { hooks: { 'blocks.0.attn.hook_k': double, 'blocks.0.attn.hook_v': double } }), {
      name: 'TypeError', message: /^runWithHooks: blocks\.0\.attn\.hook_v replaces a value after a hook in blocks\.0\.attn replaced its k/,
    });
  } finally {
    model.dispose();
  }
});

test('generate: greedy tokens through the caches equal the argmax of recomputing', async () => {
  const model = await loadModelFromFolder(mha, fileURLToPath(new URL('../fixtures/your-model/mistral/', import.meta.url)));
  try {
    const { ids } = hookReference('mistral');
    const seen = [];
    const { ids: generated, text } = await model.generate(ids, { maxNewTokens: 4, stopAtEos: false, onToken: (id, { index }) => seen.push([index, id]) });
    assert.equal(generated.length, 4);
    assert.deepEqual(seen.map(([i]) => i), [0, 1, 2, 3]);
    assert.deepEqual(seen.map(([, id]) => id), generated);
    assert.equal(text, model.tokenizer.decode(generated));
    let context = [...ids];
    for (const id of generated) {
      const { logits } = await model.forward(context);
      const last = logits.data.subarray(logits.data.length - model.config.vocabSize);
      assert.equal(id, last.indexOf(Math.max(...last)));
      context = [...context, id];
    }
    const stopped = await model.generate(ids, { maxNewTokens: 4, onToken: () => false });
    assert.equal(stopped.ids.length, 1);
    await assert.rejects(model.generate(ids, { maxNewTokens: -1 }), /generate: maxNewTokens must be a non-negative integer, got -1/);
  } finally {
    model.dispose();
  }
});

test('dispose() frees all of a model\'s wasm memory; a disposed model refuses calls', async () => {
  const before = mha.heapAllocatedBytes();
  const model = await loadFixture(mha, 'qwen2');
  await model.runWithCache(hookReference('qwen2').ids);
  assert.ok(mha.heapAllocatedBytes() > before, 'the model holds wasm memory');
  model.dispose();
  assert.equal(mha.heapAllocatedBytes(), before);
  await assert.rejects(model.forward([1, 2]), { message: 'forward: the model was disposed' });
});

test('the model\'s config and tokenizer as the API reports them', async () => {
  const model = await loadFixture(mha, 'llama');
  try {
    assert.deepEqual({ ...model.config }, {
      family: 'llama', modelType: 'llama', numLayers: 3, embedDim: 32, numHeads: 4, numKvHeads: 2, headDim: 8,
      vocabSize: model.config.vocabSize, maxPositions: 64, hiddenDim: 64, normalization: 'rmsnorm',
    });
    const { text, ids } = hookReference('llama');
    assert.deepEqual(model.tokenizer.encode(text), ids);  // TransformerLens prepends BOS for Llama
    assert.equal(model.tokenizer.toStrTokens(ids).length, ids.length);
  } finally {
    model.dispose();
  }
});

test('the CommonJS entry reaches the same functions', async () => {
  const { createRequire } = await import('node:module');
  const require = createRequire(import.meta.url);
  const cjs = require('../../bindings/js/models.cjs');
  const model = await cjs.loadModel(mha, checkpointFiles('gpt2'));
  try {
    const { ids, hookTensors } = hookReference('gpt2');
    const { cache } = await model.runWithCache(ids, { names: ['blocks.1.hook_resid_post'] });
    assertClose(cache.get('blocks.1.hook_resid_post').data, hookTensors['blocks.1.hook_resid_post'].data, 1e-5, 'cjs');
    assert.equal(typeof cjs.activationPatching, 'function');
  } finally {
    model.dispose();
  }
});

test("llama with attention_bias: o_proj's bias is read (each layer's attention output moves by it), not ignored", async () => {
  const { readSafetensors, writeSafetensors } = await import('../../bindings/js/index.js');
  const plain = await loadFixture(mha, 'llama');
  const E = plain.config.embedDim, H = plain.config.numHeads, K = plain.config.numKvHeads, D = plain.config.headDim;
  const oBias = Float32Array.from({ length: E }, (_, i) => 0.05 * Math.sin(i + 1));
  // Zero q/k/v biases and an o_proj bias, as a Llama checkpoint saved with attention_bias: true holds them.
  const files = checkpointFiles('llama').map((file) => {
    if (file.name === 'config.json') {
      const config = JSON.parse(new TextDecoder().decode(file.bytes));
      return { name: file.name, bytes: new TextEncoder().encode(JSON.stringify({ ...config, attention_bias: true })) };
    }
    if (!file.name.endsWith('.safetensors')) return file;
    const { tensors } = readSafetensors(file.bytes);
    for (const key of Object.keys(tensors)) {
      const m = /^model\.layers\.(\d+)\.self_attn\.o_proj\.weight$/.exec(key);
      if (!m) continue;
      const p = `model.layers.${m[1]}.self_attn.`;
      tensors[p + 'o_proj.bias'] = { dtype: 'F32', shape: [E], data: oBias };
      tensors[p + 'q_proj.bias'] = { dtype: 'F32', shape: [H * D], data: new Float32Array(H * D) };
      tensors[p + 'k_proj.bias'] = { dtype: 'F32', shape: [K * D], data: new Float32Array(K * D) };
      tensors[p + 'v_proj.bias'] = { dtype: 'F32', shape: [K * D], data: new Float32Array(K * D) };
    }
    return { name: file.name, bytes: writeSafetensors(tensors) };
  });
  const biased = await loadModel(mha, files);
  try {
    const { ids } = hookReference('llama');
    const addBias = (a) => { for (let i = 0; i < a.data.length; i++) a.data[i] += oBias[i % E]; };
    const hooks = Object.fromEntries(Array.from({ length: plain.config.numLayers }, (_, l) => [`blocks.${l}.hook_attn_out`, addBias]));
    const expected = (await plain.runWithHooks(ids, { hooks })).logits.data;
    assertClose((await biased.forward(ids)).logits.data, expected, 1e-5, 'o_proj bias');
  } finally {
    biased.dispose();
    plain.dispose();
  }
});
