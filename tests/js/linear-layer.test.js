// mha.Linear (bindings/js/core/linear-layer.js) on every wasm build and thread count: float32
// weights give what linear() gives and the textbook float64 product; f16 weights (as Uint16Array
// bits, or a Float32Array rounded there) give the float64 product of the f16 values; shapes on the
// kernels' tile edges, with and without bias, a few rows (decoding's GEMV) and many (the GEMM);
// the heap stays flat across calls and dispose() gives back everything loadWeights took.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { floatToHalf, halfToFloat } from '../../bindings/js/formats/float16.js';
import { loadAllBuilds } from './all-builds.js';
import { assertClose, textbookLinear } from './float64-linear.js';
import { seededFloats } from './seeded.js';

const ROWS = [1, 3, 9, 130];  // below few_rows() (the GEMV), and the GEMM's row blocks
const SHAPES = [[1, 1], [5, 7], [64, 33], [70, 56]];  // [inFeatures, outFeatures]: tile edges of every build

const builds = await loadAllBuilds({ threadCounts: [1, 3] });

// One zero-filled 2.25 GiB array for every build's refusal test (its pages are never touched).
let huge = null;
const hugeWeight = () => (huge ??= new Float32Array(24576 * 24576));

for (const build of builds) {
  describe(`mha.Linear on ${build.label}`, () => {
    build.use();

    test('f32 weights: equal linear() and the float64 product, with and without bias', () => {
      let seed = 1;
      for (const [inF, outF] of SHAPES) {
        const w = seededFloats(outF * inF, seed++);
        const b = seededFloats(outF, seed++);
        for (const bias of [b, null]) {
          const layer = new build.Linear({ inFeatures: inF, outFeatures: outF, bias: bias !== null });
          try {
            layer.loadWeights(bias ? { weight: w, bias } : { weight: w });
            for (const rows of ROWS) {
              const x = seededFloats(rows * inF, seed++);
              const y = layer.forward({ data: x, shape: [rows, inF] });
              assert.deepEqual(y.shape, [rows, outF]);
              const name = `${rows}x${inF}x${outF}${bias ? '' : ' no bias'}`;
              assertClose(name, y.data, textbookLinear(x, w, bias, rows, inF, outF), inF);
              assertClose(`${name} vs linear()`, y.data, build.linear({ data: x, shape: [rows, inF] }, { data: w, shape: [outF, inF] }, bias).data, inF);
            }
          } finally {
            layer.dispose();
          }
        }
      }
    });

    test('f16 weights stay 16-bit: Uint16Array bits and a Float32Array give the float64 product of the f16 values', () => {
      let seed = 100;
      for (const [inF, outF] of SHAPES) {
        const bits = Uint16Array.from(seededFloats(outF * inF, seed++), floatToHalf);
        const widened = Float32Array.from(bits, halfToFloat);
        const bias = seededFloats(outF, seed++);
        const fromBits = new build.Linear({ inFeatures: inF, outFeatures: outF, weightDtype: 'f16' });
        const fromFloats = new build.Linear({ inFeatures: inF, outFeatures: outF, weightDtype: 'f16' });
        try {
          fromBits.loadWeights({ weight: bits, bias });
          fromFloats.loadWeights({ weight: widened, bias });  // (f16 values: rounding keeps them)
          assert.equal(fromBits.byteSize, fromFloats.byteSize);
          assert.ok(fromBits.byteSize < 2 * 4 * outF * inF + 4 * 32 * inF + 4 * 32, `f16 panels: ${fromBits.byteSize} bytes`);
          for (const rows of ROWS) {
            const x = seededFloats(rows * inF, seed++);
            const y = fromBits.forward({ data: x, shape: [rows, inF] });
            assert.deepEqual(y.shape, [rows, outF]);
            assertClose(`${rows}x${inF}x${outF} f16`, y.data, textbookLinear(x, widened, bias, rows, inF, outF), inF);
            assert.deepEqual(fromFloats.forward({ data: x, shape: [rows, inF] }).data, y.data);
          }
        } finally {
          fromBits.dispose();
          fromFloats.dispose();
        }
      }
    });

    test('a float32 weight in an f16 layer is rounded to f16 (nearest even), as floatToHalf does', () => {
      const [inF, outF] = [16, 9];
      const w = seededFloats(outF * inF, 7);
      const rounded = Float32Array.from(w, (v) => halfToFloat(floatToHalf(v)));
      const layer = new build.Linear({ inFeatures: inF, outFeatures: outF, bias: false, weightDtype: 'f16' }).loadWeights({ weight: w });
      try {
        const x = seededFloats(2 * inF, 8);
        assertClose('rounded', layer.forward({ data: x, shape: [2, inF] }).data, textbookLinear(x, rounded, null, 2, inF, outF), inF);
      } finally {
        layer.dispose();
      }
    });

    test('batched shapes keep their leading dimensions; options.out is written whole and returned', () => {
      const [B, T, inF, outF] = [2, 3, 6, 5];
      const layer = new build.Linear({ inFeatures: inF, outFeatures: outF }).loadWeights({ weight: seededFloats(outF * inF, 9), bias: seededFloats(outF, 10) });
      try {
        const x = { data: seededFloats(B * T * inF, 11), shape: [B, T, inF] };
        const y = layer.forward(x);
        assert.deepEqual(y.shape, [B, T, outF]);
        const out = new Float32Array(B * T * outF).fill(NaN);
        const given = layer.forward(x, { out });
        assert.equal(given.data, out);
        assert.deepEqual(out, y.data);
        assert.deepEqual(layer.config, { inFeatures: inF, outFeatures: outF, bias: true, weightDtype: 'f32' });
      } finally {
        layer.dispose();
      }
    });

    test('weights that cannot fit are refused before anything is allocated, naming the sizes', () => {
      const side = 24576;  // a 2.25 GiB float32 weight: copied in and packed, 4.5 GiB
      const before = build.heapAllocatedBytes();
      const layer = new build.Linear({ inFeatures: side, outFeatures: side, bias: false });
      try {
        assert.throws(() => layer.loadWeights({ weight: hugeWeight() }), (error) => {
          assert.equal(error.constructor, RangeError);
          assert.match(error.message, /^loadWeights: the weights need 4\.5 GiB of WebAssembly memory \(weight copied in 2\.2 GiB, packed weights \(f32\) 2\.3 GiB\), more than the [\d.]+ GiB this build can address$/);
          return true;
        });
        assert.equal(layer.byteSize, 0);
      } finally {
        layer.dispose();
      }
      assert.equal(build.heapAllocatedBytes(), before);
    });

    test('the heap is flat across calls, and dispose() gives back what loadWeights took', () => {
      for (const weightDtype of ['f32', 'f16']) {
        const before = build.heapAllocatedBytes();
        const layer = new build.Linear({ inFeatures: 96, outFeatures: 200, weightDtype });
        layer.loadWeights({ weight: seededFloats(200 * 96, 12), bias: seededFloats(200, 13) });
        assert.ok(build.heapAllocatedBytes() - before >= layer.byteSize, `${weightDtype}: the weights live in wasm memory`);
        for (const rows of [1, 40]) {
          const x = { data: seededFloats(rows * 96, 14), shape: [rows, 96] };
          layer.forward(x);  // (warm-up: a thread's first call may allocate its own scratch once)
          const heap = build.heapAllocatedBytes();
          for (let i = 0; i < 5; i++) layer.forward(x);
          assert.equal(build.heapAllocatedBytes(), heap, `${weightDtype}, ${rows} rows: nothing kept per call`);
        }
        layer.dispose();
        assert.equal(build.heapAllocatedBytes(), before, `${weightDtype}: dispose frees the weights`);
        assert.equal(layer.alive, false);
        layer.dispose();  // (twice is fine)
      }
    });
  });
}
