// mha.Linear: nn.Linear whose weights stay in wasm memory between calls (src/mha/layer/linear_layer.hpp),
// packed once as the attention layers' projections are, in float32, float16, int8 or q4 (the
// formats of docs/quantized.md, on the same kernels). The weight comes as float32 or as a
// checkpoint's 16-bit bits (f16 or bf16) and is converted in wasm a row at a time, so 16-bit
// never passes through a float32 copy. linear() (linear.js) copies its weight in on every call;
// this is for weights read again and again (a model's MLPs, its unembedding, its embedding rows).
import { nameErrorsByCall } from '../api/errors.js';
import { constructedHandle, throwHandleError } from './handle-errors.js';
import { copyOutFloats, copyOutFloatsInto, HeapScope, viewsHeap } from './heap.js';
import { leakRegistry } from './leak-warning.js';
import { watchMemoryGrowth } from './memory-growth.js';
import {
  checkBoolean, checkInteger, checkKnownKeys, checkPlainObject, checkTensor, describe,
} from '../api/validate.js';

const CONFIG_KEYS = ['inFeatures', 'outFeatures', 'bias', 'weightDtype'];
const WEIGHT_DTYPES = ['f32', 'f16', 'int8', 'q4'];
const LOAD_KEYS = ['weight', 'bias', 'weightFormat'];
/** How a Uint16Array weight's bits are read. */
const HALF_FORMATS = ['f16', 'bf16'];
const FORWARD_OPTIONS = ['out'];

const shapeText = (shape) => `[${shape.join(', ')}]`;

// (as layer.js: `using linear = new mha.Linear(...)`)
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

/** A Linear garbage-collected without dispose(): free its handle, and say so once. */
const leakedLinears = leakRegistry('mha-wasm: a Linear was garbage-collected without dispose(); '
  + 'its wasm memory was freed late. Call linear.dispose() (or use `using`) when done with it.', (handle) => handle.delete());

/** Makes the Linear class bound to one loaded wasm module (its errors start with the call's name). */
export function defineLinearLayer(module) {
  watchMemoryGrowth(module);
  return nameErrorsByCall(class Linear {
    #handle;
    #config;

    constructor(config) {
      checkPlainObject('Linear: config', config);
      checkKnownKeys('config', config, CONFIG_KEYS);
      checkInteger('inFeatures', config.inFeatures);
      checkInteger('outFeatures', config.outFeatures);
      checkBoolean('bias', config.bias);
      const weightDtype = config.weightDtype ?? 'f32';
      if (!WEIGHT_DTYPES.includes(weightDtype)) {
        throw new TypeError(`weightDtype must be 'f32', 'f16', 'int8' or 'q4' (how the weight is stored), got ${describe(config.weightDtype)}`);
      }
      this.#config = Object.freeze({
        inFeatures: config.inFeatures, outFeatures: config.outFeatures, bias: config.bias ?? true, weightDtype,
      });
      const handle = constructedHandle(new module.LinearHandle(config.inFeatures, config.outFeatures, this.#config.bias, weightDtype), 'Linear');
      this.#handle = handle;
      leakedLinears.register(this, handle, this);
    }

    #live(method) {
      if (!this.#handle) throw new TypeError(`Linear.${method}: this layer was disposed`);
      return this.#handle;
    }

    /** { inFeatures, outFeatures, bias, weightDtype }, defaults filled in. */
    get config() {
      this.#live('config');
      return this.#config;
    }

    /** Bytes the packed weight and bias hold in wasm memory (0 before loadWeights). */
    get byteSize() {
      return this.#live('byteSize').weightBytes();
    }

    /** True until dispose() is called. */
    get alive() {
      return this.#handle !== null;
    }

    /**
     * weight [outFeatures, inFeatures] (nn.Linear's layout): a Float32Array, or a Uint16Array of
     * 16-bit bits as safetensors stores them, binary16 (`weightFormat` 'f16', the default) or
     * bfloat16 ('bf16'). Any of them loads into any weightDtype (rounded or quantized in wasm).
     * bias: a Float32Array [outFeatures] when the layer has one. Returns the layer.
     */
    loadWeights(weights) {
      const handle = this.#live('loadWeights');
      checkPlainObject('loadWeights: weights', weights);
      checkKnownKeys('weights', weights, LOAD_KEYS);
      const { inFeatures, outFeatures, bias: hasBias } = this.#config;
      const shape = `[outFeatures, inFeatures] = [${outFeatures}, ${inFeatures}]`;
      const { weight, bias } = weights;
      const half = weight instanceof Uint16Array;
      if (!(weight instanceof Float32Array) && !half) {
        throw new TypeError(`weights.weight must be a Float32Array or a Uint16Array (f16 / bf16 bits) of shape ${shape}, got ${describe(weight)}`);
      }
      const format = weights.weightFormat ?? (half ? 'f16' : 'f32');
      if (half ? !HALF_FORMATS.includes(format) : format !== 'f32') {
        throw new TypeError(`weights.weightFormat must be ${half ? "'f16' or 'bf16' for a Uint16Array" : "'f32' (or left out) for a Float32Array"}, got ${describe(weights.weightFormat)}`);
      }
      if (weight.length !== outFeatures * inFeatures) {
        throw new RangeError(`weights.weight: expected ${outFeatures * inFeatures} elements (shape ${shape}), got ${weight.length}`);
      }
      if (hasBias) {
        if (!(bias instanceof Float32Array)) {
          throw new TypeError(`weights.bias must be a Float32Array [outFeatures] = [${outFeatures}] (the layer has bias: true), got ${describe(bias)}`);
        }
        if (bias.length !== outFeatures) throw new RangeError(`weights.bias: expected ${outFeatures} floats (outFeatures), got ${bias.length}`);
      } else if (bias !== undefined && bias !== null) {
        throw new TypeError(`weights.bias: the layer was made with bias: false, got ${describe(bias)}`);
      }
      // The memory budget first, so weights that cannot fit allocate nothing.
      if (!handle.checkLoad(weight.byteLength, format)) throwHandleError(handle, 'loadWeights');
      const scope = new HeapScope(module);
      try {
        const w = scope.copyIn(weight);
        const b = hasBias ? scope.copyIn(bias) : 0;
        if (!handle.load(w, format, b)) throwHandleError(handle, 'loadWeights');
      } finally {
        scope.free();
      }
      return this;
    }

    /**
     * Rows `ids` of the weight as float32 [ids.length, inFeatures] (dequantized): an embedding
     * table's lookup, with the table kept once, in its weightDtype, in wasm memory.
     */
    rows(ids) {
      const handle = this.#live('rows');
      const { inFeatures, outFeatures } = this.#config;
      if (!(Array.isArray(ids) || ids instanceof Int32Array)) {
        throw new TypeError(`rows: ids must be an array or an Int32Array of row indices in [0, ${outFeatures}), got ${describe(ids)}`);
      }
      for (let i = 0; i < ids.length; i++) {
        if (!Number.isInteger(ids[i]) || ids[i] < 0 || ids[i] >= outFeatures) {
          throw new RangeError(`rows: ids[${i}] = ${ids[i]} is not a row index in [0, ${outFeatures}) (outFeatures)`);
        }
      }
      const scope = new HeapScope(module);
      try {
        const at = scope.copyIn(Int32Array.from(ids));
        const out = scope.allocate(4 * ids.length * inFeatures);
        if (!handle.rows(at, ids.length, out)) throwHandleError(handle, 'rows');
        return copyOutFloats(module, out, ids.length * inFeatures);
      } finally {
        scope.free();
      }
    }

    /**
     * y = x W^T + b: input { data: Float32Array, shape [..., inFeatures] } -> { data, shape
     * [..., outFeatures] }; data is options.out (the caller's Float32Array of that size) when given.
     */
    forward(input, options = {}) {
      const handle = this.#live('forward');
      const { inFeatures, outFeatures } = this.#config;
      checkTensor('forward: input', input, { expected: '[..., inFeatures]' });
      if (input.shape.length < 1 || input.shape[input.shape.length - 1] !== inFeatures) {
        throw new RangeError(`forward: input must have shape [..., inFeatures] with inFeatures = ${inFeatures}, got ${shapeText(input.shape)}`);
      }
      checkPlainObject('forward: options', options);
      checkKnownKeys('forward: options', options, FORWARD_OPTIONS);
      const rows = input.data.length / inFeatures;
      const outputShape = [...input.shape.slice(0, -1), outFeatures];
      const { out } = options;
      if (out !== undefined && out !== null) {
        if (!(out instanceof Float32Array)) throw new TypeError(`forward: options.out must be a Float32Array, got ${describe(out)}`);
        if (viewsHeap(module, out)) {
          throw new TypeError('forward: options.out must be the caller\'s own Float32Array, not a view of the module\'s WebAssembly memory');
        }
        if (out.length !== rows * outFeatures) {
          throw new RangeError(`forward: options.out: expected ${rows * outFeatures} floats (shape ${shapeText(outputShape)}), got ${out.length}`);
        }
      }
      if (!handle.checkForward(rows)) throwHandleError(handle, 'forward');
      const scope = new HeapScope(module);
      try {
        const x = scope.copyIn(input.data);
        const y = scope.allocate(4 * rows * outFeatures);
        if (!handle.forward(x, y, rows)) throwHandleError(handle, 'forward');
        return { data: out ? copyOutFloatsInto(module, y, out) : copyOutFloats(module, y, rows * outFeatures), shape: outputShape };
      } finally {
        scope.free();
      }
    }

    /** Frees the layer's wasm memory. Safe to call more than once. */
    dispose() {
      if (this.#handle) {
        leakedLinears.unregister(this);
        this.#handle.delete();
        this.#handle = null;
      }
    }

    /** The same as dispose(), for `using` declarations. */
    [disposeSymbol]() {
      this.dispose();
    }
  }, 'Linear', ['loadWeights', 'forward', 'rows']);
}
