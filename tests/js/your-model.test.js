// The "Your model" mode's loader and forward (web/your-model/) on wasm: tiny GPT-2, Llama (sharded),
// Qwen2 (bf16) and Mistral (f16, sliding window) checkpoints in Hugging Face's layouts must give
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
    assert.equal(tokenizer.prependBos, name !== 'qwen2');
    assert.deepEqual(tokenizer.toStrTokens(ids), encoded.labels);
    assert.equal(tokenizer.decode(ids).replace(/^<s> ?/, ''), text);
  });
}

test('the model summary the page reports', async () => {
  const model = await CheckpointModel.create(mha, mha, readCheckpoint(checkpointFiles('llama')));
  try {
    assert.deepEqual(model.summary, { family: 'llama', numLayers: 3, numHeads: 4, numKvHeads: 2, dtype: 'f32' });
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
    message: 'config.json: model_type "bert", architectures ["BertForMaskedLM"] is not a supported architecture; supported model_type: gpt2, llama, mistral, qwen2',
  });
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
