// mha.Linear (bindings/js/core/linear-layer.js) on every wasm build and thread count: float32
// weights give what linear() gives and the textbook float64 product; f16 weights (as Uint16Array
// bits, or a Float32Array rounded there) give the float64 product of the f16 values; shapes on the
// kernels' tile edges, with and without bias, a few rows (decoding's GEMV) and many (the GEMM);
// int8 and q4 weights (from float32, f16 or bf16 bits, quantized in wasm a row at a time) give
// the float64 product of quantized-reference.js' dequantized values, within the int16 rounding of
// x on the GEMV path; rows() gives the held weights' rows (an embedding lookup);
// the heap stays flat across calls and dispose() gives back everything loadWeights took.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { floatToHalf, halfToFloat } from '../../bindings/js/formats/float16.js';
import { loadAllBuilds } from './all-builds.js';
import { assertClose, textbookLinear } from './float64-linear.js';
import { roundTrip } from './quantized-reference.js';
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

    test('int8 and q4 weights from float32, f16 and bf16 bits give the product of the dequantized weights; rows() reads them back', () => {
      let seed = 300;
      const bf16 = (x) => new Uint32Array(new Float32Array([x]).buffer)[0] >>> 16;  // (truncated: an exact bf16 value)
      const fromBf16 = (b) => new Float32Array(new Uint32Array([b << 16]).buffer)[0];
      for (const weightDtype of ['int8', 'q4']) {
        for (const [inF, outF] of SHAPES) {
          const floats = seededFloats(outF * inF, seed++);
          const sources = {
            f32: { weight: floats, values: floats },
            f16: { weight: Uint16Array.from(floats, floatToHalf), values: Float32Array.from(Uint16Array.from(floats, floatToHalf), halfToFloat) },
            bf16: { weight: Uint16Array.from(floats, bf16), values: Float32Array.from(Uint16Array.from(floats, bf16), fromBf16), weightFormat: 'bf16' },
          };
          for (const [format, { weight, values, weightFormat }] of Object.entries(sources)) {
            const held = roundTrip(weightDtype, values, outF, inF);
            const bias = seededFloats(outF, seed++);
            const layer = new build.Linear({ inFeatures: inF, outFeatures: outF, weightDtype });
            try {
              layer.loadWeights({ weight, bias, ...(weightFormat ? { weightFormat } : {}) });
              assert.ok(layer.byteSize < outF * inF + 64 * 32 + 16 * inF, `${weightDtype}: ${layer.byteSize} bytes for ${outF * inF} weights`);
              for (const rows of ROWS) {
                const x = seededFloats(rows * inF, seed++);
                const y = layer.forward({ data: x, shape: [rows, inF] }).data;
                const want = textbookLinear(x, held, bias, rows, inF, outF);
                // (the GEMV multiplies x rounded to int16: 2^-15 of each row's largest |x|, over `inF` terms)
                y.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 1e-3 * (1 + Math.abs(want[i])) + 1e-4 * inF,
                  `${weightDtype} from ${format}, ${rows}x${inF}x${outF} [${i}]: ${v} vs ${want[i]}`));
              }
              const ids = [outF - 1, 0, Math.floor(outF / 2)];
              const got = layer.rows(ids);
              ids.forEach((id, r) => assert.deepEqual(got.subarray(r * inF, (r + 1) * inF), held.subarray(id * inF, (id + 1) * inF), `${weightDtype} from ${format}: row ${id}`));
            } finally {
              layer.dispose();
            }
          }
        }
      }
    });

    test('rows() and weightFormat refuse bad input by name', () => {
      const layer = new build.Linear({ inFeatures: 4, outFeatures: 3, bias: false, weightDtype: 'q4' });
      try {
        assert.throws(() => layer.loadWeights({ weight: new Float32Array(12), weightFormat: 'bf16' }), { name: 'TypeError', message: /weights.weightFormat must be 'f32' \(or left out\) for a Float32Array/ });
        assert.throws(() => layer.loadWeights({ weight: new Uint16Array(12), weightFormat: 'f8' }), { name: 'TypeError', message: /weights.weightFormat must be 'f16' or 'bf16' for a Uint16Array/ });
        layer.loadWeights({ weight: new Uint16Array(12), weightFormat: 'bf16' });
        assert.throws(() => layer.rows([3]), { name: 'RangeError', message: 'rows: ids[0] = 3 is not a row index in [0, 3) (outFeatures)' });
        assert.throws(() => layer.rows('0'), { name: 'TypeError', message: /rows: ids must be an array or an Int32Array/ });
        assert.ok(layer.rows([2, 0]).every((v) => v === 0), 'zero weights give zero rows');
      } finally {
        layer.dispose();
      }
    });

    test('the heap is flat across calls, and dispose() gives back what loadWeights took', () => {
      for (const weightDtype of ['f32', 'f16', 'int8', 'q4']) {
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
