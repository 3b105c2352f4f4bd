// Fast kernels for training Embedding and Conv1D layers with tfjs (an explicit opt-in of
// mha-wasm/tfjs). tfjs 4.22's cpu backend computes Embedding's gradient (UnsortedSegmentSum) with
// one equal/multiply/sum pass per vocabulary row, and Conv1D's filter gradient
// (Conv2DBackpropFilter) through TensorBuffer.get per multiply-add; its wasm backend has neither
// kernel, so such a model cannot train there at all. These are the same sums written as one pass
// over typed arrays: a scatter-add, and a sum of outer products (the GEMM X^T dY per filter tap).
// On the cpu backend, Conv1D's forward (Conv2D) and input gradient (Conv2DBackpropInput) are
// replaced too, for Conv1D's case only (stride 1, dilation 1, a filter one row high, channels
// last): per filter tap a row-times-matrix product over contiguous rows. Other cases go to tfjs'
// own kernel. tfjs-wasm's own Conv2D and Conv2DBackpropInput are compiled code and stay. Also on
// cpu, Add when one operand is a bias along the last axes (biasAdd after Conv1D and Dense).
import { conv1dFilterGradient, conv1dForward, conv1dInputGradient } from './conv1d.js';

const UNSORTED_SEGMENT_SUM = 'UnsortedSegmentSum';
const CONV2D_BACKPROP_FILTER = 'Conv2DBackpropFilter';
const CONV2D = 'Conv2D';
const CONV2D_BACKPROP_INPUT = 'Conv2DBackpropInput';
const ADD = 'Add';
export const FAST_GRADIENT_KERNELS = Object.freeze([UNSORTED_SEGMENT_SUM, CONV2D_BACKPROP_FILTER, CONV2D, CONV2D_BACKPROP_INPUT, ADD]);
/** Kernels registered on the cpu backend only (where tfjs' own are JavaScript loops). */
const CPU_ONLY = new Set([CONV2D, CONV2D_BACKPROP_INPUT, ADD]);
const DEFAULT_BACKENDS = ['cpu', 'wasm'];

/**
 * A tensor's elements with the least copying its backend allows: cpu keeps JS typed arrays (no
 * copy); wasm keeps them in its heap (a view, valid until the backend allocates again).
 */
function elements(backend, info) {
  if (typeof backend.typedArrayFromHeap === 'function') return backend.typedArrayFromHeap(info);
  return backend.readSync(info.dataId);
}

/** A new float32 output: allocated before any input view is taken (allocation may move wasm's heap). */
function makeOutput(backend, shape) {
  const size = shape.reduce((a, b) => a * b, 1);
  if (typeof backend.typedArrayFromHeap === 'function') {  // wasm: the result lives in its heap
    const info = backend.makeOutput(shape, 'float32');
    return { info, values: () => backend.typedArrayFromHeap(info) };
  }
  const data = new Float32Array(size);
  return { info: null, values: () => data, finish: () => backend.makeTensorInfo(shape, 'float32', data) };
}

function finish(backend, output) {
  return output.info ?? output.finish();
}

/**
 * UnsortedSegmentSum(x [N..., inner...], segmentIds [N...], numSegments) -> [numSegments, inner...]:
 * out[s] = the sum of the x rows whose id is s; ids outside [0, numSegments) are dropped (TensorFlow's rule).
 */
function unsortedSegmentSum({ inputs, backend, attrs }) {
  const { x, segmentIds } = inputs;
  const { numSegments } = attrs;
  if (x.dtype !== 'float32') {
    throw new TypeError(`UnsortedSegmentSum (mha-wasm/tfjs fast gradients): x must be float32, got ${x.dtype}`);
  }
  const rows = segmentIds.shape.reduce((a, b) => a * b, 1);
  const outShape = [numSegments, ...x.shape.slice(segmentIds.shape.length)];
  const inner = outShape.slice(1).reduce((a, b) => a * b, 1);
  const output = makeOutput(backend, outShape);
  const out = output.values();
  out.fill(0);
  const xs = elements(backend, x), ids = elements(backend, segmentIds);
  for (let r = 0; r < rows; r++) {
    const s = ids[r];
    if (s < 0 || s >= numSegments) continue;
    const from = r * inner, to = s * inner;
    for (let i = 0; i < inner; i++) out[to + i] += xs[from + i];
  }
  return finish(backend, output);
}

/**
 * Conv2DBackpropFilter(x [B, H, W, Cin], dy [B, OH, OW, Cout]) -> dW [fh, fw, Cin, Cout], channels
 * last (Conv1D's layout), any stride and padding, dilation 1 (the kernel has no dilation attribute).
 * Per filter tap dW[kh, kw] = X_tap^T dY: a sum over output positions of outer products.
 */
function conv2DBackpropFilter(tf, previous) {
  return (args) => {
    const { inputs, backend, attrs } = args;
    const { x, dy } = inputs;
    const { strides, pad, dataFormat, dimRoundingMode, filterShape } = attrs;
    if (dataFormat !== undefined && dataFormat !== 'NHWC' && dataFormat !== 'channelsLast') {
      if (previous) return previous.kernelFunc(args);
      throw new Error(`Conv2DBackpropFilter (mha-wasm/tfjs fast gradients): only channels-last (NHWC) data is supported, got dataFormat '${dataFormat}'`);
    }
    const conv1D = conv1DCase(tf, CONV2D_BACKPROP_FILTER, { xShape: x.shape, filterShape, dtype: x.dtype, strides, pad, dataFormat, dimRoundingMode });
    if (conv1D.info) {  // Conv1D's case: contiguous dot products
      const output = makeOutput(backend, filterShape);
      const dW = output.values();
      conv1dFilterGradient(elements(backend, x), elements(backend, dy), dW, conv1dDims(conv1D.info));
      return finish(backend, output);
    }
    const info = tf.backend_util.computeConv2DInfo(x.shape, filterShape, strides, 1, pad, dimRoundingMode, false, 'channelsLast');
    const { batchSize, inHeight, inWidth, inChannels, outHeight, outWidth, outChannels,
      filterHeight, filterWidth, strideHeight, strideWidth } = info;
    const top = info.padInfo.top, left = info.padInfo.left;
    const output = makeOutput(backend, [filterHeight, filterWidth, inChannels, outChannels]);
    const dW = output.values();
    dW.fill(0);
    const xs = elements(backend, x), dys = elements(backend, dy);
    for (let b = 0; b < batchSize; b++) {
      for (let oh = 0; oh < outHeight; oh++) {
        for (let ow = 0; ow < outWidth; ow++) {
          const dyAt = ((b * outHeight + oh) * outWidth + ow) * outChannels;
          for (let kh = 0; kh < filterHeight; kh++) {
            const ih = oh * strideHeight + kh - top;
            if (ih < 0 || ih >= inHeight) continue;
            for (let kw = 0; kw < filterWidth; kw++) {
              const iw = ow * strideWidth + kw - left;
              if (iw < 0 || iw >= inWidth) continue;
              const xAt = ((b * inHeight + ih) * inWidth + iw) * inChannels;
              const tapAt = (kh * filterWidth + kw) * inChannels * outChannels;
              // Four input channels per pass over the dy row: one dy load feeds four accumulations.
              let ci = 0;
              for (; ci + 4 <= inChannels; ci += 4) {
                const x0 = xs[xAt + ci], x1 = xs[xAt + ci + 1], x2 = xs[xAt + ci + 2], x3 = xs[xAt + ci + 3];
                const r0 = tapAt + ci * outChannels, r1 = r0 + outChannels, r2 = r1 + outChannels, r3 = r2 + outChannels;
                for (let co = 0; co < outChannels; co++) {
                  const d = dys[dyAt + co];
                  dW[r0 + co] += x0 * d;
                  dW[r1 + co] += x1 * d;
                  dW[r2 + co] += x2 * d;
                  dW[r3 + co] += x3 * d;
                }
              }
              for (; ci < inChannels; ci++) {
                const xv = xs[xAt + ci], row = tapAt + ci * outChannels;
                for (let co = 0; co < outChannels; co++) dW[row + co] += xv * dys[dyAt + co];
              }
            }
          }
        }
      }
    }
    return finish(backend, output);
  };
}

/**
 * Conv1D's case of a Conv2D-shaped kernel, or the reason it is not: float32, channels last, a filter
 * one row high, stride 1, dilation 1. Returns { info } (computeConv2DInfo's) or { refused }.
 */
function conv1DCase(tf, kernelName, { xShape, filterShape, dtype, strides, dilations = 1, pad, dataFormat, dimRoundingMode }) {
  const pair = (v) => (Array.isArray(v) ? v : [v, v]);
  const refuse = (why) => ({ refused: `${kernelName} (mha-wasm/tfjs fast kernels): only Conv1D's case is supported (float32, channels last, `
    + `a filter 1 row high, stride 1, dilation 1), got ${why}` });
  if (dtype !== 'float32') return refuse(`dtype ${dtype}`);
  if (dataFormat !== undefined && dataFormat !== 'NHWC' && dataFormat !== 'channelsLast') return refuse(`dataFormat '${dataFormat}'`);
  if (filterShape[0] !== 1) return refuse(`a filter ${filterShape[0]} rows high`);
  if (pair(strides).some((v) => v !== 1)) return refuse(`strides ${JSON.stringify(strides)}`);
  if (pair(dilations).some((v) => v !== 1)) return refuse(`dilations ${JSON.stringify(dilations)}`);
  const info = tf.backend_util.computeConv2DInfo(xShape, filterShape, strides, 1, pad, dimRoundingMode, false, 'channelsLast');
  if (info.padInfo.top !== 0 || info.padInfo.bottom !== 0) return refuse(`padding along the height (${info.padInfo.top}, ${info.padInfo.bottom})`);
  return { info };
}

/** conv1d*'s dims from computeConv2DInfo's (Conv1D's case: the height is a batch dimension). */
const conv1dDims = (info) => ({
  rows: info.batchSize * info.inHeight, inWidth: info.inWidth, outWidth: info.outWidth, inChannels: info.inChannels,
  outChannels: info.outChannels, filterWidth: info.filterWidth, left: info.padInfo.left,
});

/** A kernel for Conv1D's case; other cases go to `previous` (tfjs' own), or are an Error where there is none. */
function conv1DKernel(tf, kernelName, previous, describe, compute) {
  return (args) => {
    const { info, refused } = conv1DCase(tf, kernelName, describe(args));
    if (refused) {
      if (previous) return previous.kernelFunc(args);
      throw new Error(refused);
    }
    return compute(args, info);
  };
}

/**
 * Conv2D(x [B, H, W, Cin], filter [1, k, Cin, Cout]) -> y [B, H, OW, Cout]: per output position,
 * y row = sum over taps of (x row at ow + tap - left) times the tap's [Cin, Cout] matrix.
 */
function conv2D(tf, previous) {
  return conv1DKernel(tf, CONV2D, previous,
    ({ inputs: { x, filter }, attrs }) => ({ xShape: x.shape, filterShape: filter.shape, dtype: x.dtype, ...attrs }),
    ({ inputs: { x, filter }, backend }, info) => {
      const output = makeOutput(backend, [info.batchSize, info.inHeight, info.outWidth, info.outChannels]);
      const y = output.values();
      conv1dForward(elements(backend, x), elements(backend, filter), y, conv1dDims(info));
      return finish(backend, output);
    });
}

/**
 * Conv2DBackpropInput(dy [B, H, OW, Cout], filter [1, k, Cin, Cout]) -> dx (attrs.inputShape):
 * dx[iw, ci] = sum over taps and output channels of dy[iw - tap + left, co] * filter[tap, ci, co].
 */
function conv2DBackpropInput(tf, previous) {
  return conv1DKernel(tf, CONV2D_BACKPROP_INPUT, previous,
    ({ inputs: { dy, filter }, attrs }) => ({ xShape: attrs.inputShape, filterShape: filter.shape, dtype: dy.dtype, ...attrs }),
    ({ inputs: { dy, filter }, backend, attrs }, info) => {
      const output = makeOutput(backend, attrs.inputShape);
      const dx = output.values();
      conv1dInputGradient(elements(backend, dy), elements(backend, filter), dx, conv1dDims(info));
      return finish(backend, output);
    });
}

/**
 * Add(a, b) where one operand is a bias: float32, its shape (leading 1s aside) the other's last
 * dimensions (what tfjs-layers' biasAdd adds after Conv1D and Dense). tfjs' cpu kernel computes
 * every broadcast element's position through indexToLoc, allocating arrays per element. The same
 * float32 sums (the same bits) as one pass; any other case goes to tfjs' own kernel.
 */
function addBias(tf, previous) {
  return (args) => {
    const { inputs: { a, b }, backend } = args;
    // small's shape without its leading 1s equals big's last dimensions (and big has at least small's rank).
    const trailing = (big, small) => {
      const dims = small.shape.slice();
      while (dims.length && dims[0] === 1) dims.shift();
      return big.shape.length >= small.shape.length && dims.length > 0 && dims.every((d, i) => d === big.shape[big.shape.length - dims.length + i]);
    };
    const sizeOf = (t) => t.shape.reduce((x, y) => x * y, 1);
    const fast = a.dtype === 'float32' && b.dtype === 'float32' && sizeOf(a) !== sizeOf(b)
      && (sizeOf(a) > sizeOf(b) ? trailing(a, b) : trailing(b, a));
    if (!fast) {
      if (previous) return previous.kernelFunc(args);
      throw new Error(`Add (mha-wasm/tfjs fast kernels): only a float32 bias along the last axes is supported, got [${a.shape}] ${a.dtype} + [${b.shape}] ${b.dtype}`);
    }
    const [big, small] = sizeOf(a) > sizeOf(b) ? [a, b] : [b, a];
    const output = makeOutput(backend, big.shape);
    const out = output.values();
    const xs = elements(backend, big), bias = elements(backend, small), n = bias.length;
    for (let at = 0; at < xs.length; at += n) for (let i = 0; i < n; i++) out[at + i] = xs[at + i] + bias[i];
    return finish(backend, output);
  };
}

const KERNEL_FACTORIES = {
  [ADD]: addBias,
  [UNSORTED_SEGMENT_SUM]: () => unsortedSegmentSum,
  [CONV2D_BACKPROP_FILTER]: conv2DBackpropFilter,
  [CONV2D]: conv2D,
  [CONV2D_BACKPROP_INPUT]: conv2DBackpropInput,
};

/**
 * Registers the fast kernels with `tf` for each backend in `backends` (default cpu and wasm), in
 * place of tfjs' own (cpu) or where tfjs has none (wasm): UnsortedSegmentSum and
 * Conv2DBackpropFilter on every backend given; Conv2D and Conv2DBackpropInput (Conv1D's case) and
 * Add (a bias along the last axes) on cpu. Returns { backends, restore() }: restore()
 * puts back what was registered before. Calling it again while registered is a no-op per backend.
 */
export function registerFastGradients(tf, { backends = DEFAULT_BACKENDS } = {}) {
  if (!tf || typeof tf.registerKernel !== 'function' || typeof tf.getKernel !== 'function') {
    throw new TypeError('registerFastGradients: pass the @tensorflow/tfjs namespace (import * as tf from \'@tensorflow/tfjs\')');
  }
  if (!Array.isArray(backends) || backends.some((b) => typeof b !== 'string')) {
    throw new TypeError(`registerFastGradients: backends must be an array of backend names, got ${JSON.stringify(backends)}`);
  }
  const saved = [];
  for (const backendName of backends) {
    for (const kernelName of FAST_GRADIENT_KERNELS) {
      if (CPU_ONLY.has(kernelName) && backendName !== 'cpu') continue;
      const previous = tf.getKernel(kernelName, backendName);
      if (previous?.fastGradientOf === 'mha-wasm') continue;
      const kernelFunc = KERNEL_FACTORIES[kernelName](tf, previous);
      if (previous) tf.unregisterKernel(kernelName, backendName);
      tf.registerKernel({ kernelName, backendName, kernelFunc, fastGradientOf: 'mha-wasm' });
      saved.push({ kernelName, backendName, previous });
    }
  }
  return {
    backends: [...backends],
    restore() {
      for (const { kernelName, backendName, previous } of saved.splice(0).reverse()) {
        tf.unregisterKernel(kernelName, backendName);
        if (previous) tf.registerKernel(previous);
      }
    },
  };
}
