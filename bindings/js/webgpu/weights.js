// The layer's weights on the GPU: one buffer per projection matrix and bias, plus the heads'
// sink logits and ALiBi slopes, uploaded from the wasm layer's state dict (the one holder of
// the weights) and replaced whenever they change.

const STORAGE = 0x80, COPY_DST = 0x08;

function upload(device, array, label) {
  const buffer = device.createBuffer({ label, size: Math.max(16, Math.ceil(array.byteLength / 16) * 16), usage: STORAGE | COPY_DST });
  device.queue.writeBuffer(buffer, 0, array);
  return buffer;
}

/** Uploads `stateDict` of a layer with resolved config `c`; returns the buffers (and destroy()). */
export function uploadWeights(device, c, stateDict) {
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
  const buffers = {
    q: upload(device, q, 'q_proj'),
    k: upload(device, k, 'k_proj'),
    v: upload(device, v, 'v_proj'),
    out: upload(device, stateDict['out_proj.weight'], 'out_proj'),
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
