// readOnnx + loadQuantized: an ONNX file written here with onnxruntime's conventions (com.microsoft
// MatMulNBits 4-bit blocks of 32 with and without zero points; int8 as DequantizeLinear -> MatMul,
// as quantize_dynamic's MatMulInteger -> Cast -> Mul, as DynamicQuantizeMatMul) is read into a
// quantized layer without a float32 detour: the bytes read equal the bytes written, the layer
// stores exactly their dequantized values, and its output matches onnxruntime-web's on the same
// file (when bench/ has it installed: `npm ci --prefix bench --ignore-scripts`).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';

import { readOnnx } from '../../bindings/js/index.js';
import { loadBuild } from '../../tools/load-wasm-build.mjs';
import { selfAttentionModel } from '../../bench/onnx-graph.mjs';
import { dequantize, q4Blocks, quantizeInt8, quantizeQ4 } from './quantized-reference.js';
import { seededFloats } from './seeded.js';

const ORT_PATH = new URL('../../bench/node_modules/onnxruntime-web/dist/ort.node.min.mjs', import.meta.url);
const ort = existsSync(ORT_PATH) ? (await import(ORT_PATH)).default : null;
if (ort) ort.env.wasm.numThreads = 1;
const { MultiHeadAttention } = await loadBuild('mha-simd');

/**
 * q4 with a zero point per block, as onnxruntime's MatMulNBits quantizer writes (asymmetric:
 * scale = (max - min) / 15, zero point = round(-min / scale)), in MatMulNBits' layout.
 */
function asymmetricQ4(w, rows, cols) {
  const blocks = q4Blocks(cols), zpBytes = Math.ceil(blocks / 2);
  const data = new Uint8Array(rows * blocks * 16), scales = new Float32Array(rows * blocks), zeroPoints = new Uint8Array(rows * zpBytes);
  for (let o = 0; o < rows; o++) {
    for (let b = 0; b < blocks; b++) {
      const x = (j) => (b * 32 + j < cols ? w[o * cols + b * 32 + j] : 0);
      let min = 0, max = 0;
      for (let j = 0; j < 32; j++) { min = Math.min(min, x(j)); max = Math.max(max, x(j)); }
      const scale = Math.fround((max - min) / 15) || 1, zp = Math.min(15, Math.max(0, Math.round(-min / scale)));
      scales[o * blocks + b] = scale;
      zeroPoints[o * zpBytes + (b >> 1)] |= b & 1 ? zp << 4 : zp;
      for (let j = 0; j < 32; j++) {
        const q = Math.min(15, Math.max(0, Math.round(x(j) / scale) + zp));
        data[(o * blocks + b) * 16 + (j >> 1)] |= j & 1 ? q << 4 : q;
      }
    }
  }
  return { dtype: 'q4', shape: [rows, cols], data, scales, zeroPoints };
}

// A GQA layer whose sizes are not multiples of 32 (E 80: two blocks and a half per row).
const B = 2, L = 6, E = 80, H = 4, Hkv = 2, KV = 40;
const weights = {
  q_proj_weight: seededFloats(E * E, 1, 0.2), k_proj_weight: seededFloats(KV * E, 2, 0.2), v_proj_weight: seededFloats(KV * E, 3, 0.2),
  in_proj_bias: seededFloats(E + 2 * KV, 4, 0.1), 'out_proj.weight': seededFloats(E * E, 5, 0.2), 'out_proj.bias': seededFloats(E, 6, 0.1),
};
const x = { data: seededFloats(B * L * E, 9), shape: [B, L, E] };
// The graphs' outputs name their linear layers: q0, k0, v0 (the projections), o3 (the output's).
const NAMES = { q_proj_weight: 'q0', k_proj_weight: 'k0', v_proj_weight: 'v0', 'out_proj.weight': 'o3' };

/** The quantized layer made from an ONNX file's initializers (the exporter folded the softmax scale into q: scale 1). */
function layerFromOnnx(onnx, weightDtype) {
  const layer = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv, scale: 1, weightDtype });
  return layer.loadQuantized({
    ...Object.fromEntries(Object.entries(NAMES).map(([key, name]) => [key, onnx.linear(name)])),
    in_proj_bias: Float32Array.from([...onnx.floats('bq'), ...onnx.floats('bk'), ...onnx.floats('bv')]),
    'out_proj.bias': onnx.floats('bo'),
  });
}

function relativeDifference(got, want) {
  let worst = 0, largest = 0;
  for (let i = 0; i < want.length; i++) {
    worst = Math.max(worst, Math.abs(got[i] - want[i]));
    largest = Math.max(largest, Math.abs(want[i]));
  }
  return worst / largest;
}

const FILES = [
  // graphs per projection, the layer's weightDtype, ORT-web's expected agreement (int8 graphs of
  // quantize_dynamic / DynamicQuantizeMatMul also quantize the activations, so agree less closely)
  { graphs: { Wq: 'q4', Wk: 'q4', Wv: 'q4', Wo: 'q4' }, zeroPoints: true, dtype: 'q4', ort: 1e-5 },
  { graphs: { Wq: 'q4', Wk: 'q4', Wv: 'q4', Wo: 'q4' }, zeroPoints: false, dtype: 'q4', ort: 1e-5 },
  { graphs: { Wq: 'int8-qdq', Wk: 'int8-qdq', Wv: 'int8-qdq', Wo: 'int8-qdq' }, dtype: 'int8', ort: 1e-5 },
  { graphs: { Wq: 'int8-mmi', Wk: 'int8', Wv: 'int8-mmi', Wo: 'int8' }, dtype: 'int8', ort: 2e-2 },
  { graphs: { Wq: 'q4', Wk: 'int8-qdq', Wv: 'int8-mmi', Wo: 'q4' }, zeroPoints: true, dtype: 'q4', ort: 2e-2 },
];

for (const file of FILES) {
  const label = `${Object.values(file.graphs).join(', ')}${file.zeroPoints ? ' (with zero points)' : ''}`;
  test(`readOnnx -> loadQuantized: ${label}`, async () => {
    const quantizers = { int8: quantizeInt8, q4: file.zeroPoints ? asymmetricQ4 : quantizeQ4 };
    const bytes = selfAttentionModel({ B, L, E, H, Hkv }, weights, { graphs: file.graphs, quantizers });
    const onnx = readOnnx(bytes);
    // The bytes read are the bytes written (q's scales carry the folded softmax scale).
    const scale = 1 / Math.sqrt(E / H);
    for (const [key, name] of Object.entries(NAMES)) {
      const graph = file.graphs[{ q0: 'Wq', k0: 'Wk', v0: 'Wv', o3: 'Wo' }[name]];
      const [rows, cols] = key.startsWith('q') || key.startsWith('out') ? [E, E] : [KV, E];
      const written = quantizers[graph.startsWith('int8') ? 'int8' : 'q4'](weights[key], rows, cols);
      const read = onnx.linear(name);
      assert.deepEqual(read.shape, [rows, cols]);
      assert.deepEqual(read.data, written.data, `${key} data`);
      assert.deepEqual(read.scales, written.scales.map((s) => (key.startsWith('q') ? s * scale : s)), `${key} scales`);
      assert.deepEqual(read.zeroPoints, written.zeroPoints ?? null, `${key} zero points`);
    }
    // Each projection in its own format, whatever the layer's weightDtype: loadQuantized keeps them as given.
    const layer = layerFromOnnx(onnx, file.dtype);
    try {
      const stored = layer.stateDict();
      for (const [key, name] of Object.entries(NAMES)) assert.deepEqual(stored[key], dequantize(onnx.linear(name)), `${key} stored`);
      const reference = new MultiHeadAttention({ embedDim: E, numHeads: H, numKvHeads: Hkv, scale: 1 }).loadStateDict(stored);
      const ours = layer.forward(x).output.data;
      assert.ok(relativeDifference(ours, reference.forward(x).output.data) < 1e-5, 'against the dequantized float32 layer');
      reference.dispose();
      if (ort) {
        const session = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
        const theirs = (await session.run({ query: new ort.Tensor('float32', x.data, x.shape) })).output.data;
        await session.release();
        const difference = relativeDifference(ours, theirs);
        console.log(`# ${label}: onnxruntime-web ${difference.toExponential(2)} from ours`);
        assert.ok(difference < file.ort, `onnxruntime-web: ${difference}`);
      }
    } finally {
      layer.dispose();
    }
  });
}

test('readOnnx: what it cannot hold as is, it says', () => {
  const bytes = (graphs, q4) => selfAttentionModel({ B, L, E, H, Hkv }, weights, { graphs, quantizers: { int8: quantizeInt8, q4 } });
  assert.throws(() => readOnnx(new Uint8Array([8, 1, 0xff])), /truncated|not an ONNX model/);
  assert.throws(() => readOnnx('model.onnx'), { name: 'TypeError', message: 'readOnnx: bytes must be a Uint8Array or an ArrayBuffer (the .onnx file), got string model.onnx' });
  const onnx = readOnnx(bytes({ Wq: 'q4', Wk: 'q4', Wv: 'q4', Wo: 'f32' }, quantizeQ4));
  assert.throws(() => onnx.linear('o3'), { name: 'TypeError', message: "readOnnx: no quantized linear layer named 'o3'; found 3: q0, k0, v0" });
  assert.throws(() => onnx.floats('nope'), { name: 'TypeError', message: "readOnnx: no initializer named 'nope'" });
  assert.throws(() => onnx.floats('q_groups'), { name: 'TypeError', message: "readOnnx: initializer 'q_groups' holds int64, not floats" });
});
