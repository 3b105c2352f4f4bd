// The layer's weights on the GPU: one buffer per projection matrix and bias, plus the heads'
// sink logits and ALiBi slopes, uploaded from the wasm layer's state dict (the one holder of
// the weights) and replaced whenever they change. A projection the wasm layer holds quantized
// (weightDtype, loadQuantized) is uploaded as its packed bytes, scales and zero points in the
// canonical layout (docs/quantized.md), not as floats: the kernels dequantize (gemm.js).

const STORAGE = 0x80, COPY_DST = 0x08;

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
 * `quantized(which)` ('q', 'k', 'v', 'o') gives a projection held quantized, or null for float32.
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
    headParams: upload(device, headParams, 'sinks and ALiBi slopes'),
  };
  return {
    ...buffers,
    destroy() {
      for (const buffer of Object.values(buffers)) buffer?.destroy();
    },
  };
}
