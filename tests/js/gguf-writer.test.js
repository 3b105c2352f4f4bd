// tools/gguf-writer.mjs and tools/gguf-from-checkpoint.mjs, the GGUF files bench/whole-model-peers.mjs
// gives llama.cpp's wasm build: read back by a reader written here from GGUF's layout (the header,
// typed metadata, tensor infos with reversed dims and aligned offsets), the Q8_0 and Q4_0 blocks
// decoded by ggml-common.h's formulas against the values quantized, and the rotary row permutation
// (Hugging Face's halves to llama.cpp's pairs) checked as the rotation it must preserve.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { halfToFloat } from '../../bindings/js/formats/float16.js';
import { byteLevelIds, byteLevelText, byteLevelVocab, llamaGguf, permuteRotaryRows } from '../../tools/gguf-from-checkpoint.mjs';
import { quantizeQ4_0, quantizeQ8_0, writeGguf } from '../../tools/gguf-writer.mjs';
import { seededFloats } from './seeded.js';

/** A GGUF file's metadata ({ key: value }) and tensors ({ name: { dims, type, offset } }), and where its data starts. */
function readGguf(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const u32 = () => { const v = view.getUint32(at, true); at += 4; return v; };
  const u64 = () => { const v = Number(view.getBigUint64(at, true)); at += 8; return v; };
  const string = () => { const n = u64(); const s = new TextDecoder().decode(bytes.subarray(at, at + n)); at += n; return s; };
  const readers = { 0: () => bytes[at++], 4: u32, 5: () => { const v = view.getInt32(at, true); at += 4; return v; }, 6: () => { const v = view.getFloat32(at, true); at += 4; return v; }, 7: () => bytes[at++] === 1, 8: string, 10: u64 };
  const value = (type) => {
    if (type !== 9) return readers[type]();
    const itemType = u32(), n = u64();
    return Array.from({ length: n }, () => readers[itemType]());
  };
  assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), 'GGUF');
  at = 4;
  assert.equal(u32(), 3, 'version 3');
  const tensorCount = u64(), kvCount = u64();
  const metadata = {};
  for (let i = 0; i < kvCount; i++) { const key = string(); metadata[key] = value(u32()); }
  const tensors = {};
  for (let i = 0; i < tensorCount; i++) {
    const name = string(), n = u32();
    const dims = Array.from({ length: n }, u64);
    tensors[name] = { dims, type: u32(), offset: u64() };
  }
  const alignment = metadata['general.alignment'];
  return { metadata, tensors, dataStart: Math.ceil(at / alignment) * alignment };
}

test('the header, typed metadata and tensor infos read back; dims reversed, offsets aligned to 32', () => {
  const a = seededFloats(2 * 3, 1, 1), b = seededFloats(64, 2, 1);
  const bytes = writeGguf({
    metadata: [['general.architecture', 'string', 'llama'], ['llama.block_count', 'u32', 2], ['llama.rope.freq_base', 'f32', 500000],
      ['tokenizer.ggml.tokens', ['array', 'string'], ['a', 'bé']], ['tokenizer.ggml.add_bos_token', 'bool', false]],
    tensors: [{ name: 'a', shape: [2, 3], data: a, type: 'F32' }, { name: 'b', shape: [2, 32], data: b, type: 'Q8_0' }],
  });
  const { metadata, tensors, dataStart } = readGguf(bytes);
  assert.deepEqual(metadata, {
    'general.architecture': 'llama', 'llama.block_count': 2, 'llama.rope.freq_base': 500000,
    'tokenizer.ggml.tokens': ['a', 'bé'], 'tokenizer.ggml.add_bos_token': false,
    'general.alignment': 32, 'general.quantization_version': 2,
  });
  assert.deepEqual(tensors.a, { dims: [3, 2], type: 0, offset: 0 });
  assert.deepEqual(tensors.b, { dims: [32, 2], type: 8, offset: 32 }, '24 bytes of a, padded to 32');
  assert.equal(dataStart % 32, 0);
  assert.deepEqual([...new Float32Array(bytes.slice(dataStart, dataStart + 24).buffer)], [...a]);
  assert.equal(bytes.length, dataStart + 32 + 2 * 34 + 28, 'b is two 34-byte blocks, padded');
  assert.throws(() => writeGguf({ metadata: [], tensors: [{ name: 'c', shape: [2, 5], data: new Float32Array(10), type: 'Q4_0' }] }),
    { name: 'RangeError', message: 'gguf: Q4_0 needs rows of a multiple of 32 values, got 5' });
  assert.throws(() => writeGguf({ metadata: [['x', 'float', 1]], tensors: [] }), { name: 'TypeError', message: "gguf: unknown metadata type 'float'" });
});

test('Q8_0 and Q4_0 blocks decode to the values within half a step, by ggml-common.h\'s formulas', () => {
  const row = seededFloats(64, 3, 2);
  row[5] = -3;  // (the largest magnitude, negative: Q4_0's d is then positive 3/8)
  const q8 = quantizeQ8_0(row), q4 = quantizeQ4_0(row);
  assert.equal(q8.length, 2 * 34);
  assert.equal(q4.length, 2 * 18);
  for (let b = 0; b < 2; b++) {
    const values = row.subarray(b * 32, (b + 1) * 32);
    const amax = Math.max(...values.map(Math.abs));
    const d8 = halfToFloat(q8[b * 34] | (q8[b * 34 + 1] << 8));
    assert.ok(Math.abs(d8 - amax / 127) <= amax / 127 * 1e-3, 'Q8_0: d = amax / 127 (as f16)');
    const d4 = halfToFloat(q4[b * 18] | (q4[b * 18 + 1] << 8));
    const max = values[values.map(Math.abs).indexOf(amax)];
    assert.ok(Math.abs(d4 - max / -8) <= amax / 8 * 1e-3, 'Q4_0: d = max / -8 (as f16)');
    for (let j = 0; j < 32; j++) {
      const q = (q8[b * 34 + 2 + j] << 24) >> 24;
      assert.ok(Math.abs(d8 * q - values[j]) <= d8 * 0.5 + 1e-3 * amax, `Q8_0 [${b}, ${j}]`);
      const byte = q4[b * 18 + 2 + (j % 16)], nibble = j < 16 ? byte & 15 : byte >> 4;
      assert.ok(Math.abs(d4 * (nibble - 8) - values[j]) <= Math.abs(d4) * 0.5 + 1e-3 * amax, `Q4_0 [${b}, ${j}]`);
    }
  }
  assert.equal(halfToFloat(q4[0] | (q4[1] << 8)) > 0, true, 'a negative extreme gives a positive Q4_0 d');
});

test('the rotary permutation turns rotate_half\'s rotation of a head into llama.cpp\'s pairs', () => {
  const heads = 2, D = 8, cols = 3, half = D / 2;
  const weight = seededFloats(heads * D * cols, 4, 1), x = seededFloats(cols, 5, 1);
  const permuted = permuteRotaryRows(weight, heads, D, cols);
  const project = (w) => Array.from({ length: heads * D }, (_, r) => x.reduce((s, v, c) => s + v * w[r * cols + c], 0));
  const hf = project(weight), gguf = project(permuted);
  const angle = (t) => 5 * 10000 ** (-2 * t / D);  // position 5
  for (let h = 0; h < heads; h++) {
    for (let t = 0; t < half; t++) {
      const [a, b] = [hf[h * D + t], hf[h * D + t + half]];          // halves (rotate_half)
      const [c, d] = [gguf[h * D + 2 * t], gguf[h * D + 2 * t + 1]];  // pairs (llama.cpp's NORM rope)
      assert.ok(Math.abs(a - c) < 1e-6 && Math.abs(b - d) < 1e-6, 'the same two features, reordered');
      const rotated = [a * Math.cos(angle(t)) - b * Math.sin(angle(t)), b * Math.cos(angle(t)) + a * Math.sin(angle(t))];
      const paired = [c * Math.cos(angle(t)) - d * Math.sin(angle(t)), d * Math.cos(angle(t)) + c * Math.sin(angle(t))];
      assert.deepEqual(paired, rotated);
    }
  }
});

test('a Llama checkpoint\'s GGUF: llama.* keys, blk.N tensors, the byte-level vocabulary round trip', () => {
  const config = { hidden_size: 64, num_attention_heads: 4, num_key_value_heads: 2, num_hidden_layers: 1, intermediate_size: 96, vocab_size: 300, max_position_embeddings: 128, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true };
  const sizes = { 'model.embed_tokens.weight': 300 * 64, 'model.norm.weight': 64, 'model.layers.0.input_layernorm.weight': 64, 'model.layers.0.post_attention_layernorm.weight': 64,
    'model.layers.0.self_attn.q_proj.weight': 64 * 64, 'model.layers.0.self_attn.k_proj.weight': 32 * 64, 'model.layers.0.self_attn.v_proj.weight': 32 * 64,
    'model.layers.0.self_attn.o_proj.weight': 64 * 64, 'model.layers.0.mlp.gate_proj.weight': 96 * 64, 'model.layers.0.mlp.up_proj.weight': 96 * 64, 'model.layers.0.mlp.down_proj.weight': 64 * 96 };
  const tensors = Object.fromEntries(Object.entries(sizes).map(([k, n], i) => [k, seededFloats(n, 10 + i, 0.5)]));
  const { bytes, vocab } = llamaGguf(config, (key) => tensors[key], 'Q4_0');
  const { metadata, tensors: infos } = readGguf(bytes);
  assert.equal(metadata['general.architecture'], 'llama');
  assert.deepEqual([metadata['llama.embedding_length'], metadata['llama.attention.head_count'], metadata['llama.attention.head_count_kv'], metadata['llama.feed_forward_length']], [64, 4, 2, 96]);
  assert.equal(metadata['tokenizer.ggml.tokens'].length, 300);
  assert.deepEqual(Object.keys(infos), ['token_embd.weight', 'output_norm.weight', 'blk.0.attn_norm.weight', 'blk.0.attn_q.weight', 'blk.0.attn_k.weight',
    'blk.0.attn_v.weight', 'blk.0.attn_output.weight', 'blk.0.ffn_norm.weight', 'blk.0.ffn_gate.weight', 'blk.0.ffn_up.weight', 'blk.0.ffn_down.weight']);
  assert.deepEqual(infos['blk.0.attn_k.weight'], { ...infos['blk.0.attn_k.weight'], dims: [64, 32], type: 2 });
  assert.equal(infos['output_norm.weight'].type, 0, 'norms stay F32');
  assert.deepEqual(byteLevelVocab(300), vocab);
  const ids = byteLevelIds('the cat, sat.');
  assert.equal(byteLevelText(ids, vocab), 'the cat, sat.');
  assert.equal(byteLevelText([200], vocab), '<|unused200|>');
  assert.throws(() => byteLevelIds('café'), { name: 'RangeError', message: 'gguf: the byte-level vocabulary holds the ASCII bytes only' });
});
