// mha-wasm/models on encoders: the tiny BERT of tools/make_tiny_checkpoints.py (BertForMaskedLM's
// keys, LayerNorms named gamma / beta as bert-base-uncased's, a WordPiece tokenizer.json) against
// its float64 torch reference: the masked-LM logits and every hook point under TransformerLens'
// HookedEncoder names, a padded batch row through attentionMask (and token types), the file
// without its head, weight / bias names, RoBERTa's own tiny checkpoint (byte-level BPE, positions
// from padding_idx + 1, padding) and its layout from BERT's weights, the WordPiece round trip,
// and what is refused by name. Logits to 1e-4 relative (as the decoders' tests), hook points to 1e-5.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { init, readSafetensors, writeSafetensors } from '../../bindings/js/index.js';
import { readCheckpoint } from '../../bindings/js/models/checkpoint.js';
import { activationPatching, directLogitAttribution, loadModel } from '../../bindings/js/models/index.js';
import { assertCloseMasked } from './models-reference.js';
import { assertClose, checkpointFiles } from './your-model-fixtures.js';

const mha = await init({ threads: 1 });
const dirOf = (name) => new URL(`../fixtures/your-model/${name}/`, import.meta.url);
const dir = dirOf('bert');
/** A fixture's torch reference: hooks.json and hooks.safetensors' tensors. */
const referenceOf = (name) => ({
  ...JSON.parse(readFileSync(new URL('hooks.json', dirOf(name)), 'utf8')),
  tensors: readSafetensors(readFileSync(new URL('hooks.safetensors', dirOf(name)))).tensors,
});
const ref = referenceOf('bert');

/** The bert fixture's files with its weights and config.json changed by `edit(tensors, config)`. */
function editedFiles(edit) {
  return checkpointFiles('bert').map((file) => {
    if (file.name === 'model.safetensors') {
      const { tensors } = readSafetensors(file.bytes);
      const config = JSON.parse(readFileSync(new URL('config.json', dir), 'utf8'));
      return { name: file.name, bytes: writeSafetensors(edit(tensors, config).tensors) };
    }
    if (file.name === 'config.json') {
      const { tensors } = readSafetensors(readFileSync(new URL('model.safetensors', dir)));
      const config = JSON.parse(new TextDecoder().decode(file.bytes));
      return { name: file.name, bytes: new TextEncoder().encode(JSON.stringify(edit(tensors, config).config)) };
    }
    return file;
  });
}

const withConfig = (changes) => editedFiles((tensors, config) => ({ tensors, config: { ...config, ...changes } }));

async function withModel(files, fn) {
  const model = await loadModel(mha, files);
  try {
    return await fn(model);
  } finally {
    model.dispose();
  }
}

// The tiny BERT (WordPiece, gamma / beta names, token types) and RoBERTa (byte-level BPE, <mask>,
// positions from padding_idx + 1, lm_head, one token type), each against its own torch forward.
for (const name of ['bert', 'roberta']) {
  const ref = referenceOf(name);
  test(`${name}: the masked-LM logits and every hook point match the torch reference (HookedEncoder names)`, () => withModel(checkpointFiles(name), async (model) => {
    assert.deepEqual(model.hookNames, ref.hookNames);
    assert.equal(model.config.encoder, true);
    assert.equal(model.config.mlmHead, true);
    assert.equal(model.config.family, name);
    assert.deepEqual(model.tokenizer.encodeWithTemplate(ref.text).ids, ref.ids);
    const { logits, cache } = await model.runWithCache(ref.ids);
    assert.deepEqual(logits.shape, [1, ref.ids.length, model.config.vocabSize]);
    assertClose(logits.data, ref.tensors.logits.data, 1e-4, 'logits');
    for (const hook of ref.hookNames) {
      assert.deepEqual(cache.get(hook).shape, ref.tensors[hook].shape, `${hook}: shape`);
      assertCloseMasked(cache.get(hook).data, ref.tensors[hook].data, 1e-5, hook);
    }
    // fill-mask: the mask position's top token is torch's
    const V = model.config.vocabSize, row = logits.data.subarray(ref.maskPosition * V, (ref.maskPosition + 1) * V);
    assert.equal(ref.ids[ref.maskPosition], model.tokenizer.maskTokenId);
    assert.equal(row.indexOf(Math.max(...row)), ref.fill);
    assertClose((await model.forward(ref.ids)).logits.data, ref.tensors.logits.data, 1e-4, 'forward logits');
  }));

  test(`${name}: a padded row through attentionMask (keys at 0 unseen) and tokenTypeIds, every hook point`, () => withModel(checkpointFiles(name), async (model) => {
    const { ids, attentionMask, tokenTypeIds } = ref.padded;
    const { logits, cache } = await model.runWithCache(ids, { attentionMask, tokenTypeIds });
    assertClose(logits.data, ref.tensors['padded.logits'].data, 1e-4, 'padded logits');
    for (const hook of ref.hookNames) assertCloseMasked(cache.get(hook).data, ref.tensors[`padded.${hook}`].data, 1e-5, `padded ${hook}`);
    const scores = cache.get('blocks.0.attn.hook_attn_scores').data, S = ids.length;
    for (let j = 0; j < S; j++) assert.equal(scores[j] === -Infinity, attentionMask[j] === 0, `key ${j}`);
    // An all-ones mask is the unpadded run.
    const unpadded = await model.forward(ref.ids, { attentionMask: ref.ids.map(() => 1) });
    assertClose(unpadded.logits.data, ref.tensors.logits.data, 1e-4, 'all-ones mask');
  }));
}

test('bert: runWithHooks replaces an activation (hook_attn_out zeroed: resid_mid is resid_pre, the logits move)', () => withModel(checkpointFiles('bert'), async (model) => {
  const name = 'blocks.1.hook_attn_out';
  const zeroed = await model.runWithHooks(ref.ids, { hooks: { [name]: (a) => ({ data: new Float32Array(a.data.length), shape: a.shape }) }, names: ['blocks.1.hook_resid_mid'] });
  assertClose(zeroed.cache.get('blocks.1.hook_resid_mid').data, ref.tensors['blocks.1.hook_resid_pre'].data, 1e-6, 'resid_mid = resid_pre');
  assert.ok(zeroed.logits.data.some((v, i) => Math.abs(v - ref.tensors.logits.data[i]) > 1e-3));
}));

test('bert: weight / bias LayerNorm names load as gamma / beta do; without cls.* the forward gives the last hidden state', async () => {
  const renamed = editedFiles((tensors, config) => ({
    config,
    tensors: Object.fromEntries(Object.entries(tensors).map(([k, v]) => [k.replace(/\.gamma$/, '.weight').replace(/\.beta$/, '.bias'), v])),
  }));
  await withModel(renamed, async (model) => {
    assertClose((await model.forward(ref.ids)).logits.data, ref.tensors.logits.data, 1e-4, 'weight/bias logits');
  });
  const bare = editedFiles((tensors, config) => ({
    config: { ...config, architectures: ['BertModel'] },
    tensors: Object.fromEntries(Object.entries(tensors).filter(([k]) => !k.startsWith('cls.'))),
  }));
  await withModel(bare, async (model) => {
    assert.equal(model.config.mlmHead, false);
    assert.ok(!model.hookNames.includes('mlm_head.ln.hook_scale'));
    const out = await model.forward(ref.ids);
    assert.equal(out.logits, null);
    const last = `blocks.${model.config.numLayers - 1}.hook_normalized_resid_post`;
    assert.deepEqual(out.lastHiddenState.shape, [1, ref.ids.length, model.config.embedDim]);
    assertClose(out.lastHiddenState.data, ref.tensors[last].data, 1e-5, 'last hidden state');
  });
});

test("roberta: BERT's layers under roberta. with lm_head, positions from padding_idx + 1", async () => {
  const files = editedFiles((tensors, config) => {
    const out = {};
    for (const [key, t] of Object.entries(tensors)) {
      if (key.startsWith('cls.seq_relationship') || key.startsWith('bert.pooler')) continue;
      const name = key.replace(/^bert\./, 'roberta.').replace('cls.predictions.transform.dense', 'lm_head.dense')
        .replace('cls.predictions.transform.LayerNorm.gamma', 'lm_head.layer_norm.weight')
        .replace('cls.predictions.transform.LayerNorm.beta', 'lm_head.layer_norm.bias').replace('cls.predictions.bias', 'lm_head.bias');
      out[name] = t;
    }
    // padding_idx 0: the sequence's positions are rows 1.. (BERT's row i moved to i + 1)
    const pos = out['roberta.embeddings.position_embeddings.weight'];
    const [P, E] = pos.shape;
    const data = new Float32Array((P + 1) * E);
    data.set(pos.data, E);
    out['roberta.embeddings.position_embeddings.weight'] = { dtype: 'F32', shape: [P + 1, E], data };
    return { tensors: out, config: { ...config, model_type: 'roberta', architectures: ['RobertaForMaskedLM'], max_position_embeddings: P + 1 } };
  });
  await withModel(files, async (model) => {
    assert.equal(model.config.family, 'roberta');
    assert.equal(model.config.maxPositions, 64);
    assertClose((await model.forward(ref.ids)).logits.data, ref.tensors.logits.data, 1e-4, 'roberta logits');
  });
});

test("distilbert: BERT's layers under DistilBERT's names and config keys, no token types", async () => {
  const rename = [
    [/^bert\.embeddings\.LayerNorm\.gamma$/, 'distilbert.embeddings.LayerNorm.weight'],
    [/^bert\.embeddings\.LayerNorm\.beta$/, 'distilbert.embeddings.LayerNorm.bias'],
    [/^bert\.embeddings\.(word|position)_embeddings\.weight$/, 'distilbert.embeddings.$1_embeddings.weight'],
    [/^bert\.encoder\.layer\.(\d+)\.attention\.self\.query\./, 'distilbert.transformer.layer.$1.attention.q_lin.'],
    [/^bert\.encoder\.layer\.(\d+)\.attention\.self\.key\./, 'distilbert.transformer.layer.$1.attention.k_lin.'],
    [/^bert\.encoder\.layer\.(\d+)\.attention\.self\.value\./, 'distilbert.transformer.layer.$1.attention.v_lin.'],
    [/^bert\.encoder\.layer\.(\d+)\.attention\.output\.dense\./, 'distilbert.transformer.layer.$1.attention.out_lin.'],
    [/^bert\.encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.gamma$/, 'distilbert.transformer.layer.$1.sa_layer_norm.weight'],
    [/^bert\.encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.beta$/, 'distilbert.transformer.layer.$1.sa_layer_norm.bias'],
    [/^bert\.encoder\.layer\.(\d+)\.intermediate\.dense\./, 'distilbert.transformer.layer.$1.ffn.lin1.'],
    [/^bert\.encoder\.layer\.(\d+)\.output\.dense\./, 'distilbert.transformer.layer.$1.ffn.lin2.'],
    [/^bert\.encoder\.layer\.(\d+)\.output\.LayerNorm\.gamma$/, 'distilbert.transformer.layer.$1.output_layer_norm.weight'],
    [/^bert\.encoder\.layer\.(\d+)\.output\.LayerNorm\.beta$/, 'distilbert.transformer.layer.$1.output_layer_norm.bias'],
    [/^cls\.predictions\.transform\.dense\./, 'vocab_transform.'],
    [/^cls\.predictions\.transform\.LayerNorm\.gamma$/, 'vocab_layer_norm.weight'],
    [/^cls\.predictions\.transform\.LayerNorm\.beta$/, 'vocab_layer_norm.bias'],
    [/^cls\.predictions\.bias$/, 'vocab_projector.bias'],
  ];
  const files = editedFiles((tensors, config) => {
    const out = {};
    for (const [key, t] of Object.entries(tensors)) {
      const rule = rename.find(([from]) => from.test(key));
      if (rule) out[key.replace(rule[0], rule[1])] = t;
    }
    // No token types: BERT's type-0 row (what an input without tokenTypeIds adds) goes into the positions.
    const pos = out['distilbert.embeddings.position_embeddings.weight'];
    const type0 = tensors['bert.embeddings.token_type_embeddings.weight'].data;
    const E = pos.shape[1];
    const data = Float32Array.from(pos.data, (v, i) => v + type0[i % E]);
    out['distilbert.embeddings.position_embeddings.weight'] = { dtype: 'F32', shape: pos.shape, data };
    const { hidden_size: dim, num_attention_heads: n_heads, num_hidden_layers: n_layers, intermediate_size: hidden_dim } = config;
    return {
      tensors: out,
      config: {
        model_type: 'distilbert', architectures: ['DistilBertForMaskedLM'], vocab_size: config.vocab_size, dim, n_heads, n_layers,
        hidden_dim, max_position_embeddings: config.max_position_embeddings, activation: 'gelu', pad_token_id: config.pad_token_id,
        sinusoidal_pos_embds: false,
      },
    };
  });
  await withModel(files, async (model) => {
    assert.equal(model.config.family, 'distilbert');
    assert.equal(model.config.typeVocabSize, 0);
    assertClose((await model.forward(ref.ids)).logits.data, ref.tensors.logits.data, 1e-4, 'distilbert logits');
    await assert.rejects(model.forward(ref.ids, { tokenTypeIds: ref.ids.map(() => 1) }), /tokenTypeIds/);
  });
  const sinusoidal = editedFiles((tensors, config) => ({ tensors, config: { ...config, model_type: 'distilbert', dim: 32, n_heads: 4, n_layers: 2, hidden_dim: 64, sinusoidal_pos_embds: true } }));
  await assert.rejects(loadModel(mha, sinusoidal), /sinusoidal_pos_embds/);
});

test('bert: the WordPiece tokenizer encodes [CLS] … [SEP] and decodes back', () => withModel(checkpointFiles('bert'), async (model) => {
  const t = model.tokenizer;
  assert.deepEqual(t.encode(ref.text), ref.ids);
  const ids = t.encode('The cats sat on the mat.');
  assert.deepEqual(t.toStrTokens(ids), ['[CLS]', 'the', 'cat', '##s', 'sat', 'on', 'the', 'mat', '.', '[SEP]']);
  assert.equal(t.decode(ids, { skipSpecial: true }), 'the cats sat on the mat.');
  assert.deepEqual(t.encode('the cats', { addSpecialTokens: false }), ids.slice(1, 4));
  assert.throws(() => t.encode('the', { prependBos: true }), /unknown/);
}));

test('encoders: what is not implemented is refused by name, with the value found', async () => {
  for (const [changes, message] of [
    [{ position_embedding_type: 'relative_key' }, /position_embedding_type "relative_key" is not supported/],
    [{ hidden_act: 'gelu_new' }, /hidden_act "gelu_new" is not supported/],
    [{ is_decoder: true }, /is_decoder true is not supported/],
    [{ add_cross_attention: true }, /add_cross_attention true is not supported/],
    [{ num_experts: 4 }, /num_experts 4 asks for mixture-of-experts/],
  ]) {
    await assert.rejects(loadModel(mha, withConfig(changes)), { name: 'TypeError', message });
  }
  // The page's readCheckpoint (its views run decoders) still refuses an encoder.
  assert.throws(() => readCheckpoint(checkpointFiles('bert')), /model_type "bert", architectures \["BertForMaskedLM"\] is not a supported architecture; supported model_type: gpt2, llama, mistral, qwen2, qwen3, gpt_neox, gemma, gemma2, gemma3_text, phi3, olmo2$/);
  await withModel(checkpointFiles('bert'), async (model) => {
    const L = ref.ids.length;
    await assert.rejects(model.generate(ref.ids), /generate: not supported on an encoder \(bert\)/);
    await assert.rejects(activationPatching(model, { clean: ref.ids, corrupted: ref.ids, answer: 1, wrong: 2, over: 'resid_pre' }), /activationPatching: not supported on an encoder/);
    const { cache } = await model.runWithCache(ref.ids);
    assert.throws(() => directLogitAttribution(model, cache, { answer: 1, wrong: 2 }), /directLogitAttribution: not supported on an encoder/);
    await assert.rejects(model.forward(ref.ids, { attentionMask: Array(L).fill(0) }), /attentionMask is 0 everywhere/);
    await assert.rejects(model.forward(ref.ids, { attentionMask: [1, 2] }), /attentionMask must hold one number per token/);
    await assert.rejects(model.forward(ref.ids, { tokenTypeIds: Array(L).fill(2) }), /tokenTypeIds\[0\] = 2: must be a token type in \[0, 2\)/);
    await assert.rejects(model.forward(ref.ids, { causal: true }), /unknown/);
    await assert.rejects(model.runWithCache(ref.ids, { names: ['ln_final.hook_scale'] }), /unknown hook point "ln_final.hook_scale"/);
  });
  const gpt2 = await loadModel(mha, checkpointFiles('gpt2'));
  try {
    await assert.rejects(gpt2.forward([1, 2], { attentionMask: [1, 1] }), /forward: attentionMask is for encoders/);
  } finally {
    gpt2.dispose();
  }
});
