// The layer's backward pass on the GPU: forward's stages in reverse, as the wasm layer's
// (src/mha/layer/multihead_attention_backward.cpp), in one command buffer:
//
//   combine'  d_attended = dOut W_out, dW_out = dOutᵀ attended, db_out = column sums of dOut
//   gate'     (config gate) through attended * sigmoid(x W_gateᵀ + b_gate): output_gate_backward,
//             then the gate projection's weight, bias and query gradients (output-gate.js)
//   attend'   attention_backward_prepare (q, dO, lse, D = dO . O packed per row), then
//             attention_backward_dq and attention_backward_dkdv (FlashAttention-2's backward,
//             the probabilities recomputed from the saved q, k and log-sum-exps), and the sinks'
//   rotate'   the inverse rotation of dQ and dK (rotary.wgsl with the sines negated)
//   append'   (addBiasKv, addZeroAttn, staticK/V) bias_k's and bias_v's gradients, the given keys' rows
//             (appended-keys.js)
//   project'  dX = dQ W_q (and the key's, the value's; self-attention sums the three), dW_q =
//             dQᵀ X, db_q = column sums of dQ
//
// A sequence-first call (batchFirst: false) swaps dOut into batch-first rows first and the inputs'
// gradients back last (sequence-first.js). `saved` is what forwardAsync({ grad: true }) kept on the
// GPU (see layer.js).
import { encodeAppendedKeysBackward } from './appended-keys.js';
import { scoreParams } from './attention.js';
import { failWithLoss, runChecked, submitChecked } from './gpu-work.js';
import { uniformData, workgroups } from './kernel-manifest.js';
import { packedRowVec4s } from './kernel-plan.js';
import { encodeOutputGateBackward } from './output-gate.js';
import { dispatch, pipeline } from './pipelines.js';
import { encodeRotary, rotaryTable } from './rotary.js';
import { encodeSwapLeadingAxes } from './sequence-first.js';
import { CallBuffers, gpuTensor, readBack } from './tensors.js';

/** gemm_*_grad.wgsl's template: vec4 loads when both row lengths are multiples of 4. */
const loads = (a, b) => (a % 4 === 0 && b % 4 === 0 ? { T: 'vec4<f32>', V: 4, PICK: 'value[u]' } : { T: 'f32', V: 1, PICK: 'value' });

function encodeInputGrad(device, pass, buffers, { dy, w, dx, M, N, K, accumulate = false }) {
  if (M === 0 || K === 0) return;
  const dims = buffers.uniform(uniformData('gemm_input_grad', { M, N, K, accumulate }), 'input grad dims');
  dispatch(device, pass, pipeline(device, 'gemm_input_grad', loads(N, K)), { 0: dy, 1: w, 2: dx, 3: dims },
    workgroups('gemm_input_grad', [K, M]));
}

function encodeWeightGrad(device, pass, buffers, { dy, x, dw, db, M, N, K }) {
  if (N === 0) return;
  const dims = buffers.uniform(uniformData('gemm_weight_grad', { M, N, K }), 'weight grad dims');  // (gemm_bias_grad's too)
  if (K > 0) {
    dispatch(device, pass, pipeline(device, 'gemm_weight_grad', loads(N, K)), { 0: dy, 1: x, 2: dw, 3: dims },
      workgroups('gemm_weight_grad', [K, N]));
  }
  if (db) dispatch(device, pass, pipeline(device, 'gemm_bias_grad'), { 0: dy, 2: db, 3: dims }, workgroups('gemm_bias_grad', [N]));
}

/** The GPU's limits on the backward's buffers and dispatches (checkSize / checkGroups from the layer; kernels: the call's plan). */
export function checkBackwardLimits(c, s, kernels, { checkSize, checkGroups }) {
  const { B, L, S } = s;
  if (kernels.rowsPerTile < 1) {
    throw new RangeError(`headDim + valueHeadDim = ${c.headDim + c.valueHeadDim} floats per query row do not fit the `
      + 'backward kernel\'s workgroup storage (maxComputeWorkgroupStorageSize 16384 bytes)');
  }
  checkSize('the backward\'s packed query rows', B * c.numHeads * L * packedRowVec4s(c) * 4);
  const QD = c.numHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim, AD = c.numHeads * c.valueHeadDim;
  checkGroups('the backward\'s projections', workgroups('gemm_weight_grad', [Math.max(c.embedDim, c.kdim, c.vdim, AD),
    Math.max(B * Math.max(L, S), c.outputDim, QD, VKV)]));
  checkGroups('the attention backward', workgroups('attention_backward_dq', [Math.max(L, S), c.numHeads, B]));
}

/**
 * backwardAsync's work: the backward pass of `saved` for dLoss/dOutput `dOut` ({ data } on the
 * CPU or { buffer } on the GPU), checked (gpu-work.js), its buffers freed when it ends. Resolves
 * to the gradients: { query, key, value } ({ data, shape }; key and value null for
 * self-attention) and `params` (Float32Arrays by state dict name), or with `onGpu` the same as GPU
 * tensors the caller owns. `paramShapes`: the layer's stateDictShapes().
 */
export async function runBackward(device, saved, dOut, paramShapes, { onGpu = false } = {}) {
  const buffers = new CallBuffers(device);
  try {
    return await failWithLoss(device, 'backwardAsync', async () => {
      const out = dOut.buffer ?? buffers.upload(dOut.data, 'd output');
      const submitted = await runChecked(device, () => submitBackward(device, buffers, saved, out, paramShapes, { onGpu }));
      if (onGpu) return submitted.tensors;
      const gradients = await submitted.read();
      const shapes = saved.inputShapes;
      return {
        query: { data: gradients.query, shape: shapes.query },
        key: gradients.key && { data: gradients.key, shape: shapes.key },
        value: gradients.value && { data: gradients.value, shape: shapes.value },
        params: gradients.params,
      };
    });
  } finally {
    buffers.free();
  }
}

/**
 * The backward pass of `saved` for dLoss/dOutput in a GPUBuffer (`dOut.buffer`), submitted now
 * (training.js's SUBMIT_BACKWARD, for mha-wasm/tfjs). Returns { gradients (submitBackward's
 * buffers), verdict (a promise of the GPU's Error or null), free() }: the caller reads the
 * gradients on the GPU, then calls free().
 */
export function submitBackwardNow(device, saved, dOut, paramShapes) {
  const buffers = new CallBuffers(device);
  try {
    const { result, verdict } = submitChecked(device, () => submitBackward(device, buffers, saved, dOut.buffer, paramShapes),
      { call: 'backwardAsync' });
    return { gradients: result.gradients, verdict, free: () => buffers.free() };
  } catch (error) {
    buffers.free();
    throw error;
  }
}

/**
 * Encodes attention's backward into `pass` (FlashAttention-2's, the probabilities recomputed from
 * q, k and the rows' log-sum-exps): dq [B*L, H*Dh], dk [B*S, Hkv*Dh], dv [B*S, Hkv*Dv] (and the
 * sinks' [H] into dSinks when given) from d attended [B*L, H*Dv]. `attention`: the forward's
 * encodeAttention call (its masks, offsets, dropout and plan), whose params block this reuses.
 * The layer's backward and the attention function's (attention-function.js) both run it.
 */
export function encodeAttentionBackward(device, pass, buffers, c, attention, t) {
  const { B, L, S } = t;
  if (L === 0 || S === 0) return;
  const H = c.numHeads, QD = H * c.headDim, AD = H * c.valueHeadDim;
  const rows = buffers.storage(B * H * L * packedRowVec4s(c) * 4, 'packed query rows');
  const sizes = { DH: c.headDim, DV: c.valueHeadDim };
  dispatch(device, pass, pipeline(device, 'attention_backward_prepare', sizes), {
    0: t.q, 1: t.attended, 2: t.dAttended, 3: t.lse, 4: rows,
    5: buffers.uniform(uniformData('attention_backward_prepare', { L, H, q_stride: QD, o_stride: AD }), 'prepare dims'),
  }, workgroups('attention_backward_prepare', [L, H, B]));
  const params = buffers.uniform(uniformData('attention_backward_dq', scoreParams(c, attention)), 'attention params');
  const shared = {
    0: rows, 1: t.k, 2: t.v, 3: attention.keyPadding ?? t.headParams, 4: attention.attnMask ?? t.headParams,
    5: t.headParams, 6: params,
  };
  const { kernels } = attention;
  dispatch(device, pass, pipeline(device, 'attention_backward_dq', { ...sizes, BC: kernels.keysPerTile }),
    { ...shared, 7: t.dq }, workgroups('attention_backward_dq', [L, H, B]));
  dispatch(device, pass, pipeline(device, 'attention_backward_dkdv', { ...sizes, BR: kernels.rowsPerTile }),
    { ...shared, 7: t.dk, 8: t.dv }, workgroups('attention_backward_dkdv', [S, c.numKvHeads, B]));
  if (t.dSinks) {
    dispatch(device, pass, pipeline(device, 'attention_backward_sinks', sizes), {
      0: rows, 1: t.headParams, 2: t.dSinks, 3: buffers.uniform(uniformData('attention_backward_sinks', { B, H, L }), 'sinks dims'),
    }, workgroups('attention_backward_sinks', [H]));
  }
}

/**
 * Encodes and submits the backward pass of `saved` for dLoss/dOutput in the GPUBuffer `dOut`,
 * now (so the caller's error scopes close before any other call opens its own); makes its
 * buffers in `buffers` (a CallBuffers). Returns the gradients' buffers (`gradients`) and read(): a promise of their arrays:
 * { query, key, value } (key and value null for self-attention) and `params` (the state dict's
 * names, in its order). With `onGpu` it returns instead `tensors`: the same gradients as GPU
 * tensors ({ buffer, shape, read, dispose }, kept out of `buffers`: the caller's), nothing read back.
 */
export function submitBackward(device, buffers, saved, dOutGiven, paramShapes, { onGpu = false } = {}) {
  const { c, B, L, S, self, w, attention, appended, sequenceFirst } = saved;
  const G = appended?.given ?? S;  // the given keys per sequence (S less the appended ones)
  const H = c.numHeads, Hkv = c.numKvHeads, E = c.embedDim;
  const QD = H * c.headDim, KV = Hkv * c.headDim, VKV = Hkv * c.valueHeadDim, AD = H * c.valueHeadDim, OD = c.outputDim;
  const bias = !!w.qBias;
  const store = (floats, label) => buffers.storage(floats, label);

  const g = {
    dAttended: store(B * L * AD, 'd attended'),
    outW: store(OD * AD, 'd out_proj.weight'), outB: w.outBias ? store(OD, 'd out_proj.bias') : null,
    dq: store(B * L * QD, 'dq'), dk: store(B * S * KV, 'dk'), dv: store(B * S * VKV, 'dv'),
    sinks: c.sinks ? store(H, 'd sinks') : null,
    gateW: c.gate ? store(AD * E, 'd gate_proj') : null, gateB: c.gate && w.gateBias ? store(AD, 'd gate bias') : null,
    qW: store(QD * E, 'd q_proj'), kW: store(KV * c.kdim, 'd k_proj'), vW: store(VKV * c.vdim, 'd v_proj'),
    qB: bias ? store(QD, 'd q bias') : null, kB: bias ? store(KV, 'd k bias') : null, vB: bias ? store(VKV, 'd v bias') : null,
    biasK: c.addBiasKv ? store(KV, 'd bias_k') : null, biasV: c.addBiasKv ? store(VKV, 'd bias_v') : null,
    query: store(B * L * E, 'd query'),
    key: self ? null : store(B * G * c.kdim, 'd key'), value: self ? null : store(B * G * c.vdim, 'd value'),
  };

  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  const dOut = sequenceFirst ? encodeSwapLeadingAxes(device, pass, buffers, dOutGiven, [L, B, OD], 'd output batch-first') : dOutGiven;
  // combine'
  encodeInputGrad(device, pass, buffers, { dy: dOut, w: w.out, dx: g.dAttended, M: B * L, N: OD, K: AD });
  encodeWeightGrad(device, pass, buffers, { dy: dOut, x: saved.gated ?? saved.attended, dw: g.outW, db: g.outB, M: B * L, N: OD, K: AD });
  // gate': g.dAttended becomes the attended values' gradient; the logits' gradient goes on below.
  const dGate = c.gate
    ? encodeOutputGateBackward(device, pass, buffers, { d: g.dAttended, z: saved.attended, gate: saved.gate, count: B * L * AD })
    : null;
  // attend'
  encodeAttentionBackward(device, pass, buffers, c, attention, {
    B, L, S, q: saved.q, k: saved.k, v: saved.v, attended: saved.attended, dAttended: g.dAttended, lse: saved.lse,
    headParams: w.headParams, dq: g.dq, dk: g.dk, dv: g.dv, dSinks: g.sinks,
  });
  // rotate': rotary's transpose is the rotation by minus the angle.
  if (c.rotary) {
    const inverse = (table) => {
      for (let t = 1; t < table.length; t += 2) table[t] = -table[t];
      return table;
    };
    const positions = saved.positions;
    encodeRotary(device, pass, buffers, { x: g.dq, table: inverse(rotaryTable(c.rotary, B, L, positions)), rows: B * L,
      rowStride: QD, heads: H, headDim: c.headDim, rotary: c.rotary });
    encodeRotary(device, pass, buffers, { x: g.dk, table: inverse(rotaryTable(c.rotary, B, S, self ? positions : null)), rows: B * S,
      rowStride: KV, heads: Hkv, headDim: c.headDim, rotary: c.rotary });
  }
  // append': the given keys' rows of dK and dV (zeros for static ones), and bias_k's and bias_v's
  const { dk, dv } = appended
    ? encodeAppendedKeysBackward(device, pass, buffers, c, appended, { B, dk: g.dk, dv: g.dv, dBiasK: g.biasK, dBiasV: g.biasV })
    : g;
  // project'
  const { x, xk, xv } = saved;
  encodeWeightGrad(device, pass, buffers, { dy: g.dq, x, dw: g.qW, db: g.qB, M: B * L, N: QD, K: E });
  encodeWeightGrad(device, pass, buffers, { dy: dk, x: xk, dw: g.kW, db: g.kB, M: B * G, N: KV, K: c.kdim });
  encodeWeightGrad(device, pass, buffers, { dy: dv, x: xv, dw: g.vW, db: g.vB, M: B * G, N: VKV, K: c.vdim });
  encodeInputGrad(device, pass, buffers, { dy: g.dq, w: w.q, dx: g.query, M: B * L, N: QD, K: E });
  if (dGate) {  // the query's use by the gate's projection
    encodeWeightGrad(device, pass, buffers, { dy: dGate, x, dw: g.gateW, db: g.gateB, M: B * L, N: AD, K: E });
    encodeInputGrad(device, pass, buffers, { dy: dGate, w: w.gate, dx: g.query, M: B * L, N: AD, K: E, accumulate: true });
  }
  encodeInputGrad(device, pass, buffers, { dy: dk, w: w.k, dx: g.key ?? g.query, M: B * G, N: KV, K: c.kdim, accumulate: self });
  encodeInputGrad(device, pass, buffers, { dy: dv, w: w.v, dx: g.value ?? g.query, M: B * G, N: VKV, K: c.vdim, accumulate: self });
  if (sequenceFirst) {  // the inputs' gradients in the inputs' layout, [L, B, ·]
    const swap = (d, rows, features, label) => d && encodeSwapLeadingAxes(device, pass, buffers, d, [B, rows, features], label);
    [g.query, g.key, g.value] = [swap(g.query, L, E, 'd query'), swap(g.key, G, c.kdim, 'd key'), swap(g.value, G, c.vdim, 'd value')];
  }
  pass.end();
  const tensors = onGpu ? gradientTensors(device, encoder, buffers, g, saved, paramShapes) : null;
  device.queue.submit([encoder.finish()]);

  return { gradients: g, read: () => readGradients(device, g, saved, paramShapes), tensors };
}

/**
 * The gradients' buffers `g` as GPU tensors named as readGradients names them: in_proj_weight and
 * in_proj_bias are the q, k and v parts copied one after another into one buffer (in `encoder`).
 */
function gradientTensors(device, encoder, buffers, g, saved, paramShapes) {
  const { c } = saved;
  const shapes = saved.inputShapes;
  const QD = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
  const floats = { qW: QD * c.embedDim, kW: KV * c.kdim, vW: VKV * c.vdim, qB: QD, kB: KV, vB: VKV };
  const concat = (parts, label) => {
    const all = buffers.storage(parts.reduce((n, p) => n + floats[p], 0), label);
    let at = 0;
    for (const p of parts) {
      if (floats[p] > 0) encoder.copyBufferToBuffer(g[p], 0, all, at * 4, floats[p] * 4);
      at += floats[p];
    }
    return all;
  };
  const byName = {
    in_proj_weight: () => concat(['qW', 'kW', 'vW'], 'd in_proj_weight'), q_proj_weight: () => g.qW, k_proj_weight: () => g.kW,
    v_proj_weight: () => g.vW, in_proj_bias: () => concat(['qB', 'kB', 'vB'], 'd in_proj_bias'),
    'out_proj.weight': () => g.outW, 'out_proj.bias': () => g.outB, sinks: () => g.sinks,
    'gate_proj.weight': () => g.gateW, 'gate_proj.bias': () => g.gateB, bias_k: () => g.biasK, bias_v: () => g.biasV,
  };
  const tensor = (buffer, shape) => gpuTensor(device, buffers.keep(buffer), [...shape]);
  const params = {};
  for (const [name, shape] of Object.entries(paramShapes)) {
    if (!byName[name]) throw new Error(`webgpu backward: no gradient for the parameter '${name}'`);
    params[name] = tensor(byName[name](), shape);
  }
  return {
    query: tensor(g.query, shapes.query),
    key: g.key && tensor(g.key, shapes.key),
    value: g.value && tensor(g.value, shapes.value),
    params,
  };
}

/** The gradients' buffers `g` read back, the parameters' named and concatenated as the state dict's. */
async function readGradients(device, g, saved, paramShapes) {
  const { c, B, L } = saved;
  const G = saved.appended?.given ?? saved.S;  // (the key's and value's rows)
  const H = c.numHeads, E = c.embedDim;
  const QD = H * c.headDim, KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
  const AD = H * c.valueHeadDim, OD = c.outputDim;
  const read = (buffer, floats) => (buffer ? readBack(device, buffer, floats) : null);
  const [query, key, value, outW, outB, qW, kW, vW, qB, kB, vB, sinks, gateW, gateB, biasK, biasV] = await Promise.all([
    read(g.query, B * L * E), read(g.key, B * G * c.kdim), read(g.value, B * G * c.vdim),
    read(g.outW, OD * AD), read(g.outB, OD), read(g.qW, QD * E), read(g.kW, KV * c.kdim), read(g.vW, VKV * c.vdim),
    read(g.qB, QD), read(g.kB, KV), read(g.vB, VKV), read(g.sinks, H), read(g.gateW, AD * E), read(g.gateB, AD),
    read(g.biasK, KV), read(g.biasV, VKV)]);
  const concat = (...parts) => {
    const all = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) { all.set(p, at); at += p.length; }
    return all;
  };
  const byName = {
    in_proj_weight: () => concat(qW, kW, vW), q_proj_weight: () => qW, k_proj_weight: () => kW, v_proj_weight: () => vW,
    in_proj_bias: () => concat(qB, kB, vB), 'out_proj.weight': () => outW, 'out_proj.bias': () => outB, sinks: () => sinks,
    'gate_proj.weight': () => gateW, 'gate_proj.bias': () => gateB, bias_k: () => biasK, bias_v: () => biasV,
  };
  const params = {};
  for (const name of Object.keys(paramShapes)) {
    if (!byName[name]) throw new Error(`webgpu backward: no gradient for the parameter '${name}'`);
    params[name] = byName[name]();
  }
  return { query, key, value, params };
}
