// Qwen3 (model_type qwen3): Llama's names and block (llama.js reads its config and weights), with
// q and k RMS-normed per head (self_attn.q_norm / k_norm [head_dim], weight times the normalized
// values, no + 1) between the projection and rotary: the attention layer's qkNorm 'head'.
// head_dim defaults to 128 (Qwen3Config's), the window is off unless use_sliding_window, q/k/v/o
// have biases only with attention_bias.
import { llama } from './llama.js';

export const qwen3 = {
  ...llama,
  name: 'qwen3',
  modelTypes: ['qwen3'],
  architecture: (config) => ({ ...llama.architecture(config), family: 'qwen3' }),
};
