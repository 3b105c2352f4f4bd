// "Bring your own": a user's token embeddings (JSON or .npy) and nn.MultiheadAttention state dict
// (.safetensors) -> one self-attention layer whose weights the page shows like the default model's.
// No DOM here: the worker runs it and Node tests it. Every problem is a TypeError/RangeError whose
// message the page shows as is, so it names the file and what was expected.
import { zPatch } from './z-patch.js';

const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"
const NPY_DTYPES = { '<f4': Float32Array, '<f8': Float64Array, '<i4': Int32Array, '<i8': BigInt64Array, '<f2': null };

/** Parses a NumPy .npy file holding a 2-D (or [1, L, E]) little-endian float array. */
export function parseNpy(bytes, what = 'embeddings .npy') {
  const file = new Uint8Array(bytes);
  if (file.length < 10 || NPY_MAGIC.some((b, i) => file[i] !== b)) {
    throw new TypeError(`${what}: not a .npy file (it must start with "\\x93NUMPY")`);
  }
  const major = file[6];
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const headerStart = major === 1 ? 10 : 12;
  if (headerStart + headerLength > file.length) throw new RangeError(`${what}: the header runs past the end of the file`);
  const header = new TextDecoder().decode(file.subarray(headerStart, headerStart + headerLength));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (!descr || !fortran || shapeText === undefined) throw new TypeError(`${what}: cannot read the header ${JSON.stringify(header.trim())}`);
  const Kind = NPY_DTYPES[descr];
  if (!Kind) throw new TypeError(`${what}: dtype ${descr} is not supported; save float32 or float64 (e.g. arr.astype('float32'))`);
  if (fortran === 'True') throw new TypeError(`${what}: Fortran-ordered arrays are not supported; save np.ascontiguousarray(arr)`);
  const shape = shapeText.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const count = shape.reduce((n, d) => n * d, 1);
  const dataStart = headerStart + headerLength;
  if (file.length - dataStart !== count * Kind.BYTES_PER_ELEMENT) {
    throw new RangeError(`${what}: shape [${shape}] needs ${count * Kind.BYTES_PER_ELEMENT} data bytes, the file has ${file.length - dataStart}`);
  }
  const data = new Kind(file.slice(dataStart).buffer);
  return { shape, data: Float32Array.from(data, Number) };
}

/**
 * Parses embeddings JSON: [[...], ...] (L rows of E numbers), or
 * { "embeddings": [[...]], "tokens"?: [L labels], "padding"?: [L booleans: true = padding] }.
 */
export function parseEmbeddingsJson(text, what = 'embeddings JSON') {
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new TypeError(`${what}: not valid JSON (${error.message})`);
  }
  const rows = Array.isArray(parsed) ? parsed : parsed?.embeddings;
  if (!Array.isArray(rows) || rows.length === 0 || !rows.every(Array.isArray)) {
    throw new TypeError(`${what}: expected [[numbers], ...] or { "embeddings": [[numbers], ...] }, L rows of E numbers`);
  }
  const E = rows[0].length;
  const data = new Float32Array(rows.length * E);
  rows.forEach((row, i) => {
    if (row.length !== E) throw new RangeError(`${what}: row ${i} has ${row.length} numbers, row 0 has ${E}`);
    row.forEach((v, j) => {
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`${what}: row ${i}, column ${j} is not a finite number`);
      data[i * E + j] = v;
    });
  });
  const result = { shape: [rows.length, E], data };
  if (!Array.isArray(parsed)) {
    if (parsed.tokens !== undefined) {
      if (!Array.isArray(parsed.tokens) || parsed.tokens.length !== rows.length) {
        throw new RangeError(`${what}: "tokens" must be an array of ${rows.length} labels`);
      }
      result.labels = parsed.tokens.map(String);
    }
    if (parsed.padding !== undefined) {
      if (!Array.isArray(parsed.padding) || parsed.padding.length !== rows.length) {
        throw new RangeError(`${what}: "padding" must be an array of ${rows.length} booleans`);
      }
      result.padding = Uint8Array.from(parsed.padding, (p) => (p ? 1 : 0));
    }
  }
  return result;
}

/** Embeddings from a file's name and bytes: .npy or JSON. Result shape is [L, E]. */
export function parseEmbeddings(name, bytes) {
  const embeddings = /\.npy$/i.test(name) ? parseNpy(bytes, `${name}`)
    : parseEmbeddingsJson(new TextDecoder().decode(bytes), `${name}`);
  if (embeddings.shape.length === 3 && embeddings.shape[0] === 1) embeddings.shape = embeddings.shape.slice(1);
  if (embeddings.shape.length !== 2 || embeddings.shape[0] < 1 || embeddings.shape[1] < 1) {
    throw new RangeError(`${name}: embeddings must be [L, E] (tokens x features), got [${embeddings.shape}]`);
  }
  return embeddings;
}

/** The prefixes under which a state dict holds an attention layer ("" or e.g. "encoder.layers.0.self_attn."). */
export function attentionPrefixes(tensorNames) {
  const prefixes = new Set();
  for (const name of tensorNames) {
    const match = /^(.*?)(in_proj_weight|q_proj_weight)$/.exec(name);
    if (match) prefixes.add(match[1]);
  }
  return [...prefixes];
}

/**
 * Works out the layer config from the state dict's shapes, the embedding size and the head count
 * the user chose (free head sizes, grouped-query heads, output size, sinks), plus the options of
 * today's models the user set (`variants`: rotary, slidingWindow, alibi, softcap). Self-attention
 * only: the key/value feature size must be the embedding size.
 */
export function inferConfig(stateDict, embedDim, numHeads, what = 'state dict', variants = {}) {
  const shapes = Object.fromEntries(Object.entries(stateDict).map(([k, v]) => [k, v.length]));
  const E = embedDim;
  if (!Number.isInteger(numHeads) || numHeads < 1) {
    throw new RangeError(`heads: ${numHeads} must be a positive integer dividing the embedding size ${embedDim}`);
  }
  let config;
  if ('in_proj_weight' in shapes) {
    if (E % numHeads !== 0) throw new RangeError(`heads: ${numHeads} must be a positive integer dividing the embedding size ${embedDim}`);
    if (shapes.in_proj_weight !== 3 * E * E) {
      throw new RangeError(`${what}: in_proj_weight has ${shapes.in_proj_weight} values; with embeddings of size ${E} it must be [${3 * E}, ${E}]`);
    }
    config = { embedDim: E, numHeads, numKvHeads: numHeads };
  } else if ('q_proj_weight' in shapes && 'k_proj_weight' in shapes && 'v_proj_weight' in shapes) {
    const qRows = shapes.q_proj_weight / E;
    if (!Number.isInteger(qRows)) {
      throw new RangeError(`${what}: q_proj_weight must be [${E}, ${E}] (or [heads x head size, ${E}]) for embeddings of size ${E}`);
    }
    if (qRows % numHeads !== 0) {
      throw new RangeError(qRows === E ? `heads: ${numHeads} must be a positive integer dividing the embedding size ${embedDim}`
        : `heads: ${numHeads} must divide q_proj_weight's ${qRows} rows`);
    }
    const headDim = qRows / numHeads;
    const kvRows = shapes.k_proj_weight / E;
    if (!Number.isInteger(kvRows) || kvRows % headDim !== 0 || numHeads % (kvRows / headDim) !== 0) {
      throw new RangeError(`${what}: k_proj_weight has ${shapes.k_proj_weight} values; it must be [numKvHeads * ${headDim}, ${E}] `
        + `with numKvHeads dividing ${numHeads}`);
    }
    const numKvHeads = kvRows / headDim;
    const valueHeadDim = shapes.v_proj_weight / E / numKvHeads;
    const outputDim = shapes['out_proj.weight'] / (numHeads * valueHeadDim);
    if (!Number.isInteger(valueHeadDim) || !Number.isInteger(outputDim)) {
      throw new RangeError(`${what}: v_proj_weight [numKvHeads * valueHeadDim, ${E}] and out_proj.weight [outputDim, numHeads * valueHeadDim] do not fit ${numHeads} heads`);
    }
    config = { embedDim: E, numHeads, numKvHeads, headDim, valueHeadDim, outputDim };
  } else {
    throw new TypeError(`${what}: no in_proj_weight or q_proj_weight/k_proj_weight/v_proj_weight found`);
  }
  config.bias = 'in_proj_bias' in shapes;
  if ('sinks' in shapes) config.sinks = true;
  if (variants.rotaryDim) {  // -1: the whole head
    const dim = variants.rotaryDim > 0 ? variants.rotaryDim : (config.headDim ?? E / numHeads);
    config.rotary = { dim, interleaved: Boolean(variants.rotaryInterleaved) };
  }
  if (variants.slidingWindow > 0) config.slidingWindow = variants.slidingWindow;
  if (variants.alibi) config.alibi = true;
  if (variants.softcap > 0) config.softcap = variants.softcap;
  return config;
}

/** The layer keys a state dict may hold (the rest of a model's file is ignored). */
export const LAYER_KEYS = ['in_proj_weight', 'q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'in_proj_bias',
  'out_proj.weight', 'out_proj.bias', 'sinks'];

/** Presets of the "Model family" select: the options those families' attention layers use. */
export const FAMILY_PRESETS = {
  pytorch: { causal: false, rotaryDim: 0, rotaryInterleaved: false, slidingWindow: 0, alibi: false, softcap: 0 },
  llama: { causal: true, rotaryDim: -1, rotaryInterleaved: false, slidingWindow: 0, alibi: false, softcap: 0 },
  mistral: { causal: true, rotaryDim: -1, rotaryInterleaved: false, slidingWindow: 4096, alibi: false, softcap: 0 },
  gemma2: { causal: true, rotaryDim: -1, rotaryInterleaved: false, slidingWindow: 0, alibi: false, softcap: 50 },
  bloom: { causal: true, rotaryDim: 0, rotaryInterleaved: false, slidingWindow: 0, alibi: true, softcap: 0 },
  gptj: { causal: true, rotaryDim: 64, rotaryInterleaved: true, slidingWindow: 0, alibi: false, softcap: 0 },
};

/**
 * Builds the user's layer and runs self-attention on their embeddings (forwardAsync: the same on
 * the wasm module and the WebGPU one, capture and patch included).
 * @param mha the loaded package (either backend); stateDict: name -> Float32Array (prefix already removed);
 *   capture: also return the steps (docs/steps.md); ablated: heads whose z is zeroed; patched:
 *   heads whose z is the layer's z on `patchFrom`, a second embeddings of the same [L, E]
 *   (parseEmbeddings; its own padding, if any, masks its keys): activation patching
 */
export async function runCustomLayer(mha, { embeddings, stateDict, numHeads, causal, variants = {}, capture = false, ablated = [], patched = [], patchFrom = null }) {
  const [L, E] = embeddings.shape;
  const config = inferConfig(stateDict, E, numHeads, 'state dict', variants);
  if (patched.length && !patchFrom) throw new TypeError('patch: choose a second embeddings file to patch the head\'s z from');
  if (patched.length && patchFrom.shape.join() !== embeddings.shape.join()) {
    throw new RangeError(`patch: the second embeddings are [${patchFrom.shape.join(', ')}]; patching needs the shape of the embeddings shown [${L}, ${E}]`);
  }
  const layer = new mha.MultiHeadAttention(config);
  try {
    layer.loadStateDict(stateDict);
    const options = (input) => ({ causal, ...(input.padding && { keyPaddingMask: { data: input.padding, shape: [L] } }) });
    const { numHeads: H, valueHeadDim: Dv } = layer.config;
    // The Steps view's changes: zeros in the ablated heads' z, the second embeddings' z in the patched heads'.
    const other = patched.length
      ? (await layer.forwardAsync({ data: patchFrom.data, shape: [L, E] }, null, null, { ...options(patchFrom), capture: ['z'] })).captured.z.data : null;
    const patch = zPatch(ablated, patched, other, L, H, Dv);
    const started = performance.now();
    const { output, weights, captured } = await layer.forwardAsync({ data: embeddings.data, shape: [L, E] }, null, null, {
      ...options(embeddings), needWeights: true, averageWeights: false, ...(capture && { capture: true }), ...(patch && { patch }),
    });
    const wasmMs = performance.now() - started;
    const steps = capture ? { input: embeddings.data, captured } : {};
    return { config: layer.config, layers: [{ weights: weights.data, output: output.data, ...steps }], wasmMs };
  } finally {
    layer.dispose();
  }
}
