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
