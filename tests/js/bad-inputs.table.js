// The bad-input table: every row is one wrong call, the error class it must throw and the exact
// message. tests/js/bad-inputs.test.js runs each row; docs/bad-inputs.md is rendered from this
// file (node tests/js/bad-inputs.render.js), and a test checks that the two agree.
//
// Each `call(t)` gets a small kit: t.layer is a loaded layer (embedDim 8, numHeads 2) that must
// keep working after the error; t.make(config) makes a layer that is disposed after the row.
import { readSafetensors, stateDictFromSafetensors, writeSafetensors } from '../../bindings/js/index.js';

export const E = 8, H = 2;
export const f32 = (n, v = 0.1) => new Float32Array(n).fill(v);
export const stateDict = () => ({
  in_proj_weight: f32(3 * E * E), in_proj_bias: f32(3 * E), 'out_proj.weight': f32(E * E), 'out_proj.bias': f32(E),
});
export const x = (B, L, e = E) => ({ data: f32(B * L * e), shape: [B, L, e] });
const u8 = (n) => new Uint8Array(n);
const kvConfig = { embedDim: E, numHeads: H, kdim: 4 };
const kvStateDict = () => ({
  q_proj_weight: f32(64), k_proj_weight: f32(32), v_proj_weight: f32(64), in_proj_bias: f32(24),
  'out_proj.weight': f32(64), 'out_proj.bias': f32(8),
});
const safetensors = () => writeSafetensors({ w: { data: f32(4), shape: [2, 2] } });
/** A valid one-tensor file whose header is replaced by `header` (a JSON-able object or raw text). */
function withHeader(header) {
  const text = typeof header === 'string' ? header : JSON.stringify(header);
  const json = new TextEncoder().encode(text);
  const file = new Uint8Array(8 + json.length + 16);
  new DataView(file.buffer).setBigUint64(0, BigInt(json.length), true);
  file.set(json, 8);
  return file;
}

/** Runs use(r, layer) on a forward result with grad: true, then releases it (a failed backward keeps it). */
function withGrad(layer, use) {
  const r = layer.forward(x(1, 2), null, null, { grad: true });
  try {
    use(r, layer);
  } finally {
    r.release();
  }
}

export const ROWS = [
  // ---- the layer's configuration ----
  { input: 'config is a number', call: (t) => t.make(8), error: TypeError, message: 'MultiHeadAttention: config must be an object, got number 8' },
  { input: 'config is null', call: (t) => t.make(null), error: TypeError, message: 'MultiHeadAttention: config must be an object, got null' },
  { input: 'embedDim missing', call: (t) => t.make({ numHeads: 2 }), error: TypeError, message: 'MultiHeadAttention: embedDim must be a number, got undefined' },
  { input: 'embedDim is a string', call: (t) => t.make({ embedDim: '8', numHeads: 2 }), error: TypeError, message: 'MultiHeadAttention: embedDim must be a number, got string 8' },
  { input: 'embedDim not an integer', call: (t) => t.make({ embedDim: 8.5, numHeads: 2 }), error: RangeError, message: 'MultiHeadAttention: embedDim must be an integer >= 1, got 8.5' },
  { input: 'embedDim zero', call: (t) => t.make({ embedDim: 0, numHeads: 1 }), error: RangeError, message: 'MultiHeadAttention: embedDim must be an integer >= 1, got 0' },
  { input: 'embedDim negative', call: (t) => t.make({ embedDim: -8, numHeads: 2 }), error: RangeError, message: 'MultiHeadAttention: embedDim must be an integer >= 1, got -8' },
  { input: 'embedDim above 2^31 - 1', call: (t) => t.make({ embedDim: 2 ** 31, numHeads: 2 }), error: RangeError, message: 'MultiHeadAttention: embedDim must be an integer >= 1, got 2147483648' },
  { input: 'numHeads missing', call: (t) => t.make({ embedDim: 8 }), error: TypeError, message: 'MultiHeadAttention: numHeads must be a number, got undefined' },
  { input: 'numHeads does not divide embedDim', call: (t) => t.make({ embedDim: 10, numHeads: 3 }), error: RangeError, message: 'MultiHeadAttention: numHeads (3) must divide embedDim (10), or give headDim' },
  { input: 'kdim zero', call: (t) => t.make({ embedDim: 8, numHeads: 2, kdim: 0 }), error: RangeError, message: 'MultiHeadAttention: kdim must be an integer >= 1, got 0' },
  { input: 'vdim NaN', call: (t) => t.make({ embedDim: 8, numHeads: 2, vdim: NaN }), error: RangeError, message: 'MultiHeadAttention: vdim must be an integer >= 1, got NaN' },
  { input: 'numKvHeads does not divide numHeads', call: (t) => t.make({ embedDim: 16, numHeads: 4, numKvHeads: 3 }), error: RangeError, message: 'MultiHeadAttention: numKvHeads (3) must divide numHeads (4)' },
  { input: 'numKvHeads larger than numHeads', call: (t) => t.make({ embedDim: 8, numHeads: 2, numKvHeads: 4 }), error: RangeError, message: 'MultiHeadAttention: numKvHeads (4) must divide numHeads (2)' },
  { input: 'unknown config key', call: (t) => t.make({ embedDim: 8, numHeads: 2, heads: 2 }), error: TypeError, message: 'MultiHeadAttention: config: unknown option \'heads\'; known options: embedDim, numHeads, kdim, vdim, bias, numKvHeads, scale, headDim, valueHeadDim, outputDim, rotary, slidingWindow, alibi, alibiSlopes, softcap, sinks, dropout, seed' },
  { input: 'bias not a boolean', call: (t) => t.make({ embedDim: 8, numHeads: 2, bias: 1 }), error: TypeError, message: 'MultiHeadAttention: bias must be a boolean, got number 1' },
  { input: 'scale Infinity', call: (t) => t.make({ embedDim: 8, numHeads: 2, scale: Infinity }), error: RangeError, message: 'MultiHeadAttention: scale must be a finite number, got number Infinity' },
  // ---- the variants of today's models (free head sizes, rotary, window, ALiBi, softcap, sinks) ----
  { input: 'headDim zero', call: (t) => t.make({ embedDim: 8, numHeads: 2, headDim: 0 }), error: RangeError, message: 'MultiHeadAttention: headDim must be an integer >= 1, got 0' },
  { input: 'valueHeadDim a fraction', call: (t) => t.make({ embedDim: 8, numHeads: 2, valueHeadDim: 2.5 }), error: RangeError, message: 'MultiHeadAttention: valueHeadDim must be an integer >= 1, got 2.5' },
  { input: 'outputDim a string', call: (t) => t.make({ embedDim: 8, numHeads: 2, outputDim: '4' }), error: TypeError, message: 'MultiHeadAttention: outputDim must be a number, got string 4' },
  { input: 'rotary a number', call: (t) => t.make({ embedDim: 8, numHeads: 2, rotary: 4 }), error: TypeError, message: 'MultiHeadAttention: rotary must be true (the whole head) or { dim, base, interleaved }, got number 4' },
  { input: 'rotary false', call: (t) => t.make({ embedDim: 8, numHeads: 2, rotary: false }), error: TypeError, message: 'MultiHeadAttention: rotary must be true (the whole head) or { dim, base, interleaved }, got boolean false' },
  { input: 'rotary: true with an odd head size', call: (t) => t.make({ embedDim: 6, numHeads: 2, rotary: true }), error: RangeError, message: 'MultiHeadAttention: rotary.dim must be an even integer from 2 to headDim (3), got 3' },
  { input: 'rotary.dim odd', call: (t) => t.make({ embedDim: 8, numHeads: 2, rotary: { dim: 3 } }), error: RangeError, message: 'MultiHeadAttention: rotary.dim must be an even integer from 2 to headDim (4), got 3' },
  { input: 'rotary.dim above the head size', call: (t) => t.make({ embedDim: 8, numHeads: 2, rotary: { dim: 6 } }), error: RangeError, message: 'MultiHeadAttention: rotary.dim must be an even integer from 2 to headDim (4), got 6' },
  { input: 'rotary.base zero', call: (t) => t.make({ embedDim: 8, numHeads: 2, rotary: { dim: 4, base: 0 } }), error: RangeError, message: 'MultiHeadAttention: rotary.base must be a finite number > 0, got 0' },
  { input: 'rotary unknown key', call: (t) => t.make({ embedDim: 8, numHeads: 2, rotary: { dim: 4, theta: 1e4 } }), error: TypeError, message: 'MultiHeadAttention: rotary: unknown option \'theta\'; known options: dim, base, interleaved' },
  { input: 'rotary.interleaved a string', call: (t) => t.make({ embedDim: 8, numHeads: 2, rotary: { dim: 4, interleaved: 'yes' } }), error: TypeError, message: 'MultiHeadAttention: rotary.interleaved must be a boolean, got string yes' },
  { input: 'slidingWindow zero', call: (t) => t.make({ embedDim: 8, numHeads: 2, slidingWindow: 0 }), error: RangeError, message: 'MultiHeadAttention: slidingWindow must be an integer >= 1, got 0' },
  { input: 'softcap zero', call: (t) => t.make({ embedDim: 8, numHeads: 2, softcap: 0 }), error: RangeError, message: 'MultiHeadAttention: softcap must be a finite number > 0, got 0' },
  { input: 'softcap Infinity', call: (t) => t.make({ embedDim: 8, numHeads: 2, softcap: Infinity }), error: RangeError, message: 'MultiHeadAttention: softcap must be a finite number > 0, got Infinity' },
  { input: 'softcap a string', call: (t) => t.make({ embedDim: 8, numHeads: 2, softcap: '50' }), error: TypeError, message: 'MultiHeadAttention: softcap must be a number, got string 50' },
  { input: 'alibi not a boolean', call: (t) => t.make({ embedDim: 8, numHeads: 2, alibi: 1 }), error: TypeError, message: 'MultiHeadAttention: alibi must be a boolean, got number 1' },
  { input: 'alibiSlopes of the wrong length', call: (t) => t.make({ embedDim: 8, numHeads: 2, alibiSlopes: [0.5, 0.25, 0.125] }), error: RangeError, message: 'MultiHeadAttention: alibiSlopes: expected numHeads = 2 slopes, got 3' },
  { input: 'alibiSlopes with alibi: false', call: (t) => t.make({ embedDim: 8, numHeads: 2, alibi: false, alibiSlopes: [0.5, 0.25] }), error: TypeError, message: 'MultiHeadAttention: alibiSlopes: given with alibi: false; omit one of them' },
  { input: 'alibiSlopes a string', call: (t) => t.make({ embedDim: 8, numHeads: 2, alibiSlopes: '0.5' }), error: TypeError, message: 'MultiHeadAttention: alibiSlopes must be a Float32Array or an array of numbers (one per head), got string 0.5' },
  { input: 'alibiSlopes holding NaN', call: (t) => t.make({ embedDim: 8, numHeads: 2, alibiSlopes: [0.5, NaN] }), error: RangeError, message: 'MultiHeadAttention: alibiSlopes: every slope must be a finite number' },
  { input: 'sinks missing from the state dict', call: (t) => t.make({ embedDim: E, numHeads: H, sinks: true }).loadStateDict(stateDict()), error: TypeError, message: 'loadStateDict: stateDict: missing key \'sinks\' (expected 2 floats, shape [2])' },
  { input: 'positions without rotary', call: (t) => t.layer.forward(x(1, 2), null, null, { positions: { data: new Int32Array(2), shape: [1, 2] } }), error: TypeError, message: 'forward: positions: only a layer with rotary positions takes positions (config.rotary)' },
  { input: 'positions a Float32Array', call: (t) => t.layer.forward(x(1, 2), null, null, { positions: { data: f32(2), shape: [1, 2] } }), error: TypeError, message: 'forward: positions.data must be an Int32Array, got a Float32Array' },
  { input: 'positions of the wrong shape', call: (t) => t.make({ embedDim: E, numHeads: H, rotary: { dim: 4 } }).loadStateDict(stateDict()).forward(x(1, 3), null, null, { positions: { data: new Int32Array(2), shape: [1, 2] } }), error: RangeError, message: 'forward: positions: expected shape [B, L] = [1, 3], got [1, 2]' },
  { input: 'positions in cross-attention', call: (t) => t.make({ embedDim: E, numHeads: H, rotary: { dim: 4 } }).loadStateDict(stateDict()).forward(x(1, 2), x(1, 3), x(1, 3), { positions: { data: new Int32Array(2), shape: [1, 2] } }), error: TypeError, message: 'forward: positions: rotary positions of the keys are their indices in cross-attention; positions applies to self-attention only' },
  // ---- forward into caller-owned buffers (out, weightsOut) ----
  { input: 'out a plain array', call: (t) => t.layer.forward(x(1, 2), null, null, { out: [0, 0] }), error: TypeError, message: 'forward: out must be a Float32Array, got an Array' },
  { input: 'out one float short', call: (t) => t.layer.forward(x(1, 2), null, null, { out: f32(15) }), error: RangeError, message: 'forward: out: expected a Float32Array of 16 floats for shape [1, 2, 8], got 15' },
  { input: 'weightsOut without needWeights', call: (t) => t.layer.forward(x(1, 2), null, null, { weightsOut: f32(4) }), error: TypeError, message: 'forward: weightsOut: given without needWeights: true' },
  { input: 'weightsOut sized for per-head weights while averaging', call: (t) => t.layer.forward(x(1, 2), null, null, { needWeights: true, weightsOut: f32(8) }), error: RangeError, message: 'forward: weightsOut: expected a Float32Array of 4 floats for shape [1, 2, 2], got 8' },
  // ---- the KV cache (createCache, forward({ cache }), truncate, setKeyValue) ----
  { input: 'createCache without options', call: (t) => t.layer.createCache(), error: TypeError, message: 'createCache: options must be an object, got undefined' },
  { input: 'createCache without capacity', call: (t) => t.layer.createCache({ batch: 1 }), error: TypeError, message: 'createCache: capacity must be a number, got undefined' },
  { input: 'createCache capacity zero', call: (t) => t.layer.createCache({ capacity: 0 }), error: RangeError, message: 'createCache: capacity must be an integer >= 1, got 0' },
  { input: 'createCache unknown dtype', call: (t) => t.layer.createCache({ capacity: 4, dtype: 'bf16' }), error: TypeError, message: 'createCache: dtype must be \'f32\' or \'f16\', got string bf16' },
  { input: 'createCache unknown option', call: (t) => t.layer.createCache({ capacity: 4, length: 4 }), error: TypeError, message: 'createCache: options: unknown option \'length\'; known options: batch, capacity, dtype' },
  { input: 'createCache larger than wasm memory', call: (t) => t.layer.createCache({ capacity: 2 ** 30 }), error: RangeError, message: 'createCache: the cache would need 64.0 GiB of WebAssembly memory (keys 32.0 GiB, values 32.0 GiB), more than the 4.0 GiB this build can address', limitDependent: true },
  { input: 'cache not a KvCache', call: (t) => t.layer.forward(x(1, 1), null, null, { cache: {} }), error: TypeError, message: 'forward: cache must be a KvCache from layer.createCache(), got an object (Object)' },
  { input: 'cache of another layer', call: (t) => t.layer.forward(x(1, 1), null, null, { cache: t.make({ embedDim: E, numHeads: H }).createCache({ capacity: 4 }) }), error: TypeError, message: 'forward: cache: this cache belongs to another layer (make one with this layer\'s createCache)' },
  { input: 'cache disposed', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); c.dispose(); t.layer.forward(x(1, 1), null, null, { cache: c }); }, error: TypeError, message: 'forward: cache: this cache was disposed' },
  { input: 'cache: appending past its capacity', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { t.layer.forward(x(1, 3), null, null, { cache: c }); t.layer.forward(x(1, 2), null, null, { cache: c }); } finally { c.dispose(); } }, error: RangeError, message: 'forward: cache: appending 2 tokens to the 3 it holds would exceed its capacity of 4 tokens' },
  { input: 'cache: batch differs from the cache\'s', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { t.layer.forward(x(2, 1), null, null, { cache: c }); } finally { c.dispose(); } }, error: TypeError, message: 'forward: cache: made for batch 1, but the query has batch 2' },
  { input: 'cache with causal: false', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { t.layer.forward(x(1, 1), null, null, { cache: c, causal: false }); } finally { c.dispose(); } }, error: TypeError, message: 'forward: causal: a self-attention cache implies causal attention (each new token sees the cached tokens and itself, never later ones); omit causal or pass true' },
  { input: 'cache with key and value given', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { t.layer.forward(x(1, 1), x(1, 2), x(1, 2), { cache: c }); } finally { c.dispose(); } }, error: TypeError, message: 'forward: key: with a cache the keys and values come from it: pass null for key and value (for cross-attention, cache.setKeyValue(key, value) first)' },
  { input: 'cache: keyPaddingMask not covering the cache', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { t.layer.forward(x(1, 2), null, null, { cache: c }); t.layer.forward(x(1, 1), null, null, { cache: c, keyPaddingMask: { data: u8(1), shape: [1, 1] } }); } finally { c.dispose(); } }, error: RangeError, message: 'forward: keyPaddingMask: expected shape [B, S] = [1, 3], got [1, 1]' },
  { input: 'cache: attnMask not covering the cache', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { t.layer.forward(x(1, 2), null, null, { cache: c }); t.layer.forward(x(1, 1), null, null, { cache: c, attnMask: { data: u8(1), shape: [1, 1] } }); } finally { c.dispose(); } }, error: RangeError, message: 'forward: attnMask: expected shape [L, S] = [1, 3] or [B*numHeads, L, S] = [2, 1, 3], got [1, 1]' },
  { input: 'truncate past the length', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { c.truncate(1); } finally { c.dispose(); } }, error: RangeError, message: 'truncate: n must be an integer from 0 to the cache\'s length (0), got 1' },
  { input: 'setKeyValue on a self-attention cache', call: (t) => { const c = t.layer.createCache({ capacity: 4 }); try { t.layer.forward(x(1, 1), null, null, { cache: c }); c.setKeyValue(x(1, 2), x(1, 2)); } finally { c.dispose(); } }, error: TypeError, message: 'setKeyValue: this cache holds self-attention tokens; a cache is one kind or the other (reset() it first, or make another)' },
  { input: 'setKeyValue with more tokens than the capacity', call: (t) => { const c = t.layer.createCache({ capacity: 2 }); try { c.setKeyValue(x(1, 3), x(1, 3)); } finally { c.dispose(); } }, error: RangeError, message: 'setKeyValue: 3 tokens do not fit the cache\'s capacity of 2' },
  { input: 'scale NaN', call: (t) => t.make({ embedDim: 8, numHeads: 2, scale: NaN }), error: RangeError, message: 'MultiHeadAttention: scale must be a finite number, got number NaN' },
  { input: 'scale a string', call: (t) => t.make({ embedDim: 8, numHeads: 2, scale: '0.5' }), error: RangeError, message: 'MultiHeadAttention: scale must be a finite number, got string 0.5' },
  { input: 'weights too large for wasm memory (embedDim 100000)', call: (t) => t.make({ embedDim: 100000, numHeads: 8 }), error: RangeError, message: 'MultiHeadAttention: the weights need 149.0 GiB of WebAssembly memory (in_proj_weight 111.8 GiB, in_proj_bias 1.1 MiB, out_proj.weight 37.3 GiB, out_proj.bias 390.6 KiB), more than the 4.0 GiB this build can address', limitDependent: true },

  // ---- loadStateDict ----
  { input: 'state dict is null', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict(null), error: TypeError, message: 'loadStateDict: stateDict must be an object, got null' },
  { input: 'state dict is an array', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict([f32(3)]), error: TypeError, message: 'loadStateDict: stateDict must be an object, got an Array' },
  { input: 'state dict key missing', call: (t) => { const sd = stateDict(); delete sd['out_proj.bias']; t.make({ embedDim: E, numHeads: H }).loadStateDict(sd); }, error: TypeError, message: 'loadStateDict: stateDict: missing key \'out_proj.bias\' (expected 8 floats, shape [8])' },
  { input: 'state dict entry too short', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), in_proj_weight: f32(10) }), error: RangeError, message: 'loadStateDict: stateDict[\'in_proj_weight\']: expected 192 floats (shape [24, 8]), got 10' },
  { input: 'state dict entry one float too long', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), 'out_proj.bias': f32(9) }), error: RangeError, message: 'loadStateDict: stateDict[\'out_proj.bias\']: expected 8 floats (shape [8]), got 9' },
  { input: 'state dict key unknown', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), bias_k: f32(8) }), error: TypeError, message: 'loadStateDict: stateDict: unexpected key \'bias_k\'; expected exactly \'in_proj_weight\', \'in_proj_bias\', \'out_proj.weight\', \'out_proj.bias\'' },
  { input: 'state dict with both fused and separate projections', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), q_proj_weight: f32(64) }), error: TypeError, message: 'loadStateDict: stateDict: unexpected key \'q_proj_weight\'; expected exactly \'in_proj_weight\', \'in_proj_bias\', \'out_proj.weight\', \'out_proj.bias\'' },
  { input: 'state dict bias on a bias-free layer', call: (t) => t.make({ embedDim: E, numHeads: H, bias: false }).loadStateDict(stateDict()), error: TypeError, message: 'loadStateDict: stateDict: unexpected key \'in_proj_bias\' (the layer has bias: false); expected exactly \'in_proj_weight\', \'out_proj.weight\'' },
  { input: 'state dict value a plain array', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), in_proj_bias: [0, 1] }), error: TypeError, message: 'loadStateDict: stateDict[\'in_proj_bias\'] must be a Float32Array, got an Array' },
  { input: 'state dict value a Float64Array', call: (t) => t.make({ embedDim: E, numHeads: H }).loadStateDict({ ...stateDict(), in_proj_bias: new Float64Array(24) }), error: TypeError, message: 'loadStateDict: stateDict[\'in_proj_bias\'] must be a Float32Array, got a Float64Array' },

  // ---- forward: the tensors ----
  { input: 'forward before loading weights', call: (t) => t.make({ embedDim: E, numHeads: H }).forward(x(1, 2)), error: TypeError, message: 'forward: the layer has no weights yet; call loadStateDict() first' },
  { input: 'query missing', call: (t) => t.layer.forward(), error: TypeError, message: 'forward: query is required: { data: Float32Array, shape: [B, L, embedDim] or [L, embedDim] }' },
  { input: 'query a bare Float32Array', call: (t) => t.layer.forward(f32(16)), error: TypeError, message: 'forward: query must be { data, shape } with shape [B, L, embedDim] or [L, embedDim], got a Float32Array' },
  { input: 'query data a plain array', call: (t) => t.layer.forward({ data: [1, 2], shape: [1, 2] }), error: TypeError, message: 'forward: query.data must be a Float32Array, got an Array' },
  { input: 'query data a Uint8Array', call: (t) => t.layer.forward({ data: u8(16), shape: [2, 8] }), error: TypeError, message: 'forward: query.data must be a Float32Array, got a Uint8Array' },
  { input: 'query shape not an array', call: (t) => t.layer.forward({ data: f32(16), shape: '2,8' }), error: TypeError, message: 'forward: query.shape must be an array of integers, got string 2,8' },
  { input: 'query shape with a fraction', call: (t) => t.layer.forward({ data: f32(16), shape: [2.5, 8] }), error: RangeError, message: 'forward: query.shape must hold non-negative integers, got [2.5, 8]' },
  { input: 'query shape with a negative extent', call: (t) => t.layer.forward({ data: f32(0), shape: [-1, 8] }), error: RangeError, message: 'forward: query.shape must hold non-negative integers, got [-1, 8]' },
  { input: 'query data shorter than its shape', call: (t) => t.layer.forward({ data: f32(10), shape: [1, 2, 8] }), error: RangeError, message: 'forward: query: shape [1, 2, 8] needs 16 elements, but data has 10' },
  { input: 'query last dimension not embedDim', call: (t) => t.layer.forward({ data: f32(14), shape: [1, 2, 7] }), error: RangeError, message: 'forward: query: last dimension must be embedDim = 8, expected shape [B, L, 8], got [1, 2, 7]' },
  { input: 'query of rank 4', call: (t) => t.layer.forward({ data: f32(16), shape: [1, 1, 2, 8] }), error: RangeError, message: 'forward: query: expected shape [B, L, 8] or [L, 8], got [1, 1, 2, 8]' },
  { input: 'query of rank 1', call: (t) => t.layer.forward({ data: f32(8), shape: [8] }), error: RangeError, message: 'forward: query: expected shape [B, L, 8] or [L, 8], got [8]' },
  { input: 'query with batch 0', call: (t) => t.layer.forward({ data: f32(0), shape: [0, 2, 8] }), error: RangeError, message: 'forward: query: batch size and sequence length must be at least 1, got shape [0, 2, 8]' },
  { input: 'query with sequence length 0', call: (t) => t.layer.forward({ data: f32(0), shape: [0, 8] }), error: RangeError, message: 'forward: query: batch size and sequence length must be at least 1, got shape [0, 8]' },
  { input: 'key given without value', call: (t) => t.layer.forward(x(1, 2), x(1, 3)), error: TypeError, message: 'forward: value: key and value must be given together (or both omitted for self-attention)' },
  { input: 'value given without key', call: (t) => t.layer.forward(x(1, 2), null, x(1, 3)), error: TypeError, message: 'forward: key: key and value must be given together (or both omitted for self-attention)' },
  { input: 'key of rank 2 with a batched query', call: (t) => t.layer.forward(x(1, 2), { data: f32(24), shape: [3, 8] }, { data: f32(24), shape: [3, 8] }), error: RangeError, message: 'forward: key: expected 3 dimensions like the query, shape [1, S, 8], got [3, 8]' },
  { input: 'key batch differs from the query', call: (t) => t.layer.forward(x(2, 2), x(1, 3), x(1, 3)), error: RangeError, message: 'forward: key: expected shape [B, S, kdim] = [2, 3, 8], got [1, 3, 8]' },
  { input: 'key last dimension not kdim', call: (t) => t.make(kvConfig).loadStateDict(kvStateDict()).forward(x(1, 2), x(1, 3), x(1, 3)), error: RangeError, message: 'forward: key: expected shape [B, S, kdim] = [1, 3, 4], got [1, 3, 8]' },
  { input: 'key with sequence length 0', call: (t) => t.layer.forward(x(1, 2), x(1, 0), x(1, 0)), error: RangeError, message: 'forward: key: sequence length S must be at least 1, got shape [1, 0, 8]' },
  { input: 'value batch differs', call: (t) => t.layer.forward(x(2, 2), x(2, 3), x(1, 3)), error: RangeError, message: 'forward: value: expected shape [B, S, vdim] = [2, 3, 8], got [1, 3, 8]' },
  { input: 'value length differs from key', call: (t) => t.layer.forward(x(1, 2), x(1, 3), x(1, 4)), error: RangeError, message: 'forward: value: expected shape [B, S, vdim] = [1, 3, 8], got [1, 4, 8]' },
  { input: 'key data a Float64Array', call: (t) => t.layer.forward(x(1, 2), { data: new Float64Array(24), shape: [1, 3, 8] }, x(1, 3)), error: TypeError, message: 'forward: key.data must be a Float32Array, got a Float64Array' },
  { input: 'self-attention when kdim differs from embedDim', call: (t) => t.make(kvConfig).loadStateDict(kvStateDict()).forward(x(1, 2)), error: TypeError, message: 'forward: key: key and value are required when kdim or vdim differ from embedDim' },

  // ---- forward: options and masks ----
  { input: 'options passed in place of key', call: (t) => t.layer.forward(x(1, 2), { causal: true }), error: TypeError, message: 'forward: key must be { data, shape } or null; to pass options for self-attention call forward(query, null, null, options)' },
  { input: 'options a number', call: (t) => t.layer.forward(x(1, 2), null, null, 5), error: TypeError, message: 'forward: options must be an object, got number 5' },
  { input: 'unknown forward option', call: (t) => t.layer.forward(x(1, 2), null, null, { need_weights: true }), error: TypeError, message: 'forward: options: unknown option \'need_weights\'; known options: causal, keyPaddingMask, attnMask, needWeights, averageWeights, positions, out, weightsOut, cache, grad, training, seed, weightsBeforeDropout, checkFinite' },
  { input: 'causal a string', call: (t) => t.layer.forward(x(1, 2), null, null, { causal: 'yes' }), error: TypeError, message: 'forward: causal must be a boolean, got string yes' },
  { input: 'needWeights a number', call: (t) => t.layer.forward(x(1, 2), null, null, { needWeights: 1 }), error: TypeError, message: 'forward: needWeights must be a boolean, got number 1' },
  { input: 'averageWeights null', call: (t) => t.layer.forward(x(1, 2), null, null, { averageWeights: null }), error: TypeError, message: 'forward: averageWeights must be a boolean, got null' },
  { input: 'keyPaddingMask data a plain number array', call: (t) => t.layer.forward(x(1, 2), null, null, { keyPaddingMask: { data: [0, 1], shape: [1, 2] } }), error: TypeError, message: 'forward: keyPaddingMask.data must be a bool mask (Uint8Array or any integer typed array, or boolean[]) or a float mask (Float32Array or Float64Array), got an Array (a number[] is ambiguous: pass Uint8Array.from(it) for bool, Float32Array.from(it) for float)' },
  { input: 'attnMask data strings', call: (t) => t.layer.forward(x(1, 2), null, null, { attnMask: { data: ['yes', 'no', 'no', 'yes'], shape: [2, 2] } }), error: TypeError, message: 'forward: attnMask.data must be a bool mask (Uint8Array or any integer typed array, or boolean[]) or a float mask (Float32Array or Float64Array), got an Array' },
  { input: 'boolean[] keyPaddingMask of the wrong length', call: (t) => t.layer.forward(x(1, 3), null, null, { keyPaddingMask: { data: [false, true], shape: [1, 3] } }), error: RangeError, message: 'forward: keyPaddingMask: shape [1, 3] needs 3 elements, but data has 2' },
  { input: 'checkFinite not a boolean', call: (t) => t.layer.forward(x(1, 2), null, null, { checkFinite: 'yes' }), error: TypeError, message: 'forward: checkFinite must be a boolean, got string yes' },
  { input: 'checkFinite: NaN in the key', call: (t) => { const k = x(1, 3); k.data[13] = NaN; t.layer.forward(x(1, 2), k, x(1, 3), { checkFinite: true }); }, error: RangeError, message: 'forward: checkFinite: key.data[13] is NaN (index [0, 1, 5] of shape [1, 3, 8])' },
  { input: 'checkFinite: Infinity in the query', call: (t) => { const q = x(1, 2); q.data[9] = -Infinity; t.layer.forward(q, null, null, { checkFinite: true }); }, error: RangeError, message: 'forward: checkFinite: query.data[9] is -Infinity (index [0, 1, 1] of shape [1, 2, 8])' },
  { input: 'checkFinite: +Infinity in a float mask', call: (t) => t.layer.forward(x(1, 2), null, null, { checkFinite: true, attnMask: { data: Float32Array.of(0, -Infinity, Infinity, 0), shape: [2, 2] } }), error: RangeError, message: 'forward: checkFinite: attnMask.data[2] is Infinity (index [1, 0] of shape [2, 2])' },
  { input: 'keyPaddingMask a plain array', call: (t) => t.layer.forward(x(1, 2), null, null, { keyPaddingMask: [true, false] }), error: TypeError, message: 'forward: keyPaddingMask must be { data, shape }, got an Array' },
  { input: 'keyPaddingMask [S] with a batched query', call: (t) => t.layer.forward(x(2, 3), null, null, { keyPaddingMask: { data: u8(3), shape: [3] } }), error: RangeError, message: 'forward: keyPaddingMask: expected shape [B, S] = [2, 3], got [3]' },
  { input: 'keyPaddingMask [1, S] with an unbatched query', call: (t) => t.layer.forward({ data: f32(24), shape: [3, 8] }, null, null, { keyPaddingMask: { data: u8(3), shape: [1, 3] } }), error: RangeError, message: 'forward: keyPaddingMask: expected shape [S] = [3], got [1, 3]' },
  { input: 'keyPaddingMask data shorter than its shape', call: (t) => t.layer.forward(x(1, 3), null, null, { keyPaddingMask: { data: u8(2), shape: [1, 3] } }), error: RangeError, message: 'forward: keyPaddingMask: shape [1, 3] needs 3 elements, but data has 2' },
  { input: 'attnMask [S, L] instead of [L, S]', call: (t) => t.layer.forward(x(2, 3), x(2, 2), x(2, 2), { attnMask: { data: u8(6), shape: [2, 3] } }), error: RangeError, message: 'forward: attnMask: expected shape [L, S] = [3, 2] or [B*numHeads, L, S] = [4, 3, 2], got [2, 3]' },
  { input: 'attnMask 3-D with the wrong head count', call: (t) => t.layer.forward(x(2, 3), null, null, { attnMask: { data: f32(18), shape: [2, 3, 3] } }), error: RangeError, message: 'forward: attnMask: expected shape [B*numHeads, L, S] = [4, 3, 3], got [2, 3, 3]' },
  { input: 'attnMask of rank 1', call: (t) => t.layer.forward(x(1, 3), null, null, { attnMask: { data: u8(9), shape: [9] } }), error: RangeError, message: 'forward: attnMask: expected shape [L, S] = [3, 3] or [B*numHeads, L, S] = [2, 3, 3], got [9]' },
  { input: 'attnMask of rank 4', call: (t) => t.layer.forward(x(1, 3), null, null, { attnMask: { data: u8(18), shape: [1, 2, 3, 3] } }), error: RangeError, message: 'forward: attnMask: expected shape [L, S] = [3, 3] or [B*numHeads, L, S] = [2, 3, 3], got [1, 2, 3, 3]' },
  { input: 'attnMask [B*H, L, S] with an unbatched query', call: (t) => t.layer.forward({ data: f32(24), shape: [3, 8] }, null, null, { attnMask: { data: u8(36), shape: [4, 3, 3] } }), error: RangeError, message: 'forward: attnMask: expected shape [numHeads, L, S] = [2, 3, 3], got [4, 3, 3]' },

  // ---- limits: requests that cannot fit fail before allocating ----
  { input: 'per-head weights too large (L = S = 40000)', call: (t) => t.layer.forward(x(1, 40000), null, null, { needWeights: true, averageWeights: false }), error: RangeError, message: 'forward: the inputs and buffers need 11.9 GiB of WebAssembly memory (query 1.2 MiB, projected queries 1.2 MiB, projected keys and values 2.4 MiB, attended values 1.2 MiB, attention scratch 2.0 MiB, output 1.2 MiB, attention weights 11.9 GiB), more than the 4.0 GiB this build can address', limitDependent: true },
  { input: 'averaged weights too large (L = S = 40000)', call: (t) => t.layer.forward({ data: f32(40000 * E), shape: [40000, E] }, null, null, { needWeights: true }), error: RangeError, message: 'forward: the inputs and buffers need 6.0 GiB of WebAssembly memory (query 1.2 MiB, projected queries 1.2 MiB, projected keys and values 2.4 MiB, attended values 1.2 MiB, attention scratch 2.0 MiB, output 1.2 MiB, attention weights 6.0 GiB), more than the 4.0 GiB this build can address', limitDependent: true },
  { input: 'per-head weights of a batch too large (B = 64, L = S = 4096)', call: (t) => t.layer.forward(x(64, 4096), null, null, { needWeights: true, averageWeights: false }), error: RangeError, message: 'forward: the inputs and buffers need 8.0 GiB of WebAssembly memory (query 8.0 MiB, projected queries 8.0 MiB, projected keys and values 16.0 MiB, attended values 8.0 MiB, attention scratch 208.0 KiB, output 8.0 MiB, attention weights 8.0 GiB), more than the 4.0 GiB this build can address', limitDependent: true },
  { input: 'averaged weights above the largest block (L = S = 24000)', call: (t) => t.layer.forward({ data: f32(24000 * E), shape: [24000, E] }, null, null, { needWeights: true }), error: RangeError, message: 'forward: the inputs and buffers need 2.1 GiB of WebAssembly memory in one block (attention weights: 2304000000 bytes), more than the largest block this build can allocate (2147352576 bytes)' },

  // ---- a disposed layer ----
  { input: 'forward on a disposed layer', call: (t) => { const l = t.make({ embedDim: E, numHeads: H }); l.dispose(); l.forward(x(1, 2)); }, error: TypeError, message: 'MultiHeadAttention.forward: this layer was disposed' },
  { input: 'loadStateDict on a disposed layer', call: (t) => { const l = t.make({ embedDim: E, numHeads: H }); l.dispose(); l.loadStateDict(stateDict()); }, error: TypeError, message: 'MultiHeadAttention.loadStateDict: this layer was disposed' },
  { input: 'config of a disposed layer', call: (t) => { const l = t.make({ embedDim: E, numHeads: H }); l.dispose(); return l.config; }, error: TypeError, message: 'MultiHeadAttention.config: this layer was disposed' },

  // ---- Keras' layer (KerasMultiHeadAttention): Keras' names in its messages ----
  { input: 'Keras: numHeads missing', call: (t) => t.makeKeras({ keyDim: 4 }), error: TypeError, message: 'KerasMultiHeadAttention: numHeads must be a number, got undefined' },
  { input: 'Keras: a head size the core refuses', call: (t) => t.makeKeras({ numHeads: 2, keyDim: 4, queryDim: 8, outputShape: 0 }), error: RangeError, message: 'KerasMultiHeadAttention: outputShape must be an integer >= 1, got 0' },
  { input: 'Keras: config before the layer is built', call: (t) => t.makeKeras({ numHeads: 2, keyDim: 4 }).config, error: TypeError, message: 'KerasMultiHeadAttention.config: the layer is not built yet: its input sizes come from the first call() or from setWeights() with { data, shape } tensors, or pass queryDim (and keyInputDim, valueInputDim) to the constructor' },
  { input: 'Keras: getWeights before the layer is built', call: (t) => t.makeKeras({ numHeads: 2, keyDim: 4 }).getWeights(), error: TypeError, message: 'getWeights: the layer is not built yet: its input sizes come from the first call() or from setWeights() with { data, shape } tensors, or pass queryDim (and keyInputDim, valueInputDim) to the constructor' },
  { input: 'Keras: setWeights of bare arrays on an unbuilt layer', call: (t) => t.makeKeras({ numHeads: 2, keyDim: 4 }).setWeights([f32(32), f32(8)]), error: TypeError, message: 'setWeights: the layer is not built yet and the query kernel has no shape: pass { data, shape } tensors (as get_weights() gives), call call() first, or pass queryDim (and keyInputDim, valueInputDim) to the constructor' },
  { input: 'Keras: call before setWeights', call: (t) => t.makeKeras({ numHeads: 2, keyDim: 4 }).call(x(1, 2), x(1, 3)), error: TypeError, message: 'call: the layer has no weights yet; call setWeights() first' },
  { input: 'Keras: call with a query of the wrong size after building', call: (t) => { const k = t.makeKeras({ numHeads: 2, keyDim: 4, queryDim: 8 }); k.setWeights(k.weightShapes() && Object.values(k.weightShapes()).map((s) => ({ data: f32(s.reduce((a, b) => a * b, 1)), shape: s }))); k.call(x(1, 2, 6), x(1, 3)); }, error: RangeError, message: 'call: query: last dimension must be queryDim = 8, expected shape [B, L, 8], got [1, 2, 6]' },
  { input: 'Keras: attentionMask a number array', call: (t) => t.makeKeras({ numHeads: 2, keyDim: 4, queryDim: 8 }).call(x(1, 2), x(1, 3), null, { attentionMask: { data: [1, 1, 0, 1, 1, 1], shape: [1, 2, 3] } }), error: TypeError, message: 'call: attentionMask.data must be a bool mask (Uint8Array or any integer typed array, or boolean[]) or a float mask (Float32Array or Float64Array), got an Array (a number[] is ambiguous: pass Uint8Array.from(it) for bool, Float32Array.from(it) for float)' },
  { input: 'Keras: checkFinite names Keras\' value', call: (t) => { const k = t.makeKeras({ numHeads: 2, keyDim: 4, queryDim: 8 }); const v = x(1, 3); v.data[2] = NaN; k.call(x(1, 2), v, null, { checkFinite: true }); }, error: RangeError, message: 'call: checkFinite: value.data[2] is NaN (index [0, 0, 2] of shape [1, 3, 8])' },

  // ---- weights files (.safetensors) ----
  { input: 'safetensors: not bytes', call: () => readSafetensors('file.safetensors'), error: TypeError, message: 'readSafetensors: bytes must be a Uint8Array or an ArrayBuffer, got string file.safetensors' },
  { input: 'safetensors: shorter than the length field', call: () => readSafetensors(new Uint8Array(5)), error: RangeError, message: 'readSafetensors: the file is 5 bytes; it must start with an 8-byte header length' },
  { input: 'safetensors: truncated (last byte missing)', call: () => { const f = safetensors(); readSafetensors(f.subarray(0, f.length - 1)); }, error: RangeError, message: 'readSafetensors: tensor \'w\': data_offsets [0,16] must satisfy 0 <= begin <= end <= 15 (the size of the data section)' },
  { input: 'safetensors: header length 2^60', call: () => { const f = safetensors(); new DataView(f.buffer, f.byteOffset).setBigUint64(0, 2n ** 60n, true); readSafetensors(f); }, error: RangeError, message: 'readSafetensors: header length 1152921504606846976 exceeds the 80 bytes after the length field (or the 100000000-byte limit)' },
  { input: 'safetensors: header a JSON array', call: () => readSafetensors(withHeader('[1, 2]')), error: TypeError, message: 'readSafetensors: the header must be a JSON object starting with "{"' },
  { input: 'safetensors: unknown dtype', call: () => readSafetensors(withHeader({ w: { dtype: 'F128', shape: [4], data_offsets: [0, 16] } })), error: TypeError, message: 'readSafetensors: tensor \'w\': unknown dtype "F128"; known dtypes: BOOL, U8, I8, F8_E4M3, F8_E5M2, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64' },
  { input: 'safetensors: offsets past the end', call: () => readSafetensors(withHeader({ w: { dtype: 'F32', shape: [8], data_offsets: [0, 32] } })), error: RangeError, message: 'readSafetensors: tensor \'w\': data_offsets [0,32] must satisfy 0 <= begin <= end <= 16 (the size of the data section)' },
  { input: 'safetensors: offsets disagree with dtype and shape', call: () => readSafetensors(withHeader({ w: { dtype: 'F16', shape: [4], data_offsets: [0, 16] } })), error: RangeError, message: 'readSafetensors: tensor \'w\': dtype F16 and shape [4] need 8 bytes, but data_offsets [0,16] span 16' },
  { input: 'safetensors: overlapping tensors', call: () => readSafetensors(withHeader({ a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] }, b: { dtype: 'F32', shape: [2], data_offsets: [8, 16] } })), error: RangeError, message: 'readSafetensors: tensor \'b\' (bytes 8..16) overlaps tensor \'a\' (bytes 0..16)' },
  { input: 'safetensors: weights stored as integers', call: () => stateDictFromSafetensors(withHeader({ w: { dtype: 'I32', shape: [4], data_offsets: [0, 16] } })), error: TypeError, message: 'stateDictFromSafetensors: tensor \'w\' has dtype I32; weights must be one of F32, F16, BF16, F64' },
  // ---- training: grad, dropout, backward, initialize, stateDict ----
  { input: 'grad not a boolean', call: (t) => t.layer.forward(x(1, 2), null, null, { grad: 1 }), error: TypeError, message: 'forward: grad must be a boolean, got number 1' },
  { input: 'training not a boolean', call: (t) => t.layer.forward(x(1, 2), null, null, { training: 'yes' }), error: TypeError, message: 'forward: training must be a boolean, got string yes' },
  { input: 'weightsBeforeDropout null', call: (t) => t.layer.forward(x(1, 2), null, null, { weightsBeforeDropout: null }), error: TypeError, message: 'forward: weightsBeforeDropout must be a boolean, got null' },
  { input: 'forward seed negative', call: (t) => t.layer.forward(x(1, 2), null, null, { training: true, seed: -1 }), error: RangeError, message: 'forward: seed must be an integer from 0 to 2^53 - 1, got -1' },
  { input: 'forward seed a fraction', call: (t) => t.layer.forward(x(1, 2), null, null, { training: true, seed: 1.5 }), error: RangeError, message: 'forward: seed must be an integer from 0 to 2^53 - 1, got 1.5' },
  { input: 'forward seed a string', call: (t) => t.layer.forward(x(1, 2), null, null, { training: true, seed: '7' }), error: TypeError, message: 'forward: seed must be a number, got string 7' },
  { input: 'config seed negative', call: (t) => t.make({ embedDim: E, numHeads: H, seed: -3 }), error: RangeError, message: 'MultiHeadAttention: seed must be an integer from 0 to 2^53 - 1, got -3' },
  { input: 'dropout a string', call: (t) => t.make({ embedDim: E, numHeads: H, dropout: '0.1' }), error: TypeError, message: 'MultiHeadAttention: dropout must be a number in [0, 1), got string 0.1' },
  { input: 'dropout 1', call: (t) => t.make({ embedDim: E, numHeads: H, dropout: 1 }), error: RangeError, message: 'MultiHeadAttention: dropout must be a number in [0, 1), got 1' },
  { input: 'dropout negative', call: (t) => t.make({ embedDim: E, numHeads: H, dropout: -0.1 }), error: RangeError, message: 'MultiHeadAttention: dropout must be a number in [0, 1), got -0.1' },
  { input: 'dropout NaN', call: (t) => t.make({ embedDim: E, numHeads: H, dropout: NaN }), error: RangeError, message: 'MultiHeadAttention: dropout must be a number in [0, 1), got NaN' },
  { input: 'grad with a cache', call: (t) => { const l = t.make({ embedDim: E, numHeads: H }).loadStateDict(stateDict()); l.forward(x(1, 1), null, null, { grad: true, cache: l.createCache({ capacity: 4 }) }); }, error: TypeError, message: 'forward: grad: a forward pass with a cache cannot be differentiated (training runs whole sequences: pass the whole sequence without a cache)' },
  { input: 'grad with an out buffer', call: (t) => t.layer.forward(x(1, 2), null, null, { grad: true, out: f32(16) }), error: TypeError, message: 'forward: out: not with grad: true (the result keeps its own buffers)' },
  { input: 'backward twice', call: (t) => { const r = t.layer.forward(x(1, 2), null, null, { grad: true }); r.backward(x(1, 2)); r.backward(x(1, 2)); }, error: Error, message: 'backward: already called for this forward pass (call forward again)' },
  { input: 'backward after release()', call: (t) => { const r = t.layer.forward(x(1, 2), null, null, { grad: true }); r.release(); r.backward(x(1, 2)); }, error: Error, message: 'backward: this forward pass was released (release() frees what backward needs)' },
  { input: 'backward after the layer\'s dispose()', call: (t) => { const l = t.make({ embedDim: E, numHeads: H }).loadStateDict(stateDict()); const r = l.forward(x(1, 2), null, null, { grad: true }); l.dispose(); r.backward(x(1, 2)); }, error: Error, message: 'backward: the layer that made this forward pass was disposed' },
  { input: 'backward after loadStateDict changed the weights', call: (t) => withGrad(t.make({ embedDim: E, numHeads: H }).loadStateDict(stateDict()), (r, l) => { l.loadStateDict(stateDict()); r.backward(x(1, 2)); }), error: TypeError, message: 'backward: the layer\'s weights changed since this forward pass (loadStateDict); run forward again with the new weights' },
  { input: 'dOut data shorter than the output', call: (t) => withGrad(t.layer, (r) => r.backward({ data: f32(15), shape: [1, 2, 8] })), error: RangeError, message: 'backward: dOut: shape [1, 2, 8] needs 16 elements, but data has 15' },
  { input: 'dOut shape not the output\'s', call: (t) => withGrad(t.layer, (r) => r.backward({ data: f32(16), shape: [2, 8] })), error: RangeError, message: 'backward: dOut: expected the output\'s shape [1, 2, 8], got [2, 8]' },
  { input: 'dOut data a Float64Array', call: (t) => withGrad(t.layer, (r) => r.backward({ data: new Float64Array(16), shape: [1, 2, 8] })), error: TypeError, message: 'backward: dOut must be { data: Float32Array, shape: [1, 2, 8] } (dLoss/dOutput), got data a Float64Array' },
  { input: 'dOut a bare Float32Array', call: (t) => withGrad(t.layer, (r) => r.backward(f32(16))), error: TypeError, message: 'backward: dOut must be { data: Float32Array, shape: [1, 2, 8] } (dLoss/dOutput), got a Float32Array' },
  { input: 'dOut missing', call: (t) => withGrad(t.layer, (r) => r.backward()), error: TypeError, message: 'backward: dOut must be { data: Float32Array, shape: [1, 2, 8] } (dLoss/dOutput), got undefined' },
  { input: 'initialize options a number', call: (t) => t.make({ embedDim: E, numHeads: H }).initialize(5), error: TypeError, message: 'initialize: options must be an object, got number 5' },
  { input: 'initialize unknown option', call: (t) => t.make({ embedDim: E, numHeads: H }).initialize({ sed: 1 }), error: TypeError, message: 'initialize: options: unknown option \'sed\'; known options: seed' },
  { input: 'initialize seed negative', call: (t) => t.make({ embedDim: E, numHeads: H }).initialize({ seed: -1 }), error: RangeError, message: 'initialize: seed must be an integer from 0 to 2^32 - 1, got number -1' },
  { input: 'initialize seed above 2^32 - 1', call: (t) => t.make({ embedDim: E, numHeads: H }).initialize({ seed: 2 ** 32 }), error: RangeError, message: 'initialize: seed must be an integer from 0 to 2^32 - 1, got number 4294967296' },
  { input: 'initialize seed a string', call: (t) => t.make({ embedDim: E, numHeads: H }).initialize({ seed: '1' }), error: TypeError, message: 'initialize: seed must be a number, got string 1' },
  { input: 'initialize on a disposed layer', call: (t) => { const l = t.make({ embedDim: E, numHeads: H }); l.dispose(); l.initialize({ seed: 1 }); }, error: TypeError, message: 'MultiHeadAttention.initialize: this layer was disposed' },
  { input: 'stateDict before any weights', call: (t) => t.make({ embedDim: E, numHeads: H }).stateDict(), error: TypeError, message: 'stateDict: the layer has no weights yet; call loadStateDict() or initialize() first' },
  { input: 'stateDict of a disposed layer', call: (t) => { const l = t.make({ embedDim: E, numHeads: H }); l.dispose(); l.stateDict(); }, error: TypeError, message: 'MultiHeadAttention.stateDict: this layer was disposed' },
  // ---- linear(), linearBackward(): nn.Linear on the wasm GEMM ----
  { input: 'linear: weight not 2-D', call: (t) => t.linear(x(1, 2), { data: f32(8), shape: [8] }), error: RangeError, message: 'linear: weight must have shape [outFeatures, inFeatures], both at least 1, got [8]' },
  { input: 'linear: input\'s last dimension not the weight\'s', call: (t) => t.linear(x(1, 2, 4), { data: f32(24), shape: [3, 8] }), error: RangeError, message: 'linear: input must have shape [..., inFeatures] with inFeatures = 8 (the weight\'s), got [1, 2, 4]' },
  { input: 'linear: input a bare Float32Array', call: (t) => t.linear(f32(8), { data: f32(24), shape: [3, 8] }), error: TypeError, message: 'linear: input must be { data, shape } with shape [..., inFeatures], got a Float32Array' },
  { input: 'linear: bias of the wrong length', call: (t) => t.linear(x(1, 2), { data: f32(24), shape: [3, 8] }, f32(8)), error: RangeError, message: 'linear: bias: expected 3 floats (outFeatures), got 8' },
  { input: 'linear: out of the wrong size', call: (t) => t.linear(x(1, 2), { data: f32(24), shape: [3, 8] }, null, { out: f32(5) }), error: RangeError, message: 'linear: options.out: expected 6 floats (shape [1, 2, 3]), got 5' },
  { input: 'linear: unknown option', call: (t) => t.linear(x(1, 2), { data: f32(24), shape: [3, 8] }, null, { grad: true }), error: TypeError, message: 'linear: options: unknown option \'grad\'; known options: out' },
  { input: 'linearBackward: dOutput rows not the input\'s', call: (t) => t.linearBackward({ data: f32(9), shape: [3, 3] }, x(1, 2), { data: f32(24), shape: [3, 8] }), error: RangeError, message: 'linearBackward: dOutput must have the input\'s rows: shape [1, 2, 3], got [3, 3]' },
  { input: 'linearBackward: dWeight a Float64Array', call: (t) => t.linearBackward({ data: f32(6), shape: [2, 3] }, x(1, 2), { data: f32(24), shape: [3, 8] }, { dWeight: new Float64Array(24) }), error: TypeError, message: 'linearBackward: options.dWeight must be a Float32Array, got a Float64Array' },
  { input: 'linearBackward: dInput of the wrong size', call: (t) => t.linearBackward({ data: f32(6), shape: [2, 3] }, x(1, 2), { data: f32(24), shape: [3, 8] }, { dInput: f32(8) }), error: RangeError, message: 'linearBackward: options.dInput: expected 16 floats (the input\'s shape [1, 2, 8]), got 8' },
];
