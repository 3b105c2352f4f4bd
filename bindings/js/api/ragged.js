// Ragged batches (PyTorch's nested tensors, FlashAttention's variable-length batches): sequences
// of different lengths in one call, packed without padding as { data, shape: [totalTokens, E],
// lengths }. A ragged call is split into one unbatched call per sequence ([L_i, E]), which the
// backend runs as it runs any call, and the outputs are joined back into the packed layout. So
// every backend, option and variant that works on an unbatched call works on each sequence, and
// no padded row is ever computed (docs/api.md, "Ragged batches").
import { withCallName } from './errors.js';
import { describe } from './validate.js';

/** Options that have no per-sequence meaning, and why each is refused (checked before anything runs). */
const REFUSED = {
  keyPaddingMask: 'ragged inputs need no padding mask (each sequence has its own length)',
  out: 'not with ragged inputs (the joined output has its own buffer)',
  weightsOut: 'not with ragged inputs (the weights are one tensor per sequence)',
  patch: 'not with ragged inputs (patched steps have one batch shape); patch each sequence\'s call',
  staticK: 'not with ragged inputs (static keys are per batch row); call each sequence with its own',
  staticV: 'not with ragged inputs (static values are per batch row); call each sequence with its own',
};

/** Whether `tensor` is in the ragged form (it has `lengths`). */
export function isRagged(tensor) {
  return tensor !== null && typeof tensor === 'object' && !ArrayBuffer.isView(tensor) && 'lengths' in tensor;
}

/**
 * A ragged tensor's row offsets: checks { data, shape: [totalTokens, width], lengths } and returns
 * the lengths as numbers. `count`, when given, is the number of sequences it must hold.
 */
function readRagged(name, tensor, count) {
  const { data, shape, lengths } = tensor;
  const form = `{ data, shape: [totalTokens, ${name === 'query' ? 'embedDim' : name === 'key' ? 'kdim' : 'vdim'}], lengths }`;
  if (!ArrayBuffer.isView(data)) throw new TypeError(`${name}.data: a ragged ${name} ${form} holds a Float32Array, got ${describe(data)}`);
  if (!Array.isArray(shape) || shape.length !== 2 || !shape.every((d) => Number.isInteger(d) && d >= 1)) {
    throw new RangeError(`${name}.shape: a ragged ${name} has shape [totalTokens, width] (2 positive integers), `
      + `got ${Array.isArray(shape) ? `[${shape.join(', ')}]` : describe(shape)}`);
  }
  if (!(lengths instanceof Int32Array) && !Array.isArray(lengths)) {
    throw new TypeError(`${name}.lengths must be an Int32Array or an array of numbers (one length per sequence), got ${describe(lengths)}`);
  }
  const list = [...lengths];
  if (list.length === 0) throw new RangeError(`${name}.lengths: a ragged batch needs at least one sequence, got none`);
  const bad = list.findIndex((n) => !Number.isInteger(n) || n < 1);
  if (bad >= 0) throw new RangeError(`${name}.lengths[${bad}] must be a positive integer (a sequence's length), got ${typeof list[bad] === 'number' ? list[bad] : describe(list[bad])}`);
  const total = list.reduce((a, b) => a + b, 0);
  if (total !== shape[0]) {
    throw new RangeError(`${name}.lengths: they sum to ${total}, but shape [${shape.join(', ')}] has ${shape[0]} rows (totalTokens)`);
  }
  if (data.length !== shape[0] * shape[1]) {
    throw new RangeError(`${name}.data: shape [${shape.join(', ')}] needs ${shape[0] * shape[1]} elements, but data has ${data.length}`);
  }
  if (count !== undefined && list.length !== count) {
    throw new RangeError(`${name}.lengths: one length per query sequence (${count}), got ${list.length}`);
  }
  return list;
}

/** Sequence i of a ragged tensor, as an unbatched { data, shape: [L_i, width] } (a view, no copy). */
function sequences({ data, shape: [, width] }, lengths) {
  let row = 0;
  return lengths.map((n) => {
    const part = { data: data.subarray(row * width, (row + n) * width), shape: [n, width] };
    row += n;
    return part;
  });
}

/** Unbatched tensors [L_i, ...] joined into one ragged { data, shape: [sum L_i, width], lengths }. */
function join(parts) {
  const width = parts[0].shape.at(-1);
  const lengths = Int32Array.from(parts, (p) => p.shape[0]);
  const data = new parts[0].data.constructor(parts.reduce((n, p) => n + p.data.length, 0));
  let at = 0;
  for (const p of parts) {
    data.set(p.data, at);
    at += p.data.length;
  }
  return { data, shape: [data.length / width, width], lengths };
}

/**
 * The option `name` given as a list with one `item` per sequence (`each`: what each is, for the
 * message), or a list of `count` undefineds when it is not given.
 */
function readPerSequenceList(name, list, count, item, each) {
  if (list == null) return Array(count).fill(undefined);
  if (!Array.isArray(list)) {
    throw new TypeError(`${name}: with ragged inputs, a list of ${item}s, one per sequence (${each}), got ${describe(list)}`);
  }
  if (list.length !== count) throw new RangeError(`${name}: one ${item} per sequence (${count}), got ${list.length}`);
  return list;
}

/** Each sequence's share of attnMask: a list, one [L_i, S_i] or [H, L_i, S_i] mask per sequence. */
function readMaskList(attnMask, count) {
  return readPerSequenceList('attnMask', attnMask, count, 'mask', '[L_i, S_i] or [numHeads, L_i, S_i] each');
}

/** Each sequence's cache: a list, one cache per sequence (a cache holds rows of one length). */
function readCacheList(cache, count) {
  const caches = readPerSequenceList('cache', cache, count, 'cache', 'each from createCache(), batch 1');
  if (cache != null && new Set(caches).size !== count) throw new TypeError('cache: each sequence needs a cache of its own (the list repeats one)');
  return caches;
}

/** The error of sequence i, saying which one. */
function inSequence(error, i, lengths) {
  if (error instanceof Error) {
    const start = lengths.slice(0, i).reduce((a, b) => a + b, 0);
    error.message += ` (in sequence ${i} of the ragged batch, rows ${start} to ${start + lengths[i] - 1})`;
  }
  return error;
}

/**
 * A ragged forward call, split: `calls` holds one [query, key, value, options] per sequence.
 * run / runAsync give each to the backend's own forward and join the results.
 */
export class RaggedCall {
  constructor(calls, lengths) {
    this.calls = calls;
    this.lengths = lengths;
  }

  /** The backend's synchronous forward on each sequence, joined. */
  run(forwardOne) {
    const results = [];
    try {
      for (const [i, args] of this.calls.entries()) {
        try {
          results.push(forwardOne(...args));
        } catch (error) {
          throw inSequence(error, i, this.lengths);
        }
      }
    } catch (error) {
      RaggedCall.#release(results);
      throw error;
    }
    return this.#join(results);
  }

  /** The backend's forwardAsync on each sequence, one after another, joined. */
  async runAsync(forwardOne) {
    const results = [];
    try {
      for (const [i, args] of this.calls.entries()) {
        results.push(await forwardOne(...args).catch((error) => { throw inSequence(error, i, this.lengths); }));
      }
    } catch (error) {
      RaggedCall.#release(results);
      throw error;
    }
    return this.#join(results);
  }

  /** After a failed sequence: the grad results made before it hold saved state; free it. */
  static #release(results) {
    for (const r of results) r.release?.();
  }

  /** The sequences' results as one: { output (joined), weights (a list, or null), captured? (a list) }, with backward when they have it. */
  #join(results) {
    const joined = { output: join(results.map((r) => r.output)), weights: results[0].weights ? results.map((r) => r.weights) : null };
    if (results[0].captured) joined.captured = results.map((r) => r.captured);
    if (typeof results[0].backward === 'function' || typeof results[0].backwardAsync === 'function') {
      return new RaggedTrainingResult(results, joined);
    }
    return joined;
  }
}

/**
 * forward's result with grad for a ragged call: the joined output, and backward(dOut) taking dOut
 * in the same packed layout; the inputs' gradients come back packed, the parameters' summed over
 * the sequences (each sequence's loss term adds to them).
 */
export class RaggedTrainingResult {
  #results;

  /** `joined`: RaggedCall's { output, weights, captured? } of the sequences' `results`. */
  constructor(results, joined) {
    this.#results = results;
    Object.assign(this, joined);
  }

  #dOuts(dOut) {
    const { shape } = this.output;
    if (dOut === null || typeof dOut !== 'object' || !(dOut.data instanceof Float32Array)) {
      throw new TypeError(`dOut must be { data: Float32Array, shape: [${shape.join(', ')}] } (dLoss/dOutput, packed as the output), `
        + `got ${dOut !== null && typeof dOut === 'object' ? `data ${describe(dOut.data)}` : describe(dOut)}`);
    }
    if (dOut.shape !== undefined && (!Array.isArray(dOut.shape) || dOut.shape.join() !== shape.join())) {
      throw new RangeError(`dOut: expected the output's shape [${shape.join(', ')}], got ${Array.isArray(dOut.shape) ? `[${dOut.shape.join(', ')}]` : describe(dOut.shape)}`);
    }
    if (dOut.data.length !== this.output.data.length) {
      throw new RangeError(`dOut: shape [${shape.join(', ')}] needs ${this.output.data.length} elements, but data has ${dOut.data.length}`);
    }
    return sequences({ data: dOut.data, shape }, [...this.output.lengths]);
  }

  /** The per-sequence gradients, joined. */
  static #joinGradients(grads) {
    const packed = (name) => (grads[0][name] ? join(grads.map((g) => g[name])) : null);
    const result = { query: packed('query'), key: packed('key'), value: packed('value') };
    // (params is a getter: a quantized layer's result throws on it, saying why.)
    let params;
    Object.defineProperty(result, 'params', {
      enumerable: true,
      get() {
        params ??= Object.fromEntries(Object.entries(grads[0].params).map(([name, first]) => {
          const sum = Float32Array.from(first);
          for (const g of grads.slice(1)) g.params[name].forEach((x, i) => { sum[i] += x; });
          return [name, sum];
        }));
        return params;
      },
    });
    return result;
  }

  backward(dOut) {
    let dOuts;
    try {
      dOuts = this.#dOuts(dOut);
    } catch (error) {
      throw withCallName(error, 'backward');
    }
    return RaggedTrainingResult.#joinGradients(this.#results.map((r, i) => r.backward(dOuts[i])));
  }

  async backwardAsync(dOut) {
    let dOuts;
    try {
      dOuts = this.#dOuts(dOut);
    } catch (error) {
      throw withCallName(error, 'backwardAsync');
    }
    const grads = [];
    for (const [i, r] of this.#results.entries()) grads.push(await r.backwardAsync(dOuts[i]));
    return RaggedTrainingResult.#joinGradients(grads);
  }

  release() {
    for (const r of this.#results) r.release();
  }

  get released() {
    return this.#results.every((r) => r.released);
  }
}

/**
 * Reads a ragged call: null when neither query nor key is ragged, else a RaggedCall (every
 * option the sequences cannot share refused by name first). Key and value, when given, are ragged
 * with their own lengths, one per query sequence. attnMask and cache are lists (one per sequence),
 * positions a [totalTokens] Int32Array; a given seed seeds sequence i with seed + i.
 */
export function readRaggedCall(query, key, value, options) {
  if (!isRagged(query) && !isRagged(key) && !isRagged(value)) return null;
  if (!isRagged(query)) {
    throw new TypeError('query: a ragged key or value needs a ragged query { data, shape: [totalTokens, embedDim], lengths }');
  }
  // (Options that are not an object go to the sequences' calls as they are, which refuse them.)
  const plain = options !== null && typeof options === 'object' && !Array.isArray(options);
  const opts = plain ? options : {};
  for (const [name, why] of Object.entries(REFUSED)) {
    if (opts[name] != null) throw new TypeError(`${name}: ${why}`);
  }
  const lengths = readRagged('query', query);
  const queries = sequences(query, lengths);
  let keys = Array(lengths.length).fill(key), values = Array(lengths.length).fill(value);
  if (key != null || value != null) {
    for (const [name, tensor] of [['key', key], ['value', value]]) {
      if (!isRagged(tensor)) {
        throw new TypeError(`${name}: a ragged query takes a ragged ${name} { data, shape: [totalKeys, ${name === 'key' ? 'kdim' : 'vdim'}], `
          + 'lengths } (one length per query sequence), or null for self-attention');
      }
    }
    const keyLengths = readRagged('key', key, lengths.length);
    const valueLengths = readRagged('value', value, lengths.length);
    const differs = valueLengths.findIndex((n, i) => n !== keyLengths[i]);
    if (differs >= 0) {
      throw new RangeError(`value.lengths[${differs}] must equal key.lengths[${differs}] (${keyLengths[differs]}), got ${valueLengths[differs]}`);
    }
    keys = sequences(key, keyLengths);
    values = sequences(value, valueLengths);
  }
  const masks = readMaskList(opts.attnMask, lengths.length);
  const caches = readCacheList(opts.cache, lengths.length);
  let positions = Array(lengths.length).fill(undefined);
  if (opts.positions != null) {
    const p = opts.positions;
    if (!(p?.data instanceof Int32Array) || !Array.isArray(p.shape) || p.shape.length !== 1 || p.shape[0] !== query.shape[0]
      || p.data.length !== query.shape[0]) {
      throw new TypeError(`positions: with ragged inputs, { data: Int32Array, shape: [${query.shape[0]}] } (one per token, `
        + `packed as the query), got ${Array.isArray(p?.shape) ? `shape [${p.shape.join(', ')}]` : describe(p)}`);
    }
    let row = 0;
    positions = lengths.map((n) => ({ data: p.data.subarray(row, (row += n)), shape: [n] }));
  }
  const calls = queries.map((q, i) => {
    if (!plain) return [q, keys[i], values[i], options];
    const one = { ...opts };
    if (masks[i] !== undefined) one.attnMask = masks[i];
    if (caches[i] !== undefined) one.cache = caches[i];
    if (positions[i] !== undefined) one.positions = positions[i];
    if (opts.seed !== undefined && typeof opts.seed === 'number') one.seed = opts.seed + i;
    return [q, keys[i], values[i], one];
  });
  return new RaggedCall(calls, lengths);
}
