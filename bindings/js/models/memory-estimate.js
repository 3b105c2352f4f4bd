// What a checkpoint needs of the wasm heap at a precision, from its headers and config alone (no
// weight read): the matrices packed in the weightDtype (as src/mha/layer/linear_layer.hpp's packed_bytes
// counts them: panels padded to 32 columns, scales, biases), the KV caches for `contextLength`
// tokens, and the work of the load's largest matrix or of a 128-row product, whichever is larger.
// loadModel refuses, before reading any weight, a model whose total exceeds what the module can
// still hold; 'auto' takes the most precise dtype, at most the stored one, that fits. No DOM.

export const WEIGHT_DTYPES = ['f32', 'f16', 'int8', 'q4'];
const GiB = 2 ** 30;
/** Rows of the product the work is sized for (a prompt's prefill); longer runs check their own. */
const WORK_ROWS = 128;
/** The allocator's and the runtime's own share, and the round-off of the bounds below. */
const SLACK = 32 * 2 ** 20;

const pad32 = (n) => Math.ceil(n / 32) * 32;

/** Bytes a [rows, cols] matrix holds packed in `dtype` (an upper bound, as packed_bytes). */
export function packedBytes(dtype, rows, cols) {
  const padded = pad32(rows), bias = 4 * padded;
  switch (dtype) {
    case 'f16': return 2 * padded * cols + bias;
    case 'int8': return padded * (cols + (cols % 2)) + 4 * padded + bias;
    case 'q4': {
      const blocks = Math.ceil(cols / 32);
      return 16 * padded * blocks + 4 * padded * blocks + bias;
    }
    default: return 4 * padded * cols + bias;
  }
}

/** The dtypes 'auto' tries, most precise first: the stored precision, then int8, then q4. */
export function autoCandidates(storedDtype) {
  return storedDtype === 'F32' ? WEIGHT_DTYPES : WEIGHT_DTYPES.slice(1);
}

/** Bytes one stored element takes. */
const storedElementBytes = (dtype) => (dtype === 'F32' ? 4 : 2);

/**
 * { weights, caches, work, total } in bytes for `checkpoint` (openCheckpoint's) held in
 * `weightDtype`, with caches for `contextLength` tokens, and `parameters` (the matrices' and
 * vectors' element count).
 */
export function memoryAt(checkpoint, weightDtype, contextLength) {
  const a = checkpoint.architecture;
  let weights = 0, largestLoad = 0, parameters = 0;
  for (const tensor of Object.values(checkpoint.tensors)) {
    const count = tensor.shape.reduce((n, d) => n * d, 1);
    parameters += count;
    if (tensor.shape.length !== 2) continue;  // (norms and biases stay in JavaScript)
    const [rows, cols] = tensor.shape;
    weights += packedBytes(weightDtype, rows, cols);
    // Loading it holds its stored bits, the canonical matrix (or a float32 one) and the panels.
    const staged = count * storedElementBytes(checkpoint.dtype);
    const canonical = weightDtype === 'f32' ? (checkpoint.dtype === 'F32' ? 0 : 4 * count) : packedBytes(weightDtype, rows, cols);
    largestLoad = Math.max(largestLoad, staged + canonical);
  }
  const caches = a.encoder ? 0 : 2 * 4 * a.numLayers * a.numKvHeads * a.headDim * contextLength;
  const widest = Math.max(a.vocabSize, (a.mlp?.gated ? 2 : 1) * (a.hiddenDim ?? 0), 3 * a.embedDim);
  const work = Math.max(largestLoad, 4 * WORK_ROWS * (widest + a.embedDim) * 2) + SLACK;
  return { weights, caches, work, total: weights + caches + work, parameters };
}

const gib = (bytes) => `${(bytes / GiB).toFixed(2)} GiB`;

/**
 * The estimate for `weightDtype` ('f32' | 'f16' | 'int8' | 'q4' | 'auto' | undefined: the stored
 * precision) against `available` bytes: { weightDtype (resolved), storedDtype, parameters,
 * contextLength, bytes: { weights, caches, work, total }, available, fits, byDtype: { dtype: total } }.
 */
export function estimateCheckpoint(checkpoint, { weightDtype, contextLength, available }) {
  const stored = checkpoint.dtype === 'F32' ? 'f32' : 'f16';
  const byDtype = Object.fromEntries(WEIGHT_DTYPES.map((d) => [d, memoryAt(checkpoint, d, contextLength).total]));
  let chosen = weightDtype ?? stored;
  if (chosen === 'auto') chosen = autoCandidates(checkpoint.dtype).find((d) => byDtype[d] <= available) ?? 'q4';
  const { parameters, ...bytes } = memoryAt(checkpoint, chosen, contextLength);
  return {
    weightDtype: chosen, storedDtype: checkpoint.dtype, parameters, contextLength, bytes, available,
    fits: bytes.total <= available, byDtype,
  };
}

/** The Error a load that cannot fit throws, before any weight is read: how much it needs and how much there is. */
export function tooBigError(what, estimate, inUse) {
  const { weightDtype, bytes, available, byDtype, contextLength } = estimate;
  const smaller = WEIGHT_DTYPES.slice(WEIGHT_DTYPES.indexOf(weightDtype) + 1).filter((d) => byDtype[d] <= available);
  return new RangeError(`${what}: the model needs ${gib(bytes.total)} of wasm memory at weightDtype '${weightDtype}' `
    + `(weights ${gib(bytes.weights)}, KV caches ${gib(bytes.caches)} for ${contextLength} tokens, work ${gib(bytes.work)}); `
    + `the module can hold ${gib(available + inUse)}, of which ${gib(inUse)} is in use, leaving ${gib(available)}`
    + (smaller.length ? `; weightDtype ${smaller.map((d) => `'${d}' (${gib(byDtype[d])})`).join(' or ')} would fit` : '; no weightDtype fits (a smaller contextLength lowers the caches)'));
}
