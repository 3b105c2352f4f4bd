// The tfjs layer's attention on tfjs' webgpu backend: an mha-wasm WebGPU layer on tfjs' own
// device reads tfjs' GPU tensors and writes new ones, forward and backward, with no readback.
// tfjs calls a layer and its gradient function synchronously, so the work is submitted at once
// (the WebGPU layer's SUBMIT_NOW / SUBMIT_BACKWARD), ordered on the device's one queue after the
// tfjs work that made the inputs (tfjsToGpu submits it) and before the tfjs work that reads the
// results (gpuToTfjs copies them in tfjs' next submit). The weights are tfjs variables in Keras'
// layout: tfjs kernels lay them out as the WebGPU layer reads them (PyTorch's [out, in]), on the
// GPU, whenever a variable changes (each training step), and its loadStateDict copies them in. What still goes through the CPU: an
// attentionMask (read once per call; the kernels take masks from the CPU).
import { SUBMIT_NOW } from '../webgpu/layer.js';
import { SUBMIT_BACKWARD } from '../webgpu/training.js';
import { gpuToTfjs, tfjsToGpu } from './gpu-tensors.js';

/**
 * The GPU side of one tfjs MultiHeadAttention layer: `gpu` is init({ backend: 'webgpu', device:
 * tfjs' device }), `config` the wasm layer's config. A GPU error of a call (the device's verdict
 * comes after the call returned) is thrown by the next call.
 */
export class TfjsGpuAttention {
  #tf;
  #gpu;
  #layer;
  #loaded = null;  // the variables' data ids whose values the GPU layer holds
  #failed = null;  // a GPU error reported after its call returned

  constructor(tf, gpu, config) {
    this.#tf = tf;
    this.#gpu = gpu;
    this.#layer = new gpu.MultiHeadAttention(config);  // (its weights: the variables', loaded before each call)
  }

  /** True while tfjs runs on the webgpu backend on this layer's device. */
  get active() {
    const tf = this.#tf;
    return tf.getBackend() === 'webgpu' && tf.backend().device === this.#gpu.device;
  }

  #watch(verdict) {
    verdict.then((error) => { if (error) this.#failed ??= error; });
  }

  /** Keras' variables (named by `names`, in their order) laid out on the GPU as the WebGPU layer reads them, when they changed. */
  loadWeights(variables, names) {
    const ids = variables.map((v) => v.dataId);
    if (this.#loaded && ids.every((id, i) => id === this.#loaded[i])) return;
    const tf = this.#tf;
    const byName = Object.fromEntries(names.map((name, i) => [name, variables[i]]));
    // The state dict's layout, by tfjs kernels on the GPU: [in, H, D] kernels -> [H * D, in];
    // attention_output/kernel [H, Dv, out] -> [out, H * Dv]; biases flat; q, k and v in one
    // in_proj matrix (and bias) where the layer keeps them so (stateDictShapes says).
    const shapes = this.#layer.stateDictShapes();
    const rows = (name) => tf.transpose(tf.reshape(byName[name], [byName[name].shape[0], -1]));
    const flat = (name) => tf.reshape(byName[name], [-1]);
    const laidOut = tf.tidy(() => {
      const dict = {
        'out_proj.weight': tf.transpose(tf.reshape(byName['attention_output/kernel'], [-1, byName['attention_output/kernel'].shape[2]])),
      };
      if ('in_proj_weight' in shapes) dict.in_proj_weight = tf.concat([rows('query/kernel'), rows('key/kernel'), rows('value/kernel')], 0);
      else Object.assign(dict, { q_proj_weight: rows('query/kernel'), k_proj_weight: rows('key/kernel'), v_proj_weight: rows('value/kernel') });
      if ('in_proj_bias' in shapes) {
        dict.in_proj_bias = tf.concat([flat('query/bias'), flat('key/bias'), flat('value/bias')], 0);
        dict['out_proj.bias'] = tf.clone(byName['attention_output/bias']);
      }
      return dict;
    });
    const onGpu = {};
    try {
      for (const [name, tensor] of Object.entries(laidOut)) onGpu[name] = tfjsToGpu(tf, tensor);
      // Copied on the GPU into the layer's weights (queued now): tfjs' copies may go at once.
      this.#layer.loadStateDict(Object.fromEntries(Object.entries(onGpu).map(([name, t]) => [name, { buffer: t.buffer, shape: t.shape }])));
    } finally {
      for (const t of Object.values(onGpu)) t.dispose();
      tf.dispose(Object.values(laidOut));
    }
    this.#loaded = ids;
  }

  /**
   * One forward call: tfjs tensors query, value (null for self-attention) and key (null: the
   * value), `options` the WebGPU layer's (masks from the CPU). Returns { output (a tfjs tensor),
   * scores () => a tfjs tensor or null } and, with options.grad, `result` (release() it without a
   * backward) and `backward(dy)`.
   */
  forward(query, value, key, options) {
    if (this.#failed) {
      const error = this.#failed;
      this.#failed = null;
      throw error;
    }
    const tf = this.#tf;
    const inputs = [query, value, key].map((t) => (t ? tfjsToGpu(tf, t) : null));
    try {
      const [q, v, k] = inputs;
      const { result, verdict } = this.#layer[SUBMIT_NOW](q, v ? k ?? v : null, v, options);
      this.#watch(verdict);
      const output = gpuToTfjs(tf, result.output);  // (tfjs' copy: ours is freed at once)
      const scoresTensor = result.weights ? gpuToTfjs(tf, result.weights) : null;
      const scores = () => scoresTensor;
      result.output.dispose();
      result.weights?.dispose();
      if (!options.grad) return { output, scores };
      const shapes = { query: query.shape, value: value?.shape, key: (key ?? value)?.shape };
      return { output, scores, result, backward: (dy) => this.#backward(result, dy, shapes, Boolean(value), Boolean(key)) };
    } finally {
      for (const t of inputs) t?.dispose();
    }
  }

  /**
   * The gradients for dLoss/dOutput `dy` (a tfjs tensor), as tfjs tensors: `inputs` (query, then
   * value and key as forward got them; without a key the value's sums both roles) and `params` in
   * Keras' layout, by Keras' weight name.
   */
  #backward(result, dy, shapes, hasValue, hasKey) {
    const tf = this.#tf;
    const c = this.#layer.config;
    const H = c.numHeads, Dk = c.headDim, Dv = c.valueHeadDim;
    const dOut = tfjsToGpu(tf, dy);
    try {
      const { gradients: g, verdict, free } = result[SUBMIT_BACKWARD](dOut);
      this.#watch(verdict);
      const wrap = (buffer, shape) => gpuToTfjs(tf, { buffer, shape });
      try {
        return tf.tidy(() => {
          const inputs = [tf.keep(wrap(g.query, shapes.query))];
          if (hasValue) {
            const dValue = wrap(g.value, shapes.value), dKey = wrap(g.key, shapes.key);
            inputs.push(...(hasKey ? [tf.keep(dValue), tf.keep(dKey)] : [tf.keep(tf.add(dValue, dKey))]));
          }
          // [rows, in] -> Keras' [in, ...shape]; [out, H * Dv] -> [H, Dv, out].
          const kernel = (buffer, inFeatures, heads, size) => tf.keep(tf.reshape(tf.transpose(wrap(buffer, [heads * size, inFeatures])), [inFeatures, heads, size]));
          const params = {
            'query/kernel': kernel(g.qW, c.embedDim, H, Dk),
            'key/kernel': kernel(g.kW, c.kdim, H, Dk),
            'value/kernel': kernel(g.vW, c.vdim, H, Dv),
            'attention_output/kernel': tf.keep(tf.reshape(tf.transpose(wrap(g.outW, [c.outputDim, H * Dv])), [H, Dv, c.outputDim])),
          };
          if (g.qB) {
            Object.assign(params, {
              'query/bias': tf.keep(tf.reshape(wrap(g.qB, [H * Dk]), [H, Dk])),
              'key/bias': tf.keep(tf.reshape(wrap(g.kB, [H * Dk]), [H, Dk])),
              'value/bias': tf.keep(tf.reshape(wrap(g.vB, [H * Dv]), [H, Dv])),
              'attention_output/bias': tf.keep(wrap(g.outB, [c.outputDim])),
            });
          }
          return { inputs, params };
        });
      } finally {
        free();  // (tfjs copied each gradient in its queue, after the backward pass)
      }
    } finally {
      dOut.dispose();
    }
  }

  dispose() {
    this.#layer.dispose();
    this.#loaded = null;
  }
}
