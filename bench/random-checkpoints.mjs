// Checkpoints of real models' shapes with random weights, in Hugging Face's layout (config.json's
// object and the safetensors tensors), for bench/whole-model.mjs: GPT-2 small (F32, from
// gpt2-small-checkpoint.mjs), and Qwen2.5-0.5B, Llama-3.2-1B and Llama-3.2-3B (BF16, tied
// embeddings, as the Hub's files are). The values are uniform, scaled like trained ones (1/√in for
// a matrix, 1 ± 0.1 for a norm); only their bytes' count matters to a timing.
import { writeSafetensors } from '../bindings/js/formats/safetensors.js';
import { CONFIG as GPT2_CONFIG, checkpointTensors } from './gpt2-small-checkpoint.mjs';

/** The Llama-architecture shapes: Hugging Face config.json's values. */
const LLAMA_SHAPES = {
  'qwen2.5-0.5b': { model_type: 'qwen2', architectures: ['Qwen2ForCausalLM'], hidden_size: 896, intermediate_size: 4864, num_attention_heads: 14, num_key_value_heads: 2, num_hidden_layers: 24, vocab_size: 151936, rope_theta: 1000000 },
  'llama-3.2-1b': { model_type: 'llama', architectures: ['LlamaForCausalLM'], hidden_size: 2048, intermediate_size: 8192, num_attention_heads: 32, num_key_value_heads: 8, num_hidden_layers: 16, vocab_size: 128256, rope_theta: 500000 },
  'llama-3.2-3b': { model_type: 'llama', architectures: ['LlamaForCausalLM'], hidden_size: 3072, intermediate_size: 8192, num_attention_heads: 24, num_key_value_heads: 8, num_hidden_layers: 28, vocab_size: 128256, rope_theta: 500000 },
};

export const SHAPES = ['gpt2-small', ...Object.keys(LLAMA_SHAPES)];

/** Uniform bfloat16 bits in [-scale, scale) + offset (xorshift32, truncated to bf16). */
function bf16Filler(seed) {
  let s = seed >>> 0 || 1;
  const word = new Float32Array(1), bits = new Uint32Array(word.buffer);
  return (n, scale, offset = 0) => {
    const out = new Uint16Array(n);
    for (let i = 0; i < n; i++) {
      s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
      word[0] = ((s >>> 0) / 4294967296 * 2 - 1) * scale + offset;
      out[i] = bits[0] >>> 16;
    }
    return out;
  };
}

/** A Llama-architecture model's tensors under Hugging Face's keys, BF16, tied: put(key, shape, scale, offset) for each, in file order. */
export function llamaLayout(c, put) {
  const E = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = E / H;
  put('model.embed_tokens.weight', [c.vocab_size, E], 0.05);
  put('model.norm.weight', [E], 0.1, 1);
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`;
    put(p + 'input_layernorm.weight', [E], 0.1, 1);
    put(p + 'post_attention_layernorm.weight', [E], 0.1, 1);
    for (const [n, rows] of [['q_proj', H * D], ['k_proj', K * D], ['v_proj', K * D]]) {
      put(`${p}self_attn.${n}.weight`, [rows, E], 1 / Math.sqrt(E));
      if (c.model_type === 'qwen2') put(`${p}self_attn.${n}.bias`, [rows], 0.02);
    }
    put(p + 'self_attn.o_proj.weight', [E, H * D], 1 / Math.sqrt(H * D));
    put(p + 'mlp.gate_proj.weight', [I, E], 1 / Math.sqrt(E));
    put(p + 'mlp.up_proj.weight', [I, E], 1 / Math.sqrt(E));
    put(p + 'mlp.down_proj.weight', [E, I], 1 / Math.sqrt(I));
  }
}

/** The tensors themselves, in memory. */
function llamaTensors(c) {
  const random = bf16Filler(7);
  const tensors = {};
  llamaLayout(c, (key, shape, scale, offset = 0) => {
    tensors[key] = { dtype: 'BF16', shape, data: random(shape.reduce((a, b) => a * b, 1), scale, offset) };
  });
  return tensors;
}

const llamaConfig = (shape) => ({ ...LLAMA_SHAPES[shape], max_position_embeddings: 4096, rms_norm_eps: 1e-6, tie_word_embeddings: true, torch_dtype: 'bfloat16' });

/**
 * A Llama-architecture shape written into folder `dir` (config.json, model.safetensors) a tensor
 * at a time, so a checkpoint larger than the memory at hand can be made: the header first (from
 * the shapes), then each tensor generated and appended. Returns the config.
 */
export async function writeRandomCheckpoint(shape, dir) {
  const { open, writeFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  if (!LLAMA_SHAPES[shape]) throw new TypeError(`writeRandomCheckpoint: shape must be one of ${Object.keys(LLAMA_SHAPES).join(', ')}, got ${shape}`);
  const config = llamaConfig(shape);
  const header = {}, order = [];
  let offset = 0;
  llamaLayout(config, (key, shape_, scale, shift = 0) => {
    const bytes = 2 * shape_.reduce((a, b) => a * b, 1);
    header[key] = { dtype: 'BF16', shape: shape_, data_offsets: [offset, offset + bytes] };
    order.push([key, shape_, scale, shift]);
    offset += bytes;
  });
  const json = JSON.stringify(header);
  const padded = new TextEncoder().encode(json.padEnd(Math.ceil(json.length / 8) * 8));
  const length = new Uint8Array(8);
  new DataView(length.buffer).setBigUint64(0, BigInt(padded.length), true);
  const file = await open(join(dir, 'model.safetensors'), 'w');
  try {
    await file.write(length);
    await file.write(padded);
    const random = bf16Filler(7);
    for (const [, shape_, scale, shift] of order) {
      const data = random(shape_.reduce((a, b) => a * b, 1), scale, shift);
      await file.write(new Uint8Array(data.buffer));
    }
  } finally {
    await file.close();
  }
  await writeFile(join(dir, 'config.json'), JSON.stringify(config));
  return config;
}

/** { config, files: [config.json, model.safetensors] as { name, bytes } } of a shape in SHAPES. */
export function randomCheckpoint(shape) {
  let config, tensors;
  if (shape === 'gpt2-small') {
    config = GPT2_CONFIG;
    tensors = checkpointTensors('f32');
  } else {
    if (!LLAMA_SHAPES[shape]) throw new TypeError(`randomCheckpoint: shape must be one of ${SHAPES.join(', ')}, got ${shape}`);
    config = llamaConfig(shape);
    tensors = llamaTensors(config);
  }
  const bytes = writeSafetensors(tensors);
  return { config, files: [{ name: 'config.json', bytes: new TextEncoder().encode(JSON.stringify(config)) }, { name: 'model.safetensors', bytes }] };
}
