// A Llama- or GPT-2-architecture Hugging Face checkpoint (config.json's object and its tensors,
// float32) as the GGUF llama.cpp reads (tools/gguf-writer.mjs writes the bytes), the way convert_hf_to_gguf.py
// maps it: llama.* hyperparameters, blk.N.* tensors, q_proj / k_proj rows permuted (llama.cpp
// rotates adjacent pairs, Hugging Face halves: the same rotation once the rows are reordered), norms
// in F32, every matrix (the embedding included) in `type`; GPT-2's Conv1D weights ([in, out])
// transposed to a Linear's [out, in], its biases F32. The vocabulary is a byte-level one:
// ids 0-127 are GPT-2's symbols of the ASCII bytes (an ASCII text is one token a character, as
// byteLevelIds gives them), the rest placeholders, the last the end-of-text token; no BOS is added.
// For bench/whole-model-peers.mjs, on random weights.
import { writeGguf } from './gguf-writer.mjs';

/** GPT-2's byte -> symbol map (bytes_to_unicode). */
function byteSymbols() {
  const printable = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const symbols = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) symbols[b] = String.fromCodePoint(printable.includes(b) ? b : 256 + extra++);
  return symbols;
}

/**
 * The vocabulary's tokens: the 128 ASCII bytes' symbols, placeholders (also for ids 128-255, so
 * that any generated token is valid UTF-8: random weights pick any), and '<|endoftext|>' last.
 */
export function byteLevelVocab(size) {
  if (size < 257) throw new RangeError(`gguf: a byte-level vocabulary needs at least 257 tokens, got ${size}`);
  const tokens = byteSymbols().slice(0, 128);
  for (let i = 128; i < size - 1; i++) tokens.push(`<|unused${i}|>`);
  tokens.push('<|endoftext|>');
  return tokens;
}

/** A tokenizer.json of the byte-level vocabulary (BPE, no merges), for the Hugging Face folder beside the GGUF (mha-wasm/models and the page read it). */
export function byteLevelTokenizerJson(vocab) {
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [{ id: vocab.length - 1, content: vocab.at(-1), single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab: Object.fromEntries(vocab.map((token, id) => [token, id])), merges: [] },
  };
}

/** An ASCII text's ids in that vocabulary: one a character (no merges; id b is byte b's symbol). */
export function byteLevelIds(text) {
  const bytes = [...new TextEncoder().encode(text)];
  if (bytes.some((b) => b > 127)) throw new RangeError('gguf: the byte-level vocabulary holds the ASCII bytes only');
  return bytes;
}

/** The text of ids in that vocabulary (placeholders as they are named). */
export function byteLevelText(ids, vocab) {
  const symbols = byteSymbols();
  const bytes = [];
  for (const id of ids) {
    if (id < 128) bytes.push(symbols.indexOf(vocab[id]));
    else bytes.push(...new TextEncoder().encode(vocab[id]));
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** q_proj / k_proj rows from rotate_half's order to llama.cpp's pairs (convert_hf_to_gguf.py's permute). */
export function permuteRotaryRows(weight, heads, headDim, cols) {
  const out = new Float32Array(weight.length), half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const to = h * headDim + 2 * i + j, from = h * headDim + j * half + i;
        out.set(weight.subarray(from * cols, (from + 1) * cols), to * cols);
      }
    }
  }
  return out;
}

/** The byte-level tokenizer's keys (tokenizer.ggml.*) for a vocabulary of V tokens. */
function tokenizerMetadata(vocab) {
  const V = vocab.length;
  return [
    ['tokenizer.ggml.model', 'string', 'gpt2'],
    ['tokenizer.ggml.pre', 'string', 'default'],
    ['tokenizer.ggml.tokens', ['array', 'string'], vocab],
    ['tokenizer.ggml.token_type', ['array', 'i32'], vocab.map((_, i) => (i === V - 1 ? 3 : 1))],
    ['tokenizer.ggml.merges', ['array', 'string'], []],
    ['tokenizer.ggml.bos_token_id', 'u32', V - 1],
    ['tokenizer.ggml.eos_token_id', 'u32', V - 1],
    ['tokenizer.ggml.add_bos_token', 'bool', false],
  ];
}

/** A Conv1D weight [rows, cols] (in, out) as [cols, rows]. */
function transposed(data, rows, cols) {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return out;
}

/**
 * GGUF bytes of a GPT-2 checkpoint (its keys under 'transformer.'): gpt2.* keys, token_embd and
 * position_embd, per blk.N. attn_qkv, attn_output, ffn_up, ffn_down (weights transposed from
 * Conv1D's [in, out]) and the LayerNorms, each with its bias.
 */
export function gpt2Gguf(config, tensor, type) {
  const E = config.n_embd, V = config.vocab_size, P = config.n_positions, layers = config.n_layer;
  const vocab = byteLevelVocab(V);
  const key = (k) => `transformer.${k}`;
  const f32 = (name, k) => ({ name, shape: [E], data: tensor(key(k)), type: 'F32' });
  const metadata = [
    ['general.architecture', 'string', 'gpt2'],
    ['general.name', 'string', 'mha-wasm random weights'],
    ['general.file_type', 'u32', { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 }[type]],
    ['gpt2.context_length', 'u32', P],
    ['gpt2.embedding_length', 'u32', E],
    ['gpt2.block_count', 'u32', layers],
    ['gpt2.feed_forward_length', 'u32', 4 * E],
    ['gpt2.attention.head_count', 'u32', config.n_head],
    ['gpt2.attention.layer_norm_epsilon', 'f32', config.layer_norm_epsilon],
    ...tokenizerMetadata(vocab),
  ];
  const tensors = [
    { name: 'token_embd.weight', shape: [V, E], data: tensor(key('wte.weight')), type },
    { name: 'position_embd.weight', shape: [P, E], data: tensor(key('wpe.weight')), type: 'F32' },
    f32('output_norm.weight', 'ln_f.weight'), f32('output_norm.bias', 'ln_f.bias'),
  ];
  for (let l = 0; l < layers; l++) {
    const p = `h.${l}.`, b = `blk.${l}.`;
    const conv = (name, k, rows, cols) => [
      { name: b + name + '.weight', shape: [cols, rows], data: transposed(tensor(key(p + k + '.weight')), rows, cols), type },
      { name: b + name + '.bias', shape: [cols], data: tensor(key(p + k + '.bias')), type: 'F32' },
    ];
    tensors.push(
      f32(b + 'attn_norm.weight', p + 'ln_1.weight'), f32(b + 'attn_norm.bias', p + 'ln_1.bias'),
      ...conv('attn_qkv', 'attn.c_attn', E, 3 * E), ...conv('attn_output', 'attn.c_proj', E, E),
      f32(b + 'ffn_norm.weight', p + 'ln_2.weight'), f32(b + 'ffn_norm.bias', p + 'ln_2.bias'),
      ...conv('ffn_up', 'mlp.c_fc', E, 4 * E), ...conv('ffn_down', 'mlp.c_proj', 4 * E, E),
    );
  }
  return { bytes: writeGguf({ metadata, tensors }), vocab };
}

/**
 * GGUF bytes of a Llama checkpoint. `config`: config.json's object; `tensor(key)`: the float32 data
 * of a Hugging Face key; `type`: 'F32' | 'F16' | 'Q8_0' | 'Q4_0'.
 */
export function llamaGguf(config, tensor, type) {
  const E = config.hidden_size, H = config.num_attention_heads, Hkv = config.num_key_value_heads ?? H;
  const D = config.head_dim ?? E / H, V = config.vocab_size, layers = config.num_hidden_layers;
  if (D !== E / H) throw new RangeError('gguf: llama.cpp takes head_dim = hidden_size / heads only');
  const vocab = byteLevelVocab(V);
  const metadata = [
    ['general.architecture', 'string', 'llama'],
    ['general.name', 'string', 'mha-wasm random weights'],
    ['general.file_type', 'u32', { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 }[type]],
    ['llama.context_length', 'u32', config.max_position_embeddings],
    ['llama.embedding_length', 'u32', E],
    ['llama.block_count', 'u32', layers],
    ['llama.feed_forward_length', 'u32', config.intermediate_size],
    ['llama.attention.head_count', 'u32', H],
    ['llama.attention.head_count_kv', 'u32', Hkv],
    ['llama.rope.freq_base', 'f32', config.rope_theta ?? 10000],
    ['llama.rope.dimension_count', 'u32', D],
    ['llama.attention.layer_norm_rms_epsilon', 'f32', config.rms_norm_eps],
    ['llama.vocab_size', 'u32', V],
    ...tokenizerMetadata(vocab),
  ];
  const matrix = (name, key, shape, data = tensor(key)) => ({ name, shape, data, type });
  const norm = (name, key) => ({ name, shape: [E], data: tensor(key), type: 'F32' });
  const tensors = [matrix('token_embd.weight', 'model.embed_tokens.weight', [V, E]), norm('output_norm.weight', 'model.norm.weight')];
  if (!config.tie_word_embeddings) tensors.push(matrix('output.weight', 'lm_head.weight', [V, E]));
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`, b = `blk.${l}.`;
    tensors.push(
      norm(b + 'attn_norm.weight', p + 'input_layernorm.weight'),
      matrix(b + 'attn_q.weight', null, [H * D, E], permuteRotaryRows(tensor(p + 'self_attn.q_proj.weight'), H, D, E)),
      matrix(b + 'attn_k.weight', null, [Hkv * D, E], permuteRotaryRows(tensor(p + 'self_attn.k_proj.weight'), Hkv, D, E)),
      matrix(b + 'attn_v.weight', p + 'self_attn.v_proj.weight', [Hkv * D, E]),
      matrix(b + 'attn_output.weight', p + 'self_attn.o_proj.weight', [E, H * D]),
      norm(b + 'ffn_norm.weight', p + 'post_attention_layernorm.weight'),
      matrix(b + 'ffn_gate.weight', p + 'mlp.gate_proj.weight', [config.intermediate_size, E]),
      matrix(b + 'ffn_up.weight', p + 'mlp.up_proj.weight', [config.intermediate_size, E]),
      matrix(b + 'ffn_down.weight', p + 'mlp.down_proj.weight', [E, config.intermediate_size]),
    );
  }
  return { bytes: writeGguf({ metadata, tensors }), vocab };
}
