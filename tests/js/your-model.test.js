// The "Your model" mode's loader and forward (web/your-model/) on wasm: tiny GPT-2, Llama (sharded),
// Qwen2 (bf16), Mistral (f16, sliding window), Pythia (f16, parallel, partial rotary), Gemma (bf16,
// multi-query), Gemma 2 (softcaps, alternating windows, post-norms) and Phi-3 (fused projections,
// sharded) checkpoints in Hugging Face's layouts must give
// torch's logits, attention patterns, logit lens, ablation and patching; tokenizer.json must give
// the ids of the fixture's BPE; generation through the caches must equal recomputing; bad files are
// refused by name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { architectureOf } from '../../bindings/js/models/architecture.js';
import { readCheckpoint } from '../../bindings/js/models/checkpoint.js';
import { CheckpointTokenizer } from '../../bindings/js/models/tokenizer.js';
import { CheckpointModel } from '../../bindings/js/models/transformer.js';
import { assertClose, checkAgainstTorch, checkpointFiles, expectedValues, FIXTURES } from './your-model-fixtures.js';

const mha = await init({ threads: 1 });

for (const name of FIXTURES) {
  test(`${name}: logits, every head's pattern, logit lens, ablation and patching match torch's`, async () => {
    const checkpoint = readCheckpoint(checkpointFiles(name));
    const model = await CheckpointModel.create(mha, mha, checkpoint);
    try {
      const { dtype, family } = expectedValues(name);
      assert.equal(model.summary.dtype, { float32: 'f32', float16: 'f16', bfloat16: 'bf16' }[dtype]);
      assert.equal(model.summary.family, family);
      await checkAgainstTorch(model, name);
    } finally {
      model.dispose();
    }
  });

  test(`${name}: tokenizer.json gives the fixture's token ids and decodes them back`, () => {
    const { text, ids } = expectedValues(name);
    const { tokenizerJson, config } = readCheckpoint(checkpointFiles(name));
    const tokenizer = new CheckpointTokenizer(tokenizerJson, config);
    const encoded = tokenizer.encodeWithTemplate(text);
    assert.deepEqual(encoded.ids, ids);
    assert.equal(encoded.labels.length, ids.length);
    // TransformerLens' prepend_bos: by hand, whatever the post-processor adds (default: off for Qwen2).
    const withoutTemplate = ids[0] === config.bos_token_id && name !== 'gpt2' ? ids.slice(1) : ids;
    assert.deepEqual(tokenizer.encode(text, { prependBos: false }), withoutTemplate);
    assert.deepEqual(tokenizer.encode(text, { prependBos: true }), [config.bos_token_id, ...withoutTemplate]);
    // (TransformerLens' default_prepend_bos is off for Qwen2 and, since v3, GPT-NeoX / Pythia)
    assert.equal(tokenizer.prependBos, !['qwen2', 'qwen3', 'gpt_neox'].includes(config.model_type));
    assert.deepEqual(tokenizer.toStrTokens(ids), encoded.labels);
    assert.equal(tokenizer.decode(ids).replace(/^<s> ?/, ''), text);
  });
}

test('the model summary the page reports', async () => {
  const model = await CheckpointModel.create(mha, mha, readCheckpoint(checkpointFiles('llama')));
  try {
    assert.deepEqual(model.summary, { family: 'llama', numLayers: 3, numHeads: 4, numKvHeads: 2, dtype: 'f32', weightDtype: 'f32' });
  } finally {
    model.dispose();
  }
});

test('generation through every layer\'s cache gives the logits of recomputing the whole text', async () => {
  for (const name of ['gpt2', 'mistral']) {
    const model = await CheckpointModel.create(mha, mha, readCheckpoint(checkpointFiles(name)));
    try {
      const { ids } = expectedValues(name);
      const caches = model.createCaches(32);
      const prefix = ids.slice(0, -2);
      await model.forward(prefix, { caches, logits: 'last' });
      let step;
      for (const id of ids.slice(-2)) step = await model.forward([id], { caches, logits: 'last' });
      assert.equal(caches[0].length, ids.length);
      assert.equal(step.layers[0].keys, ids.length);
      const full = await model.forward(ids, { logits: 'last' });
      assertClose(step.logits, full.logits, 1e-5, `${name} cached logits`);
      assertClose(step.lens[1], full.lens[1], 1e-5, `${name} cached lens`);
    } finally {
      model.dispose();
    }
  }
});

test('an unknown architecture is refused with what config.json names', () => {
  assert.throws(() => architectureOf({ model_type: 'bert', architectures: ['BertForMaskedLM'] }), {
    name: 'TypeError',
    message: 'config.json: model_type "bert", architectures ["BertForMaskedLM"] is not a supported architecture; supported model_type: gpt2, llama, mistral, qwen2, qwen3, gpt_neox, gemma, gemma2, gemma3_text, phi3, olmo2',
  });
  // The multimodal Gemma 3 (a vision tower, text_config) is not gemma3_text.
  assert.throws(() => architectureOf({ model_type: 'gemma3', architectures: ['Gemma3ForConditionalGeneration'],
    vision_config: { model_type: 'siglip_vision_model' }, text_config: { model_type: 'gemma3_text' } }),
  /model_type "gemma3", architectures \["Gemma3ForConditionalGeneration"\] \(vision_config: a vision tower, which is not supported; its text model, model_type "gemma3_text", loads from a checkpoint of that text model alone\) is not a supported architecture/);
  assert.throws(() => architectureOf({ architectures: ['T5ForConditionalGeneration'] }),
    /model_type null, architectures \["T5ForConditionalGeneration"\] is not a supported architecture/);
  const files = checkpointFiles('gpt2').map((file) => (file.name === 'config.json'
    ? { name: file.name, bytes: new TextEncoder().encode(JSON.stringify({ model_type: 'gemma3', architectures: ['Gemma3ForCausalLM'] })) }
    : file));
  assert.throws(() => readCheckpoint(files), /model_type "gemma3", architectures \["Gemma3ForCausalLM"\] is not a supported/);
});

test('options of these families the forward lacks are refused by name', () => {
  const llama = JSON.parse(new TextDecoder().decode(checkpointFiles('llama').find((f) => f.name === 'config.json').bytes));
  assert.throws(() => architectureOf({ ...llama, rope_scaling: { rope_type: 'llama3', factor: 8 } }),
    /config.json: rope_scaling \{"rope_type":"llama3","factor":8\} is not supported/);
  assert.throws(() => architectureOf({ ...llama, hidden_act: 'gelu' }), /hidden_act 'gelu' is not supported \(only 'silu'\)/);
  assert.throws(() => architectureOf({ ...llama, num_key_value_heads: 3 }), /num_attention_heads \(4\) must be a multiple of num_key_value_heads \(3\)/);
});

/** A fixture's config.json, parsed. */
const configOf = (name) => JSON.parse(new TextDecoder().decode(checkpointFiles(name).find((f) => f.name === 'config.json').bytes));

test('what the new families\' configs ask for and the forward lacks is refused by key and value', () => {
  const pythia = configOf('pythia'), gemma = configOf('gemma'), gemma2 = configOf('gemma2'), phi3 = configOf('phi3');
  const refused = [
    [pythia, { rope_scaling: { type: 'dynamic', factor: 2 } }, /^TypeError: config.json: rope_scaling \{"type":"dynamic","factor":2\}: rope type 'dynamic' is not supported/],
    [pythia, { hidden_act: 'relu' }, /hidden_act 'relu' is not supported \(only gelu, gelu_new, gelu_pytorch_tanh\)/],
    [pythia, { rotary_pct: 0.4 }, /rotary_pct 0.4 gives 3 rotary features of the head's 8; it must be a positive even number/],
    [pythia, { num_key_value_heads: 2 }, /num_key_value_heads 2 is not supported \(GPT-NeoX has one key\/value head per query head\)/],
    [pythia, { partial_rotary_factor: 0.25 }, /rotary_pct 0.5 and partial_rotary_factor 0.25 disagree/],
    [pythia, { rope_theta: 500000 }, /rotary_emb_base 10000 and rope_theta 500000 disagree/],
    [pythia, { rope_parameters: { rope_type: 'linear', factor: 2 } }, /rope_parameters \{"rope_type":"linear","factor":2\}: rope type 'linear' is not supported/],
    [gemma, { rope_scaling: { rope_type: 'linear', factor: 8 } }, /rope_scaling \{"rope_type":"linear","factor":8\}: rope type 'linear' is not supported/],
    [gemma, { attention_bias: true }, /attention_bias true is not supported \(Gemma has no attention biases\)/],
    [gemma, { hidden_activation: 'relu' }, /hidden_activation 'relu' is not supported/],
    [gemma2, { layer_types: ['sliding_attention', 'chunked_attention', 'full_attention'] }, /layer_types\[1\] 'chunked_attention' is not supported \(only sliding_attention, full_attention\)/],
    [gemma2, { layer_types: ['full_attention'] }, /layer_types must list one type for each of the 3 layers, got \["full_attention"\]/],
    [gemma2, { use_bidirectional_attention: true }, /use_bidirectional_attention true is not supported \(only causal attention\)/],
    [phi3, { rope_scaling: { type: 'longrope', long_factor: [1, 1], short_factor: [1, 1] } }, /rope_scaling \{"type":"longrope","long_factor":\[1,1\],"short_factor":\[1,1\]\}: rope type 'longrope' is not supported/],
    [phi3, { rope_scaling: { type: 'su', long_factor: [1], short_factor: [1] } }, /rope type 'su' is not supported/],
    [phi3, { rope_parameters: { rope_type: 'yarn', rope_theta: 10000, factor: 4 } }, /rope_parameters \{"rope_type":"yarn","rope_theta":10000,"factor":4\}: rope type 'yarn' is not supported/],
    [phi3, { hidden_act: 'gelu' }, /hidden_act 'gelu' is not supported \(only 'silu'\)/],
    [phi3, { num_local_experts: 16, num_experts_per_tok: 2 }, /num_local_experts 16 asks for mixture-of-experts layers, which are not supported/],
    [gemma2, { num_experts: 8 }, /num_experts 8 asks for mixture-of-experts layers/],
  ];
  for (const [config, edit, message] of refused) {
    assert.throws(() => architectureOf({ ...config, ...edit }), message, JSON.stringify(edit));
  }
  // What the families read: Gemma 2's defaults, v5's rope_parameters, Pythia's partial rotary.
  const a = architectureOf(gemma2);
  assert.deepEqual(a.layerWindows, [4, null, 4]);
  assert.equal(a.attnScale, 24 ** -0.5);
  assert.deepEqual([a.attnSoftcap, a.finalSoftcap], [2, 8]);
  const defaults = architectureOf({ ...gemma2, attn_logit_softcapping: undefined, final_logit_softcapping: null, layer_types: ['full_attention', 'sliding_attention', 'full_attention'] });
  assert.deepEqual([defaults.attnSoftcap, defaults.finalSoftcap, defaults.layerWindows], [50, null, [null, 4, null]]);
  assert.deepEqual(architectureOf({ ...phi3, rope_parameters: { rope_type: 'default', rope_theta: 500000, partial_rotary_factor: 0.5 } }).rotary, { dim: 4, base: 500000 });
  assert.deepEqual(architectureOf(pythia).rotary, { dim: 4, base: 10000 });
  // (4.48+ configs name them twice; one alone is read)
  assert.deepEqual(architectureOf({ ...pythia, rotary_pct: undefined, partial_rotary_factor: 0.25, rope_theta: 10000 }).rotary, { dim: 2, base: 10000 });
  assert.deepEqual(architectureOf({ ...pythia, partial_rotary_factor: 0.5, rope_theta: 10000 }).rotary, { dim: 4, base: 10000 });
  const sequential = architectureOf(configOf('pythia-sequential'));
  assert.deepEqual([sequential.parallelResidual, sequential.attentionBias, sequential.tiedUnembedding], [false, false, true]);
  assert.equal(architectureOf(gemma).embedScale, Math.fround(Math.sqrt(32)));  // (float32, as the forward runs)
  assert.equal(architectureOf(pythia).parallelResidual, true);
  assert.equal(architectureOf({ ...gemma, hidden_activation: undefined, hidden_act: 'gelu' }).mlp.act, 'gelu_tanh');  // transformers 4.x
});

test('Pythia\'s buffers (attention.bias, masked_bias, rotary_emb.inv_freq) are ignored, whatever their dtype', () => {
  const { tensors, dtype } = readCheckpoint(checkpointFiles('pythia'));
  assert.equal(dtype, 'F16');  // (inv_freq is stored F32 beside the F16 weights)
  assert.deepEqual(Object.keys(tensors).filter((k) => /attention\.(bias|masked_bias|rotary_emb)/.test(k)), []);
});

test('missing files and shards are named', () => {
  const files = checkpointFiles('llama');
  assert.throws(() => readCheckpoint(files.filter((f) => f.name !== 'config.json')), /config.json is missing/);
  assert.throws(() => readCheckpoint(files.filter((f) => f.name !== 'model-00002-of-00002.safetensors')),
    { name: 'TypeError', message: 'loadModel: model.safetensors.index.json names shards that were not given: model-00002-of-00002.safetensors' });
  assert.throws(() => readCheckpoint(files.filter((f) => !f.name.startsWith('model'))), /no weights: expected model.safetensors, or model.safetensors.index.json with its shards/);
  const broken = files.map((f) => (f.name === 'model-00001-of-00002.safetensors' ? { name: f.name, bytes: f.bytes.subarray(0, 100) } : f));
  assert.throws(() => readCheckpoint(broken), /^TypeError: model-00001-of-00002.safetensors: readSafetensors: /);
});

test('a GPT-2 file without the transformer. prefix (as the Hub\'s gpt2 stores it) loads the same', async () => {
  const { writeSafetensors, readSafetensors } = await import('../../bindings/js/index.js');
  const files = checkpointFiles('gpt2').map((file) => {
    if (file.name !== 'model.safetensors') return file;
    const { tensors } = readSafetensors(file.bytes);
    const renamed = Object.fromEntries(Object.entries(tensors).map(([k, t]) => [k.replace(/^transformer\./, ''), t]));
    return { name: file.name, bytes: writeSafetensors(renamed) };
  });
  const model = await CheckpointModel.create(mha, mha, readCheckpoint(files));
  try {
    const { ids, tensors } = expectedValues('gpt2');
    assertClose((await model.forward(ids)).logits, tensors.logits.data, 1e-4, 'unprefixed gpt2 logits');
  } finally {
    model.dispose();
  }
});

test('a missing or mis-shaped tensor is named, and the model is not made', async () => {
  const { writeSafetensors, readSafetensors } = await import('../../bindings/js/index.js');
  const edited = (edit) => checkpointFiles('gpt2').map((file) => {
    if (file.name !== 'model.safetensors') return file;
    const { tensors } = readSafetensors(file.bytes);
    edit(tensors);
    return { name: file.name, bytes: writeSafetensors(tensors) };
  });
  const missing = readCheckpoint(edited((t) => { delete t['transformer.h.1.mlp.c_fc.weight']; }));
  await assert.rejects(CheckpointModel.create(mha, mha, missing), { name: 'TypeError', message: "loadModel: the weights have no tensor 'transformer.h.1.mlp.c_fc.weight'" });
  const misShaped = readCheckpoint(edited((t) => { t['transformer.ln_f.bias'] = { dtype: 'F32', shape: [16], data: new Float32Array(16) }; }));
  // (the constructor builds the whole model at once, with the same checks)
  assert.throws(() => new CheckpointModel(mha, mha, missing), /no tensor 'transformer.h.1.mlp.c_fc.weight'/);
  await assert.rejects(CheckpointModel.create(mha, mha, misShaped), { name: 'RangeError', message: "loadModel: 'transformer.ln_f.bias' must have shape [32], got [16]" });
});

test('qwen3, gemma3_text and olmo2: what their configs ask for is read, and what the forward lacks is refused by key and value', () => {
  const qwen3 = configOf('qwen3'), gemma3 = configOf('gemma3'), olmo2 = configOf('olmo2');
  const refused = [
    [qwen3, { rope_scaling: { rope_type: 'yarn', factor: 4 } }, /rope_scaling \{"rope_type":"yarn","factor":4\} is not supported/],
    [qwen3, { use_sliding_window: true, sliding_window: 8, max_window_layers: 1 }, /a sliding window on some layers only \(max_window_layers\) is not supported/],
    [qwen3, { num_experts: 8 }, /num_experts 8 asks for mixture-of-experts layers/],
    [gemma3, { rope_scaling: { rope_type: 'linear', factor: 8 } }, /rope_scaling \{"rope_type":"linear","factor":8\}: rope type 'linear' is not supported/],
    [gemma3, { rope_parameters: { full_attention: { rope_type: 'linear', rope_theta: 1e6, factor: 8 }, sliding_attention: { rope_type: 'default', rope_theta: 10000 } } },
      /rope_parameters.full_attention \{"rope_type":"linear","rope_theta":1000000,"factor":8\}: rope type 'linear' is not supported/],
    [gemma3, { layer_types: ['sliding_attention', 'chunked_attention', 'full_attention'] }, /layer_types\[1\] 'chunked_attention' is not supported/],
    [gemma3, { use_bidirectional_attention: true }, /use_bidirectional_attention true is not supported/],
    [olmo2, { attention_bias: true }, /attention_bias true is not supported \(OLMo-2 checkpoints have no attention biases\)/],
    [olmo2, { partial_rotary_factor: 0.5 }, /partial_rotary_factor 0.5 is not supported \(OLMo-2 rotates the whole head\)/],
    [olmo2, { rope_scaling: { rope_type: 'dynamic', factor: 2 } }, /rope type 'dynamic' is not supported/],
  ];
  for (const [config, edit, message] of refused) {
    assert.throws(() => architectureOf({ ...config, ...edit }), message, JSON.stringify(edit));
  }
  const q = architectureOf(qwen3);
  assert.deepEqual([q.family, q.qkNorm, q.headDim, q.rotary], ['qwen3', { over: 'head', eps: 1e-6 }, 16, { dim: 16, base: 1e6 }]);
  assert.equal(architectureOf({ ...qwen3, head_dim: undefined }).headDim, 128);  // (Qwen3Config's default)
  const g = architectureOf(gemma3);
  assert.deepEqual([g.layerWindows, g.layerRotaryBases, g.qkNorm], [[4, null, 4], [10000, 1e6, 10000], { over: 'head', eps: 1e-6 }]);
  assert.deepEqual([g.attnScale, g.attnSoftcap, g.finalSoftcap, g.postNorms], [24 ** -0.5, null, null, true]);
  // The checkpoint's pattern by default (every 6th layer global), layer_types where given, v5's rope_parameters.
  const six = architectureOf({ ...gemma3, num_hidden_layers: 7, sliding_window_pattern: undefined });
  assert.deepEqual(six.layerWindows, [4, 4, 4, 4, 4, null, 4]);
  assert.deepEqual(architectureOf({ ...gemma3, layer_types: ['full_attention', 'full_attention', 'sliding_attention'] }).layerWindows, [null, null, 4]);
  const nested = architectureOf({ ...gemma3, rope_theta: undefined, rope_local_base_freq: undefined,
    rope_parameters: { full_attention: { rope_type: 'default', rope_theta: 2e6 }, sliding_attention: { rope_type: 'default', rope_theta: 5000 } } });
  assert.deepEqual(nested.layerRotaryBases, [5000, 2e6, 5000]);
  const o = architectureOf(olmo2);
  assert.deepEqual([o.qkNorm, o.postNorms, o.preNorms, o.rotary.base], [{ over: 'projection', eps: 1e-6 }, true, false, 500000]);
});
