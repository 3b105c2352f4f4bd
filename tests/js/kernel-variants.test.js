// The kernel variants through the public API (src/mha/kernels/kernel_choice.hpp,
// bindings/js/core/kernel-choice.js): every GEMM variant forced by init's `kernels` option, on the
// SIMD and scalar builds, against the float64 textbook product on shapes that hit every tile edge
// (the reference's tolerance), and a layer's forward pass the same bits on every variant; every
// f16 and q4 decode GEMV variant forced the same way, a Linear layer's one-row product against
// the float64 product of the weights it holds (f16 at its extremes too), on the relaxed-SIMD
// build as well (its fused multiply-add; Node 20 gets relaxed SIMD from V8's flag, set below,
// Node 22+ has it); every flash-attention
// variant with every exp scheme forced the same way, against the float64 formula (outputs and
// weights, causal or not, across key tiles); mha.kernelChoice() says what runs and why; unknown
// names are refused by name; MHA_KERNELS forces a variant in Node; a calibration is saved and the
// next process restores it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import v8 from 'node:v8';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { floatToHalf, halfToFloat } from '../../bindings/js/formats/float16.js';
import { assertClose, textbookLinear } from './float64-linear.js';
import { roundTrip } from './quantized-reference.js';
import { seededFloats } from './seeded.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'mha-kernel-choice-'));
process.env.MHA_KERNEL_CACHE = join(cacheDir, 'this-process.json');  // (before the first init)
after(() => rmSync(cacheDir, { recursive: true, force: true }));
v8.setFlagsFromString('--experimental-wasm-relaxed-simd');  // (Node 20; shipped from V8 11.4 on)
const { init } = await import('../../bindings/js/index.js');

// Each build whose kernels come in variants, by the init() options that load it.
const BUILDS = [
  { name: 'mha-simd', options: { simd: true, relaxedSimd: false } },
  { name: 'mha-relaxed-simd', options: { simd: true, relaxedSimd: true } },
  { name: 'mha-scalar', options: { simd: false } },
];

// Rows around every tile height (1-6, 8), depths across the 512-float depth block and not a
// multiple of the shuffle broadcast's 4, columns around the 8-wide panel.
const SHAPES = [[1, 3, 1], [5, 6, 7], [7, 64, 9], [9, 517, 16], [13, 33, 33], [24, 5, 4], [121, 40, 17]];

for (const { name: buildName, options: build } of BUILDS) {
  describe(`GEMM variants, ${buildName}`, async () => {
    const mha = await init({ ...build, threads: 1 });
    const { variants } = mha.kernelChoice().gemm;

    test('every variant matches the float64 product on every tile edge', async () => {
      assert.ok(variants.length >= 10, variants.join(', '));
      for (const name of variants) {
        const forced = await init({ ...build, threads: 1, kernels: { gemm: name } });
        assert.equal(forced, mha, 'the same module, its choice forced');
        assert.equal(mha.kernelChoice().gemm.variant, name);
        assert.equal(mha.kernelChoice().gemm.source, 'forced');
        for (const [rows, inF, outF] of SHAPES) {
          const x = seededFloats(rows * inF, rows + 1), w = seededFloats(outF * inF, inF + 2), b = seededFloats(outF, outF + 3);
          const y = mha.linear({ data: x, shape: [rows, inF] }, { data: w, shape: [outF, inF] }, b);
          assertClose(`${name} ${rows}x${inF}x${outF}`, y.data, textbookLinear(x, w, b, rows, inF, outF), inF);
        }
      }
    });

    test("a layer's forward pass gives the same bits on every variant", async () => {
      const layer = new mha.MultiHeadAttention({ embedDim: 48, numHeads: 3 });
      layer.initialize({ seed: 5 });
      const query = { data: seededFloats(37 * 48, 9), shape: [37, 48] };
      let first;
      try {
        for (const name of variants) {
          await init({ ...build, threads: 1, kernels: { gemm: name } });
          const out = layer.forward(query, null, null, { causal: true }).output.data;
          if (!first) first = out;
          else assert.deepEqual(out, first, name);
        }
      } finally {
        layer.dispose();
      }
    });
  });
}

/** softmax(q k^T / sqrt(E)) v and the weights per head, float64, for [1, H, L, E] / [1, H, S, E]. */
function attentionFormula(q, k, v, H, L, S, E, causal) {
  const out = new Float64Array(H * L * E), weights = new Float64Array(H * L * S);
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < L; i++) {
      const seen = causal ? Math.min(S, i + 1) : S;
      const logits = Array.from({ length: seen }, (_, j) => {
        let dot = 0;
        for (let d = 0; d < E; d++) dot += q[(h * L + i) * E + d] * k[(h * S + j) * E + d];
        return dot / Math.sqrt(E);
      });
      const max = Math.max(...logits), p = logits.map((x) => Math.exp(x - max)), sum = p.reduce((a, x) => a + x, 0);
      p.forEach((pj, j) => { weights[(h * L + i) * S + j] = pj / sum; });
      for (let d = 0; d < E; d++) out[(h * L + i) * E + d] = p.reduce((a, pj, j) => a + (pj / sum) * v[(h * S + j) * E + d], 0);
    }
  }
  return { out, weights };
}

for (const { name: buildName, options: build } of BUILDS) {
  describe(`flash-attention and exp variants, ${buildName}`, async () => {
    const mha = await init({ ...build, threads: 1 });
    const { flash, exp } = mha.kernelChoice();

    test('every flash variant with every exp matches the float64 formula across key tiles', async () => {
      assert.ok(flash.variants.includes('4x128') && flash.variants.length >= 6, flash.variants.join(', '));
      assert.deepEqual(exp.variants, ['estrin5', 'horner5']);
      // 70 query rows (two blocks and a partial tile of every height), 300 keys (partial tiles of
      // 64, 128 and 256), head size 16.
      const [H, L, S, E] = [2, 70, 300, 16];
      const q = seededFloats(H * L * E, 31), k = seededFloats(H * S * E, 32), v = seededFloats(H * S * E, 33);
      const tensor = (data, n) => ({ data, shape: [1, H, n, E] });
      const want = [false, true].map((causal) => attentionFormula(q, k, v, H, L, S, E, causal));
      for (const f of flash.variants) {
        for (const e of exp.variants) {
          await init({ ...build, threads: 1, kernels: { flash: f, exp: e } });
          const choice = mha.kernelChoice();
          assert.deepEqual([choice.flash.variant, choice.flash.source, choice.exp.variant, choice.exp.source], [f, 'forced', e, 'forced']);
          for (const causal of [false, true]) {
            const r = mha.scaledDotProductAttention(tensor(q, L), tensor(k, S), tensor(v, S), { causal, needWeights: true });
            const { out, weights } = want[Number(causal)];
            const close = (what, got, ref) => got.forEach((x, i) => assert.ok(Math.abs(x - ref[i]) <= 2e-6 + 2e-5 * Math.abs(ref[i]),
              `${f} ${e} causal=${causal} ${what}[${i}]: ${x} vs ${ref[i]}`));
            close('output', r.output.data, out);
            close('weights', r.weights.data, weights);
          }
        }
      }
    });
  });
}

// One row (the decode GEMV) against columns under a panel and over the even-odd kernels' 4-panel
// minimum, depths under and over a q4 block.
const GEMV_SHAPES = [[45, 13], [96, 200], [517, 40], [300, 72]];

for (const { name: buildName, options: build } of BUILDS) {
  describe(`decode GEMV variants, ${buildName}`, async () => {
    const mha = await init({ ...build, threads: 1 });

    test('every f16 variant gives the float64 product of the f16 weights, at their extremes too, and even-odd the widen bits', async () => {
      const { variants } = mha.kernelChoice().gemv_f16;
      assert.ok(variants.includes('widen') && variants.includes('even-odd'), variants.join(', '));
      const cases = GEMV_SHAPES.map(([inF, outF], i) => {
        const values = seededFloats(outF * inF, 40 + i);
        // f16's largest value and subnormal halves among the weights, |x| up to 1e4 and tiny
        for (let j = 0; j < values.length; j += 7) values[j] = j % 2 ? 65504 : -(2 ** -24) * (1 + (j % 1000));
        const bits = Uint16Array.from(values, floatToHalf);
        const x = seededFloats(inF, 50 + i).map((v, j) => (j % 3 === 0 ? v * 1e4 : j % 3 === 1 ? v * 1e-5 : v));
        return { inF, outF, bits, widened: Float32Array.from(bits, halfToFloat), x, bias: seededFloats(outF, 60 + i) };
      });
      const results = {};
      for (const name of variants) {
        await init({ ...build, threads: 1, kernels: { gemv_f16: name } });
        assert.deepEqual([mha.kernelChoice().gemv_f16.variant, mha.kernelChoice().gemv_f16.source], [name, 'forced']);
        results[name] = cases.map(({ inF, outF, bits, widened, x, bias }) => {
          const layer = new mha.Linear({ inFeatures: inF, outFeatures: outF, weightDtype: 'f16' }).loadWeights({ weight: bits, bias });
          try {
            const y = layer.forward({ data: x, shape: [1, inF] }).data;
            const want = textbookLinear(x, widened, bias, 1, inF, outF);
            const scale = want.reduce((m, v) => Math.max(m, Math.abs(v)), 1);
            y.forEach((v, o) => assert.ok(Math.abs(v - want[o]) <= 1e-6 * scale * (1 + inF / 512) + 1e-5 * Math.abs(want[o]),
              `f16 ${name} ${inF}x${outF} [${o}]: ${v} vs ${want[o]}`));
            return y;
          } finally {
            layer.dispose();
          }
        });
      }
      // The even-odd kernel moves the rebias out of the loop by powers of two: the widen kernel's bits.
      assert.deepEqual(results['even-odd'], results.widen);
    });

    test('every q4 variant gives the same bits, within the int16 activations of the float64 product', async () => {
      const { variants } = mha.kernelChoice().gemv_q4;
      assert.ok(variants.length >= 3 && variants[0] === '1p', variants.join(', '));
      let first;
      for (const name of variants) {
        await init({ ...build, threads: 1, kernels: { gemv_q4: name } });
        assert.equal(mha.kernelChoice().gemv_q4.variant, name);
        const ys = GEMV_SHAPES.map(([inF, outF], i) => {
          const values = seededFloats(outF * inF, 70 + i), bias = seededFloats(outF, 80 + i), x = seededFloats(inF, 90 + i);
          const layer = new mha.Linear({ inFeatures: inF, outFeatures: outF, weightDtype: 'q4' }).loadWeights({ weight: values, bias });
          try {
            const y = layer.forward({ data: x, shape: [1, inF] }).data;
            const want = textbookLinear(x, roundTrip('q4', values, outF, inF), bias, 1, inF, outF);
            // (x rounded to int16: 2^-15 of its largest |x|, over `inF` terms)
            y.forEach((v, o) => assert.ok(Math.abs(v - want[o]) <= 1e-3 * (1 + Math.abs(want[o])) + 1e-4 * inF,
              `q4 ${name} ${inF}x${outF} [${o}]: ${v} vs ${want[o]}`));
            return y;
          } finally {
            layer.dispose();
          }
        });
        if (!first) first = ys;
        else assert.deepEqual(ys, first, `${name}: the integer sums are exact in any order`);
      }
    });
  });
}

describe('the choice', () => {
  test('kernelChoice() reports the variant, its source and every variant', async () => {
    const mha = await init({ threads: 1, kernels: { gemm: '3x8' } });
    const choice = mha.kernelChoice();
    assert.deepEqual(Object.keys(choice), ['gemm', 'gemv_f16', 'gemv_q4', 'flash', 'exp']);
    assert.equal(choice.gemm.variant, '3x8');
    assert.equal(choice.gemm.source, 'forced');
    assert.ok(choice.gemm.variants.includes('4x8') && choice.gemm.variants.includes('8x4'));
    assert.ok(Object.isFrozen(choice) && Object.isFrozen(choice.gemm) && Object.isFrozen(choice.gemv_q4));
    const both = await init({ threads: 1, kernels: { gemv_f16: 'even-odd-k4', gemv_q4: '2p' } });
    assert.deepEqual([both.kernelChoice().gemv_f16.variant, both.kernelChoice().gemv_q4.variant, both.kernelChoice().gemm.variant],
      ['even-odd-k4', '2p', '3x8'], 'each kernel forced alone');
  });

  test('unknown kernels and variants are refused by name', async () => {
    await assert.rejects(init({ kernels: { gemm: '9x9' } }), { name: 'TypeError', message: /init: kernels: unknown gemm variant '9x9'; known: 1x8, 2x8, .*4x8/ });
    await assert.rejects(init({ kernels: { softmax: 'fast' } }), { name: 'TypeError', message: "init: kernels: unknown kernel 'softmax'; known kernels: gemm, gemv_f16, gemv_q4, flash, exp" });
    await assert.rejects(init({ kernels: { exp: 'taylor2' } }), { name: 'TypeError', message: "init: kernels: unknown exp variant 'taylor2'; known: estrin5, horner5" });
    await assert.rejects(init({ kernels: { flash: '3x3' } }), { name: 'TypeError', message: /init: kernels: unknown flash variant '3x3'; known: 2x128, 4x128, / });
    await assert.rejects(init({ kernels: { gemv_f16: 'odd' } }), { name: 'TypeError', message: /init: kernels: unknown gemv_f16 variant 'odd'; known: widen, / });
    await assert.rejects(init({ kernels: 'gemm=4x8' }), { name: 'TypeError', message: /init: kernels must be an object such as \{ gemm: '4x8' \}, got string/ });
    await assert.rejects(init({ kernels: { gemm: 4 } }), { name: 'TypeError', message: 'init: kernels.gemm must be a variant name (a string), got number' });
    const mha = await init({ threads: 1, kernels: { gemm: '5x8' } });
    await assert.rejects(init({ threads: 1, kernels: { gemm: 'nope' } }), /unknown gemm variant 'nope'/);
    assert.equal(mha.kernelChoice().gemm.variant, '5x8', 'a refused name changes nothing');
  });
});

/** Runs a fresh Node process that loads the package and prints mha.kernelChoice() as JSON. */
function childChoice(env) {
  const script = "const { init } = await import(process.argv[1]); const mha = await init({ threads: 1 }); "
    + 'console.log(JSON.stringify(mha.kernelChoice()));';
  const index = new URL('../../bindings/js/index.js', import.meta.url).href;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, index], {
    env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out.trim().split('\n').at(-1));
}

describe('between processes (Node)', () => {
  test('a first process calibrates and saves; the next restores the saved choice', () => {
    const file = join(cacheDir, 'saved.json');
    const all = childChoice({ MHA_KERNEL_CACHE: file, MHA_KERNELS: '' }), first = all.gemm;
    assert.equal(first.source, 'calibrated');
    assert.ok(first.variants.includes(first.variant));
    assert.equal(Object.keys(first.gflops).length, first.variants.length);
    // (which variant wins is a timing, so it is not asserted: each reported figure is a rate)
    assert.ok(Object.values(first.gflops).every((g) => g > 0), JSON.stringify(first.gflops));
    let saved;
    try {
      saved = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      // A calibration cut off while the engine was still optimizing (a very loaded machine) is used
      // but not kept: the next process measures again.
      assert.equal(childChoice({ MHA_KERNEL_CACHE: file, MHA_KERNELS: '' }).gemm.source, 'calibrated');
      return;
    }
    assert.equal(saved.version, 4);
    const [key] = Object.keys(saved.choices);
    assert.match(key, /^mha-(relaxed-)?simd \| .* \| node v/);
    assert.equal(saved.choices[key].gemm, first.variant);
    assert.deepEqual([saved.choices[key].flash, saved.choices[key].exp], [all.flash.variant, all.exp.variant]);
    assert.ok(['gemv_f16', 'gemv_q4'].every((kernel) => typeof saved.choices[key][kernel] === 'string'), JSON.stringify(saved.choices[key]));
    const again = childChoice({ MHA_KERNEL_CACHE: file, MHA_KERNELS: '' });
    for (const kernel of ['gemm', 'gemv_f16', 'gemv_q4', 'flash', 'exp']) {
      assert.equal(all[kernel].source, 'calibrated', kernel);
      assert.ok(Object.values(all[kernel].gflops).every((g) => g > 0), `${kernel}: ${JSON.stringify(all[kernel].gflops)}`);
      assert.deepEqual([again[kernel].variant, again[kernel].source, again[kernel].gflops], [all[kernel].variant, 'saved', null], kernel);
    }
  });

  test('MHA_KERNELS forces a variant, and an unknown one fails init by name', () => {
    const forced = childChoice({ MHA_KERNEL_CACHE: 'off', MHA_KERNELS: 'gemm=2x8,gemv_q4=2p,flash=2x128,exp=horner5' });
    assert.deepEqual([forced.gemm.variant, forced.gemm.source], ['2x8', 'forced']);
    assert.deepEqual([forced.gemv_q4.variant, forced.gemv_q4.source], ['2p', 'forced']);
    assert.deepEqual([forced.flash.variant, forced.flash.source, forced.exp.variant, forced.exp.source], ['2x128', 'forced', 'horner5', 'forced']);
    assert.throws(() => childChoice({ MHA_KERNEL_CACHE: 'off', MHA_KERNELS: 'gemm=7x7' }),
      (error) => /MHA_KERNELS: unknown gemm variant '7x7'; known: 1x8/.test(String(error.stderr)));
  });
});
