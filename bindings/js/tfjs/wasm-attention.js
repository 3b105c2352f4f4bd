// The tfjs layer's attention on mha-wasm's wasm module (the twin of gpu-attention.js, which runs
// it on tfjs' WebGPU device): tfjs tensors are read as float arrays (the cpu backend's own array,
// a view of tfjs-wasm's heap), the weights are converted from Keras' layout when a variable
// changed, and the backward's gradients go back to Keras' layout (keras/layout.js).
import { kerasLayoutFromStateDict, kerasSizesOfCore, kerasWeightShapes, stateDictFromKerasLayout } from '../keras/layout.js';

/**
 * A tensor's float32 elements with the least copying the backend allows: the cpu backend's own
 * array (no copy), a view of tfjs-wasm's heap (read at once, before tfjs allocates again), else a copy.
 */
function floats(tf, tensor) {
  const backend = tf.backend();
  if (tensor.dtype === 'float32' && typeof backend.typedArrayFromHeap === 'function') return backend.typedArrayFromHeap(tensor);
  const data = tensor.dataSync();
  return data instanceof Float32Array ? data : Float32Array.from(data);
}

/**
 * On tfjs-wasm, a float32 output tensor allocated in its heap, for mha-wasm to write its result
 * into (forward's `out`): one copy from mha-wasm's heap to tfjs', where a JS array in between
 * would take two. Allocate it before taking any view of tfjs' heap (allocating may move it).
 * Null elsewhere (the cpu backend keeps the JS array mha-wasm returns, without a copy).
 */
function heapOutput(tf, shape) {
  const backend = tf.backend();
  if (typeof backend.typedArrayFromHeap !== 'function' || typeof backend.makeOutput !== 'function') return null;
  const info = backend.makeOutput(shape, 'float32');
  return {
    view: () => backend.typedArrayFromHeap(info),
    tensor: () => tf.engine().makeTensorFromTensorInfo(info),
    dispose: () => backend.disposeData(info.dataId),
  };
}

/** Two gradients of one tensor ({ data, shape }) added element-wise. */
const sum = (a, b) => ({ data: a.data.map((x, i) => x + b.data[i]), shape: a.shape });

/** The wasm side of one tfjs MultiHeadAttention layer: `mha` a loaded mha-wasm module, `config` its layer's config. */
export class TfjsWasmAttention {
  #tf;
  #layer;
  #sizes;          // Keras' sizes of the layer (keras/layout.js)
  #loaded = null;  // the variables' data ids last loaded
  #quantized;      // weightDtype not 'f32': the projections are stored quantized, and have no gradients

  constructor(tf, mha, config) {
    this.#tf = tf;
    this.#layer = new mha.MultiHeadAttention(config);
    this.#sizes = kerasSizesOfCore(this.#layer.config);
    this.#quantized = (config.weightDtype ?? 'f32') !== 'f32';
  }

  /**
   * Keras' variables (in kerasWeightShapes' order) loaded into the wasm layer, unless they are the
   * ones already loaded (a variable's assign gives it a new data id).
   */
  loadWeights(variables) {
    const ids = variables.map((v) => v.dataId);
    if (this.#loaded && ids.every((id, i) => id === this.#loaded[i])) return;
    const names = Object.keys(kerasWeightShapes(this.#sizes));
    const byName = Object.fromEntries(names.map((name, i) => [name, floats(this.#tf, variables[i])]));
    this.#layer.loadStateDict(stateDictFromKerasLayout(byName, this.#sizes));
    this.#loaded = ids;
  }

  /**
   * One forward call, as TfjsGpuAttention.forward: tfjs tensors query, value (null for
   * self-attention) and key (null: the value), `options` the wasm layer's. Returns { output (a
   * tfjs tensor), scores () => a tfjs tensor or null } and, with options.grad, `result` (release()
   * it without a backward) and `backward(dy)` -> { inputs, params } as tfjs tensors. The scores
   * tensor is made on request, after tfjs' customGrad has checked the forward's tensors. A
   * quantized layer's backward gives the inputs' gradients only (params null).
   */
  forward(query, value, key, options) {
    const tf = this.#tf;
    // Without a tape (inference) the output goes straight into tfjs-wasm's heap; a grad result keeps its own buffers.
    const target = options.grad ? null : heapOutput(tf, [query.shape[0], query.shape[1], this.#sizes.outputShape]);
    const asCore = (t) => ({ data: floats(tf, t), shape: t.shape });
    let result;
    try {
      result = this.#layer.forward(asCore(query), value ? asCore(key ?? value) : null, value ? asCore(value) : null,
        { ...options, ...(target ? { out: target.view() } : {}) });
    } catch (error) {
      target?.dispose();
      throw error;
    }
    const output = target ? target.tensor() : tf.tensor(result.output.data, result.output.shape, 'float32');
    const scores = result.weights ? () => tf.tensor(result.weights.data, result.weights.shape, 'float32') : () => null;
    if (!options.grad) return { output, scores };
    return { output, scores, result, backward: (dy) => this.#backward(result, dy, Boolean(value), Boolean(key)) };
  }

  // The gradients for dLoss/dOutput `dy`: inputs as forward got them (without a key the value's
  // sums both roles), parameters in Keras' layout by Keras' weight name.
  #backward(result, dy, hasValue, hasKey) {
    const tf = this.#tf;
    const g = result.backward({ data: floats(tf, dy), shape: dy.shape });
    const inputs = !hasValue ? [g.query] : hasKey ? [g.query, g.value, g.key] : [g.query, sum(g.value, g.key)];
    const asTensors = inputs.map((t) => tf.tensor(t.data, t.shape, 'float32'));
    if (this.#quantized) return { inputs: asTensors, params: null };
    const params = kerasLayoutFromStateDict(g.params, this.#sizes);
    const shapes = kerasWeightShapes(this.#sizes);
    return {
      inputs: asTensors,
      params: Object.fromEntries(Object.entries(params).map(([name, data]) => [name, tf.tensor(data, shapes[name], 'float32')])),
    };
  }

  dispose() {
    this.#layer.dispose();
    this.#loaded = null;
  }
}
