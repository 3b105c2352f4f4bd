// GPT-2 small's shape (12 layers, E 768, 12 heads, vocabulary 50257, 124M parameters) as a
// checkpoint with random weights in Hugging Face's layout: config.json's object and the tensors,
// float32 or float16. bench/your-model.mjs and bench/patching.mjs run on it.
import { floatToHalf } from '../bindings/js/formats/float16.js';

export const E = 768, H = 12, LAYERS = 12, V = 50257, POSITIONS = 1024;

export const CONFIG = {
  architectures: ['GPT2LMHeadModel'], model_type: 'gpt2', activation_function: 'gelu_new', n_embd: E, n_head: H,
  n_layer: LAYERS, n_positions: POSITIONS, n_ctx: POSITIONS, vocab_size: V, layer_norm_epsilon: 1e-5,
};

/** A seeded uniform generator (xorshift32) in [-scale, scale). */
export function filler(seed) {
  let s = seed >>> 0 || 1;
  return (n, scale) => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
      out[i] = ((s >>> 0) / 4294967296 * 2 - 1) * scale;
    }
    return out;
  };
}

/** GPT-2 small's tensors under Hugging Face's keys, random, as F32 or F16. */
export function checkpointTensors(dtype) {
  const random = filler(124);
  const tensors = {};
  const put = (key, shape, scale, offset = 0) => {
    const data = random(shape.reduce((a, b) => a * b, 1), scale);
    if (offset) for (let i = 0; i < data.length; i++) data[i] += offset;
    tensors[key] = dtype === 'f32' ? { dtype: 'F32', shape, data }
      : { dtype: 'F16', shape, data: Uint16Array.from(data, floatToHalf) };
  };
  put('transformer.wte.weight', [V, E], 0.1);
  put('transformer.wpe.weight', [POSITIONS, E], 0.01);
  put('transformer.ln_f.weight', [E], 0.1, 1);
  put('transformer.ln_f.bias', [E], 0.1);
  for (let l = 0; l < LAYERS; l++) {
    const p = `transformer.h.${l}.`;
    for (const n of ['ln_1', 'ln_2']) { put(`${p}${n}.weight`, [E], 0.1, 1); put(`${p}${n}.bias`, [E], 0.1); }
    for (const [n, i, o] of [['attn.c_attn', E, 3 * E], ['attn.c_proj', E, E], ['mlp.c_fc', E, 4 * E], ['mlp.c_proj', 4 * E, E]]) {
      put(`${p}${n}.weight`, [i, o], 1 / Math.sqrt(i));
      put(`${p}${n}.bias`, [o], 0.02);
    }
  }
  return tensors;
}

