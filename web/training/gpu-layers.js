// The trainer's attention layers on mha-wasm's WebGPU backend: their parameters, AdamW moments
// and weights live on the GPU between steps; each step's forward (grad), backward (gradients left
// on the GPU), global-norm sum and AdamW update (bindings/js/webgpu/adamw.js, the twin of
// adamw.js here) run there. What crosses to the CPU per step: the residual stream (each layer's
// output, for the residual add and the JavaScript unembedding / cross-entropy / embedding), dx
// back up, one float per gradient for the clip, and a mirror of the layers' parameters and
// moments (mirror()), so a lost device or a switch to wasm continues from the last step.
import { COPY_DST, COPY_SRC, MAP_READ, STORAGE } from '../../bindings/js/webgpu/buffer-usage.js';

const MAP_MODE_READ = 0x01;  // GPUMapMode.READ (a map mode, not a usage flag)
const LAYER_KEYS = ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'];

export class GpuLayers {
  #gpu;
  #layers = [];
  #params = {};  // 'layers.l.name' -> { buffer, shape }: the parameters (AdamW updates them in place)
  #optimizer;
  #E;
  #H;
  #scratch = [];  // out_proj.weight copies with an ablated head's columns zeroed, loaded into layers

  /**
   * @param gpu the WebGPU module (init({ backend: 'webgpu' }))
   * @param {{ params, optimizer, ablated, shapes, numLayers, dModel, numHeads, weightDecay }} state
   *   the trainer's parameters (Float32Arrays) and CPU AdamW (web/training/adamw.js), uploaded
   */
  constructor(gpu, { params, optimizer, ablated, shapes, numLayers, dModel: E, numHeads: H }) {
    this.#gpu = gpu;
    this.#E = E;
    this.#H = H;
    this.#optimizer = new gpu.AdamW({ weightDecay: optimizer.weightDecay, beta2: optimizer.beta2, eps: optimizer.eps });
    const { device } = gpu;
    const first = {}, second = {};
    for (let l = 0; l < numLayers; l++) {
      for (const key of LAYER_KEYS) {
        const name = `layers.${l}.${key}`;
        const buffer = device.createBuffer({ label: name, size: Math.max(16, params[name].byteLength), usage: STORAGE | COPY_SRC | COPY_DST });
        device.queue.writeBuffer(buffer, 0, params[name]);
        this.#params[name] = { buffer, shape: shapes[name] };
        first[name] = optimizer.firstMoment[name];
        second[name] = optimizer.secondMoment[name];
      }
      this.#layers.push(new gpu.MultiHeadAttention({ embedDim: E, numHeads: H }));
    }
    this.#optimizer.loadState({ steps: optimizer.steps, firstMoment: first, secondMoment: second });
    this.ablated = ablated;
    this.#load();
  }

  /** Whether this holds `gpu`'s layers (a new device after a loss makes new ones). */
  isOn(gpu) { return this.#gpu === gpu; }

  #layerParams(l) {
    return Object.fromEntries(LAYER_KEYS.map((key) => [key, this.#params[`layers.${l}.${key}`]]));
  }

  /** The columns of out_proj.weight [E, E] that head `head` is multiplied by, zeroed in `encoder`. */
  #clearHead(encoder, buffer, head) {
    const E = this.#E, D = E / this.#H;
    for (let row = 0; row < E; row++) encoder.clearBuffer(buffer, (row * E + head * D) * 4, D * 4);
  }

  #ablatedHeads(l) {
    return [...this.ablated].map((k) => k.split(':').map(Number)).filter(([layer]) => layer === l).map(([, head]) => head);
  }

  /** The layers' weights from the parameters, on the GPU; an ablated head's out_proj columns zeroed (a copy). */
  #load() {
    const { device } = this.#gpu;
    this.#scratch.forEach((b) => b.destroy());
    this.#scratch = [];
    this.#layers.forEach((layer, l) => {
      const weights = this.#layerParams(l);
      const heads = this.#ablatedHeads(l);
      if (heads.length) {
        const source = weights['out_proj.weight'];
        const copy = device.createBuffer({ size: source.buffer.size, usage: STORAGE | COPY_SRC | COPY_DST });
        const encoder = device.createCommandEncoder();
        encoder.copyBufferToBuffer(source.buffer, 0, copy, 0, source.buffer.size);
        for (const head of heads) this.#clearHead(encoder, copy, head);
        device.queue.submit([encoder.finish()]);
        this.#scratch.push(copy);
        weights['out_proj.weight'] = { buffer: copy, shape: source.shape };
      }
      layer.loadStateDict(weights);
    });
  }

  /** Layer l's forward with grad on x [B, T, E] (a Float32Array): its result (output read back, state kept for backward). */
  forward(l, x, B, T) {
    return this.#layers[l].forwardAsync({ data: x, shape: [B, T, this.#E] }, null, null, { causal: true, grad: true });
  }

  /**
   * Layer l's backward for dx [B, T, E]: returns dLoss/d(its input) read back, and keeps its
   * parameters' gradients on the GPU (an ablated head's out_proj columns zeroed, as the CPU trainer's).
   */
  async backward(l, saved, dx, B, T, grads) {
    const g = await saved.backwardAsync({ data: dx, shape: [B, T, this.#E] }, { outputLocation: 'gpu' });
    const heads = this.#ablatedHeads(l);
    if (heads.length) {
      const encoder = this.#gpu.device.createCommandEncoder();
      for (const head of heads) this.#clearHead(encoder, g.params['out_proj.weight'].buffer, head);
      this.#gpu.device.queue.submit([encoder.finish()]);
    }
    for (const [key, t] of Object.entries(g.params)) grads[`layers.${l}.${key}`] = t;
    try {
      return await g.query.read();
    } finally {
      g.query.dispose();
    }
  }

  /** The sum of squares of the gradients on the GPU (one float per tensor read back). */
  squaredNorm(grads) {
    return this.#optimizer.squaredNorm(grads);
  }

  /** AdamW on the GPU (gradients scaled by gradScale first), then the layers' weights reloaded; frees the gradients. */
  async step(grads, { lr, beta1, gradScale }) {
    try {
      await this.#optimizer.step(this.#params, grads, { lr, beta1, gradScale });
    } finally {
      for (const t of Object.values(grads)) t.dispose();
    }
    this.#load();
  }

  /**
   * The parameters and moments read back: { params, firstMoment, secondMoment } by name (the
   * trainer copies them into its CPU state only once all arrived).
   */
  async mirror() {
    const names = Object.keys(this.#params);
    const [values, state] = await Promise.all([Promise.all(names.map((n) => readTensor(this.#gpu.device, this.#params[n]))),
      this.#optimizer.state()]);
    return { params: Object.fromEntries(names.map((n, i) => [n, values[i]])), ...state };
  }

  /** The ablated heads changed: reload the layers' weights. */
  setAblated(ablated) {
    this.ablated = ablated;
    this.#load();
  }

  dispose() {
    for (const layer of this.#layers) layer.dispose();
    this.#optimizer.dispose();
    for (const t of Object.values(this.#params)) t.buffer.destroy();
    this.#scratch.forEach((b) => b.destroy());
    this.#layers = [];
  }
}

async function readTensor(device, t) {
  const bytes = t.shape.reduce((n, d) => n * d, 1) * 4;
  const staging = device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
  try {
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(t.buffer, 0, staging, 0, bytes);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(MAP_MODE_READ);
    return new Float32Array(staging.getMappedRange().slice(0));
  } finally {
    staging.destroy();
  }
}
