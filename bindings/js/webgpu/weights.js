// The layer's weights on the GPU: one buffer per projection matrix and bias, plus the heads'
// sink logits and ALiBi slopes, uploaded from the wasm layer's state dict (the one holder of
// the weights) and replaced whenever they change (LayerWeights keeps them for a layer). A
// projection the wasm layer holds quantized (weightDtype, loadQuantized) is uploaded as its packed
// bytes, scales and zero points in the canonical layout (docs/quantized.md), not as floats: the
// kernels dequantize (gemm.js).
import { QUANTIZED_PROJECTION } from '../core/quantized.js';
import { COPY_DST, COPY_SRC, STORAGE } from './buffer-usage.js';
import { submitChecked } from './gpu-work.js';

function upload(device, array, label) {
  const buffer = device.createBuffer({ label, size: Math.max(16, Math.ceil(array.byteLength / 16) * 16), usage: STORAGE | COPY_DST });
  device.queue.writeBuffer(buffer, 0, array);
  return buffer;
}

/** Bytes (a Uint8Array) as a storage buffer of u32 words, zero padded to a multiple of 4 bytes. */
function uploadBytes(device, bytes, label) {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  return upload(device, padded, label);
}

/** A quantized projection { dtype, data, scales, zeroPoints } (canonical layout) on the GPU. */
function uploadQuantized(device, m, inFeatures, label) {
  return {
    dtype: m.dtype,
    blocks: Math.ceil(inFeatures / 32),  // (q4's blocks per row)
    data: uploadBytes(device, m.data, `${label} (${m.dtype})`),
    scales: m.dtype === 'f16' ? null : upload(device, m.scales, `${label} scales`),
    zeroPoints: m.zeroPoints ? uploadBytes(device, m.zeroPoints, `${label} zero points`) : null,
    destroy() {
      for (const buffer of [this.data, this.scales, this.zeroPoints]) buffer?.destroy();
    },
  };
}

/**
 * Uploads `stateDict` of a layer with resolved config `c`; returns the buffers (and destroy()).
 * `quantized(which)` ('q', 'k', 'v', 'o', 'g') gives a projection held quantized, or null for float32.
 */
export function uploadWeights(device, c, stateDict, quantized = () => null) {
  const QD = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, E = c.embedDim;
  let q, k, v;
  if (stateDict.in_proj_weight) {
    const w = stateDict.in_proj_weight;
    [q, k, v] = [w.subarray(0, E * E), w.subarray(E * E, 2 * E * E), w.subarray(2 * E * E)];
  } else {
    [q, k, v] = [stateDict.q_proj_weight, stateDict.k_proj_weight, stateDict.v_proj_weight];
  }
  const b = stateDict.in_proj_bias;
  const headParams = new Float32Array(2 * c.numHeads);
  if (stateDict.sinks) headParams.set(stateDict.sinks);
  if (c.alibiSlopes) headParams.set(c.alibiSlopes, c.numHeads);
  const projection = (which, floats, inFeatures, label) => {
    const m = quantized(which);
    return m ? uploadQuantized(device, m, inFeatures, label) : upload(device, floats, label);
  };
  const buffers = {
    q: projection('q', q, E, 'q_proj'),
    k: projection('k', k, c.kdim, 'k_proj'),
    v: projection('v', v, c.vdim, 'v_proj'),
    out: projection('o', stateDict['out_proj.weight'], c.numHeads * c.valueHeadDim, 'out_proj'),
    qBias: b && upload(device, b.subarray(0, QD), 'q bias'),
    kBias: b && upload(device, b.subarray(QD, QD + KV), 'k bias'),
    vBias: b && upload(device, b.subarray(QD + KV), 'v bias'),
    outBias: stateDict['out_proj.bias'] && upload(device, stateDict['out_proj.bias'], 'out_proj bias'),
    gate: c.gate ? projection('g', stateDict['gate_proj.weight'], E, 'gate_proj') : null,
    gateBias: stateDict['gate_proj.bias'] && upload(device, stateDict['gate_proj.bias'], 'gate_proj bias'),
    qNorm: stateDict['q_norm.weight'] && upload(device, stateDict['q_norm.weight'], 'q_norm'),  // (qkNorm: qk-norm.js)
    kNorm: stateDict['k_norm.weight'] && upload(device, stateDict['k_norm.weight'], 'k_norm'),
    biasK: stateDict.bias_k && upload(device, stateDict.bias_k, 'bias_k'),  // (addBiasKv: appended-keys.js)
    biasV: stateDict.bias_v && upload(device, stateDict.bias_v, 'bias_v'),
    headParams: upload(device, headParams, 'sinks and ALiBi slopes'),
  };
  return {
    ...buffers,
    destroy() {
      for (const buffer of Object.values(buffers)) buffer?.destroy();
    },
  };
}

/**
 * The layer's weights copied on the GPU from `stateDict`'s { buffer, shape } tensors (each named
 * and shaped as `shapes`, the layer's stateDictShapes(); a buffer with COPY_SRC usage), into
 * buffers laid out as uploadWeights makes them. Float32 layers only (weightDtype 'f32'). Returns
 * them with `ready`: a promise of the GPU's verdict on the copies (an Error, or null).
 */
export function copyWeights(device, c, shapes, stateDict, weightDtype) {
  if (weightDtype && weightDtype !== 'f32') {
    throw new TypeError(`a layer with weightDtype '${weightDtype}' loads its weights from Float32Arrays (they are quantized on the CPU), not GPU tensors`);
  }
  for (const name of Object.keys(stateDict)) {
    if (!(name in shapes)) throw new TypeError(`unknown weight '${name}'; expected ${Object.keys(shapes).join(', ')}`);
  }
  for (const [name, shape] of Object.entries(shapes)) {
    const t = stateDict[name];
    const expected = `{ buffer: GPUBuffer, shape: [${shape.join(', ')}] }`;
    if (t === null || typeof t !== 'object' || !('buffer' in t) || ArrayBuffer.isView(t)) {
      throw new TypeError(`'${name}' must be ${expected} like the other weights (a state dict is all on the CPU or all on the GPU)`);
    }
    if (t.buffer === null || typeof t.buffer !== 'object' || typeof t.buffer.mapAsync !== 'function') {
      throw new TypeError(`'${name}'.buffer must be a GPUBuffer`);
    }
    if (!Array.isArray(t.shape) || t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new RangeError(`'${name}': expected shape [${shape.join(', ')}], got ${Array.isArray(t.shape) ? `[${t.shape.join(', ')}]` : String(t.shape)}`);
    }
    const bytes = shape.reduce((n, d) => n * d, 1) * 4;
    if (t.buffer.size < bytes) throw new RangeError(`'${name}': shape [${shape.join(', ')}] needs ${bytes} bytes, but the buffer has ${t.buffer.size}`);
    if ((t.buffer.usage & COPY_SRC) === 0) throw new TypeError(`'${name}'.buffer: a GPUBuffer without GPUBufferUsage.COPY_SRC (its contents are copied)`);
  }
  const QD = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
  const all = [];
  const make = (floats, label) => {
    const buffer = device.createBuffer({ label, size: Math.max(16, Math.ceil(floats * 4 / 16) * 16), usage: STORAGE | COPY_DST | COPY_SRC });
    all.push(buffer);
    return buffer;
  };
  // Made and copied in error scopes (gpu-work.js): `ready` is their verdict.
  const { result: buffers, verdict: ready } = submitChecked(device, () => {
    const encoder = device.createCommandEncoder();
    // A part of a given tensor: `floats` floats from float `at` of stateDict[name], into a new buffer.
    const part = (name, at, floats, label) => {
      const buffer = make(floats, label);
      if (floats > 0) encoder.copyBufferToBuffer(stateDict[name].buffer, at * 4, buffer, 0, floats * 4);
      return buffer;
    };
    const separate = 'q_proj_weight' in shapes;
    const bias = 'in_proj_bias' in shapes;
    const headParams = new Float32Array(2 * c.numHeads);
    if (c.alibiSlopes) headParams.set(c.alibiSlopes, c.numHeads);
    const made = {
      q: separate ? part('q_proj_weight', 0, QD * c.embedDim, 'q_proj') : part('in_proj_weight', 0, QD * c.embedDim, 'q_proj'),
      k: separate ? part('k_proj_weight', 0, KV * c.kdim, 'k_proj') : part('in_proj_weight', QD * c.embedDim, KV * c.kdim, 'k_proj'),
      v: separate ? part('v_proj_weight', 0, VKV * c.vdim, 'v_proj')
        : part('in_proj_weight', QD * c.embedDim + KV * c.kdim, VKV * c.vdim, 'v_proj'),
      out: part('out_proj.weight', 0, c.outputDim * c.numHeads * c.valueHeadDim, 'out_proj'),
      qBias: bias ? part('in_proj_bias', 0, QD, 'q bias') : null,
      kBias: bias ? part('in_proj_bias', QD, KV, 'k bias') : null,
      vBias: bias ? part('in_proj_bias', QD + KV, VKV, 'v bias') : null,
      outBias: 'out_proj.bias' in shapes ? part('out_proj.bias', 0, c.outputDim, 'out_proj bias') : null,
      gate: c.gate ? part('gate_proj.weight', 0, c.numHeads * c.valueHeadDim * c.embedDim, 'gate_proj') : null,
      gateBias: 'gate_proj.bias' in shapes ? part('gate_proj.bias', 0, c.numHeads * c.valueHeadDim, 'gate_proj bias') : null,
      qNorm: 'q_norm.weight' in shapes ? part('q_norm.weight', 0, shapes['q_norm.weight'][0], 'q_norm') : null,
      kNorm: 'k_norm.weight' in shapes ? part('k_norm.weight', 0, shapes['k_norm.weight'][0], 'k_norm') : null,
      biasK: 'bias_k' in shapes ? part('bias_k', 0, KV, 'bias_k') : null,
      biasV: 'bias_v' in shapes ? part('bias_v', 0, VKV, 'bias_v') : null,
      headParams: make(2 * c.numHeads, 'sinks and ALiBi slopes'),
    };
    device.queue.writeBuffer(made.headParams, 0, headParams);
    if ('sinks' in shapes) encoder.copyBufferToBuffer(stateDict.sinks.buffer, 0, made.headParams, 0, c.numHeads * 4);
    device.queue.submit([encoder.finish()]);
    return made;
  }, {
    call: 'loadStateDict', RejectedError: TypeError,
    rejected: 'a weight\'s buffer cannot be used on this layer\'s device (a buffer of another GPUDevice, or a destroyed one)',
  });
  return {
    ...buffers,
    ready,
    destroy() {
      for (const buffer of all) buffer.destroy();
    },
  };
}

/**
 * A layer's weights as the GPU sees them: those of its wasm layer (the one holder of float32 and
 * quantized weights), uploaded on first use after each change; or the contents of GPU tensors
 * (loadStateDict({ name: { buffer, shape } }): copyWeights), which live on the GPU only.
 */
export class LayerWeights {
  #device;
  #layer;  // the wasm layer
  #config;  // its resolved config
  #uploaded = null;  // the buffers on the GPU, or null when they changed since
  #gpuOnly = false;  // true while they are GPU tensors' copies: none in the wasm layer

  constructor(device, layer, config) {
    this.#device = device;
    this.#layer = layer;
    this.#config = config;
  }

  /** Whether there are weights (in the wasm layer, or copied from GPU tensors). */
  get loaded() { return this.#gpuOnly || this.#layer.byteSize > 0; }
  /** A GPU-to-GPU copy's verdict (a promise of an Error or null); undefined for an upload. */
  get ready() { return this.#uploaded?.ready; }

  /** The weights on the GPU: uploaded from the wasm layer when they changed since the last call. */
  current() {
    if (!this.#uploaded) {
      const layer = this.#layer;
      this.#uploaded = uploadWeights(this.#device, this.#config, layer.stateDict(), (which) => layer[QUANTIZED_PROJECTION](which));
    }
    return this.#uploaded;
  }

  /** Whether `w` (a call's current()) are still the weights: a backward pass runs on its forward's. */
  isCurrent(w) { return w === this.#uploaded; }

  /**
   * A state dict loaded: into the wasm layer (loadStateDict); or, when its values are { buffer,
   * shape } GPU tensors, their contents copied on the GPU (copyFrom: nothing read back).
   */
  load(stateDict) {
    const onGpu = stateDict !== null && typeof stateDict === 'object'
      && Object.values(stateDict).some((t) => t !== null && typeof t === 'object' && 'buffer' in t && !ArrayBuffer.isView(t));
    if (onGpu) {
      this.copyFrom(stateDict);
    } else {
      this.#layer.loadStateDict(stateDict);
      this.changed();
    }
  }

  /** The weights as a state dict of Float32Arrays: the wasm layer's (none for weights that live on the GPU only). */
  stateDict() {
    if (this.#gpuOnly) {
      throw new TypeError('stateDict: this layer\'s weights were loaded from GPU tensors (loadStateDict with { buffer, shape }) '
        + 'and live only on the GPU; read the tensors it was loaded from');
    }
    return this.#layer.stateDict();
  }

  /** GPU tensors' contents copied into new weights (copyWeights: checked first; the GPU's verdict in `ready`). */
  copyFrom(stateDict) {
    const copied = copyWeights(this.#device, this.#config, this.#layer.stateDictShapes(), stateDict, this.#layer.config.weightDtype);
    this.changed();
    this.#uploaded = copied;
    this.#gpuOnly = true;
  }

  /** The wasm layer's weights changed (or the layer is disposed): the GPU's copy goes. */
  changed() {
    this.#uploaded?.destroy();
    this.#uploaded = null;
    this.#gpuOnly = false;
  }
}
