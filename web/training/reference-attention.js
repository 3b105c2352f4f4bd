// nn.MultiheadAttention (self-attention, batch_first, causal or not) with its backward pass in plain
// JavaScript, behind the same calls as mha-wasm's MultiHeadAttention: forward(x, null, null,
// { causal, grad, needWeights, averageWeights: false }) -> { output, weights, backward(dOut) }.
// The trainer uses it only where the loaded mha-wasm has no backward; the tests use it as an
// independent second implementation. ~10x slower than mha-wasm.
import { matmul, matmulTransposedA, matmulTransposedB } from './matmul.js';

const KEYS = ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'];

export class ReferenceAttention {
  #params = null;

  constructor({ embedDim, numHeads }) {
    if (embedDim % numHeads !== 0) throw new RangeError(`ReferenceAttention: embedDim ${embedDim} is not a multiple of numHeads ${numHeads}`);
    this.embedDim = embedDim;
    this.numHeads = numHeads;
  }

  stateDictShapes() {
    const E = this.embedDim;
    return { in_proj_weight: [3 * E, E], in_proj_bias: [3 * E], 'out_proj.weight': [E, E], 'out_proj.bias': [E] };
  }

  loadStateDict(stateDict) {
    const shapes = this.stateDictShapes();
    for (const key of KEYS) {
      const length = shapes[key].reduce((n, d) => n * d, 1);
      if (!(stateDict[key] instanceof Float32Array) || stateDict[key].length !== length) {
        throw new RangeError(`loadStateDict: stateDict['${key}'] must be a Float32Array of ${length} floats`);
      }
    }
    this.#params = Object.fromEntries(KEYS.map((key) => [key, stateDict[key].slice()]));
  }

  stateDict() {
    return Object.fromEntries(KEYS.map((key) => [key, this.#params[key].slice()]));
  }

  forward(query, key = null, value = null, { causal = false, grad = false, needWeights = false } = {}) {
    if (key !== null || value !== null) throw new TypeError('forward: ReferenceAttention does self-attention only (key, value null)');
    const E = this.embedDim;
    const H = this.numHeads;
    const D = E / H;
    const [B, L] = query.shape.length === 3 ? query.shape : [1, query.shape[0]];
    const N = B * L;
    const x = query.data;
    const p = this.#params;
    const scale = 1 / Math.sqrt(D);
    // qkv [N, 3E] = x W_in^T + b_in
    const qkv = matmulTransposedB(x, p.in_proj_weight, new Float32Array(N * 3 * E), N, 3 * E, E);
    for (let n = 0; n < N; n++) for (let j = 0; j < 3 * E; j++) qkv[n * 3 * E + j] += p.in_proj_bias[j];
    const probs = new Float32Array(B * H * L * L);  // [B, H, L, L]
    const heads = new Float32Array(N * E);          // the heads' outputs, concatenated [N, E]
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < H; h++) {
        const base = (b * H + h) * L * L;
        for (let i = 0; i < L; i++) {
          const q = (b * L + i) * 3 * E + h * D;
          const last = causal ? i : L - 1;
          let max = -Infinity;
          for (let j = 0; j <= last; j++) {
            const k = (b * L + j) * 3 * E + E + h * D;
            let s = 0;
            for (let d = 0; d < D; d++) s += qkv[q + d] * qkv[k + d];
            probs[base + i * L + j] = s * scale;
            max = Math.max(max, s * scale);
          }
          let sum = 0;
          for (let j = 0; j <= last; j++) sum += (probs[base + i * L + j] = Math.exp(probs[base + i * L + j] - max));
          for (let j = 0; j <= last; j++) probs[base + i * L + j] /= sum;
          const o = (b * L + i) * E + h * D;
          for (let j = 0; j <= last; j++) {
            const w = probs[base + i * L + j];
            const v = (b * L + j) * 3 * E + 2 * E + h * D;
            for (let d = 0; d < D; d++) heads[o + d] += w * qkv[v + d];
          }
        }
      }
    }
    const output = matmulTransposedB(heads, p['out_proj.weight'], new Float32Array(N * E), N, E, E);
    for (let n = 0; n < N; n++) for (let j = 0; j < E; j++) output[n * E + j] += p['out_proj.bias'][j];
    const result = {
      output: { data: output, shape: query.shape.slice() },
      weights: needWeights ? { data: probs, shape: [B, H, L, L] } : null,
      release() {},
    };
    if (grad) result.backward = (dOut) => this.#backward({ x, qkv, probs, heads, dOut: dOut.data, B, L, causal, shape: query.shape });
    return result;
  }

  #backward({ x, qkv, probs, heads, dOut, B, L, causal, shape }) {
    const E = this.embedDim;
    const H = this.numHeads;
    const D = E / H;
    const N = B * L;
    const p = this.#params;
    const scale = 1 / Math.sqrt(D);
    const params = {
      'out_proj.weight': matmulTransposedA(dOut, heads, new Float32Array(E * E), E, E, N),
      'out_proj.bias': new Float32Array(E),
    };
    for (let n = 0; n < N; n++) for (let j = 0; j < E; j++) params['out_proj.bias'][j] += dOut[n * E + j];
    const dHeads = matmul(dOut, p['out_proj.weight'], new Float32Array(N * E), N, E, E);
    const dQkv = new Float32Array(N * 3 * E);
    const dP = new Float64Array(L);
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < H; h++) {
        const base = (b * H + h) * L * L;
        for (let i = 0; i < L; i++) {
          const last = causal ? i : L - 1;
          const o = (b * L + i) * E + h * D;
          let dot = 0;  // sum_j P_ij dP_ij
          for (let j = 0; j <= last; j++) {
            const v = (b * L + j) * 3 * E + 2 * E + h * D;
            let s = 0;
            for (let d = 0; d < D; d++) s += dHeads[o + d] * qkv[v + d];
            dP[j] = s;
            dot += s * probs[base + i * L + j];
            const w = probs[base + i * L + j];
            for (let d = 0; d < D; d++) dQkv[v + d] += w * dHeads[o + d];  // dV
          }
          const q = (b * L + i) * 3 * E + h * D;
          for (let j = 0; j <= last; j++) {
            const dS = probs[base + i * L + j] * (dP[j] - dot) * scale;
            const k = (b * L + j) * 3 * E + E + h * D;
            for (let d = 0; d < D; d++) {
              dQkv[q + d] += dS * qkv[k + d];
              dQkv[k + d] += dS * qkv[q + d];
            }
          }
        }
      }
    }
    params.in_proj_weight = matmulTransposedA(dQkv, x, new Float32Array(3 * E * E), 3 * E, E, N);
    params.in_proj_bias = new Float32Array(3 * E);
    for (let n = 0; n < N; n++) for (let j = 0; j < 3 * E; j++) params.in_proj_bias[j] += dQkv[n * 3 * E + j];
    const dx = matmul(dQkv, p.in_proj_weight, new Float32Array(N * E), N, E, 3 * E);
    return { query: { data: dx, shape: shape.slice() }, key: null, value: null, params };
  }

  dispose() {
    this.#params = null;
  }
}
