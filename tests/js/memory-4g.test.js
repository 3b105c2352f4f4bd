// The whole 4 GiB of wasm32, on every build: a filler taken first (2 GiB through the module's own
// malloc, then every free block left below 2 GiB) makes every later allocation land above 2^31.
// Inputs, weights, a KV cache, results and gradients then live there; the pointers the JS side
// sees are checked to be above 2^31, sampled output rows match a float64 computation, and every
// result is bit for bit the same build's result at low addresses (taken before the filler).
// The filler is never written, so it costs address space, not resident memory.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { attendRow, projectRow } from './float64-attention.js';
import { below2GiB, recordPointers, takeLowMemory, TWO_GIB } from './memory-4g-filler.js';
import { seededFloats } from './seeded.js';

const E = 64, H = 4, B = 2, L = 40, PREFILL = 32;

/** The state dict of the test layer (in_proj: [3E, E], out_proj: [E, E]). */
function stateDict() {
  return {
    in_proj_weight: seededFloats(3 * E * E, 11, 0.2), in_proj_bias: seededFloats(3 * E, 12, 0.1),
    'out_proj.weight': seededFloats(E * E, 13, 0.2), 'out_proj.bias': seededFloats(E, 14, 0.1),
  };
}

/** Row (b, i) of the causal self-attention output in float64, with key j masked where pad[b][j]. */
function referenceRow(sd, x, b, i, pad) {
  const project = (j, part) => projectRow(x, b * L + j, sd.in_proj_weight, sd.in_proj_bias, part * E, E);
  const keys = [], values = [];
  for (let j = 0; j <= i; j++) if (!pad?.[b]?.[j]) { keys.push(project(j, 1)); values.push(project(j, 2)); }
  return attendRow(project(i, 0), keys, values, H, sd['out_proj.weight'], sd['out_proj.bias']);
}

function assertRowClose(got, want, what) {
  for (let o = 0; o < E; o++) {
    if (!(Math.abs(got[o] - want[o]) <= 2e-5 + 1e-4 * Math.abs(want[o]))) assert.fail(`${what}[${o}]: ${got[o]} vs float64 ${want[o]}`);
  }
}

/** Rows [from, to) of a [B, L, E] tensor. */
function rows(data, from, to) {
  const out = new Float32Array(B * (to - from) * E);
  for (let b = 0; b < B; b++) out.set(data.subarray((b * L + from) * E, (b * L + to) * E), b * (to - from) * E);
  return { data: out, shape: [B, to - from, E] };
}

/** Everything the test runs on one layer; the same calls at low and at high addresses. */
function runAll(MultiHeadAttention) {
  const sd = stateDict();
  const x = seededFloats(B * L * E, 21, 1.0);
  const pad = Uint8Array.from({ length: B * L }, (_, k) => (k % L === 5 || k === L + 17 ? 1 : 0));
  const layer = new MultiHeadAttention({ embedDim: E, numHeads: H }).loadStateDict(sd);
  try {
    const r = {};
    r.stateDict = layer.stateDict();
    const full = layer.forward({ data: x, shape: [B, L, E] }, null, null, {
      causal: true, keyPaddingMask: { data: pad, shape: [B, L] }, needWeights: true,
    });
    r.output = full.output.data;
    r.weights = full.weights.data;
    // Decoding: a prefill of PREFILL tokens, then one token per step, from a cache.
    const cache = layer.createCache({ batch: B, capacity: L });
    const steps = [layer.forward(rows(x, 0, PREFILL), null, null, { cache }).output.data];
    for (let i = PREFILL; i < L; i++) steps.push(layer.forward(rows(x, i, i + 1), null, null, { cache }).output.data);
    r.decode = steps;
    // Cross-attention from a cache filled by setKeyValue.
    const cross = layer.createCache({ batch: B, capacity: L });
    const memory = { data: seededFloats(B * L * E, 22, 1.0), shape: [B, L, E] };
    cross.setKeyValue(memory, memory);
    r.cross = layer.forward(rows(x, 0, 3), null, null, { cache: cross }).output.data;
    // Training: gradients of every input and parameter.
    const t = layer.forward({ data: x, shape: [B, L, E] }, null, null, { grad: true, causal: true });
    const g = t.backward({ data: seededFloats(B * L * E, 23, 1.0), shape: [B, L, E] });
    r.gradQuery = g.query.data;
    r.gradParams = g.params;
    return { r, sd, x, pad };
  } finally {
    layer.dispose();
  }
}

for (const name of BUILDS) {
  describe(`4 GiB of wasm memory on ${name}`, () => {
    let build, low, high, pointers, memoryBytes, held;
    before(async () => {
      build = await loadBuild(name);
      build.module.setNumThreads?.(2);
      const memory = () => (build.module.wasmMemory?.buffer ?? build.module.HEAP8.buffer).byteLength;
      low = runAll(build.MultiHeadAttention).r;
      held = takeLowMemory(build.module);
      pointers = recordPointers(build.module);
      high = runAll(build.MultiHeadAttention);
      memoryBytes = memory();
    });
    after(() => {
      for (const p of held ?? []) build.module._free(p);
    });

    test('the memory grew past 2 GiB, and every pointer the JS side saw is above 2^31', () => {
      assert.ok(memoryBytes > TWO_GIB + 2 ** 20, `memory: ${memoryBytes} bytes`);
      assert.ok(pointers.length > 40, `${pointers.length} pointers seen`);
      assert.deepEqual(below2GiB(pointers), [], 'pointers below 2^31 (or not unsigned)');
    });

    test('sampled output rows match float64 (causal, padding mask)', () => {
      const { r, sd, x, pad } = high;
      const padRows = [pad.subarray(0, L), pad.subarray(L)];
      for (const [b, i] of [[0, 0], [0, 6], [0, 39], [1, 17], [1, 18], [1, 31]]) {
        assertRowClose(r.output.subarray((b * L + i) * E, (b * L + i + 1) * E), referenceRow(sd, x, b, i, padRows), `output row ${b},${i}`);
      }
    });

    test('decode steps from a cache above 2 GiB match float64', () => {
      const { r, sd, x } = high;
      for (const [step, i] of [[1, PREFILL], [5, PREFILL + 4], [8, L - 1]]) {
        for (let b = 0; b < B; b++) {
          assertRowClose(r.decode[step].subarray(b * E, (b + 1) * E), referenceRow(sd, x, b, i), `decode step ${step} batch ${b}`);
        }
      }
    });

    test('every result equals the same calls at low addresses, bit for bit', () => {
      const { r } = high;
      assert.deepEqual(r.stateDict, low.stateDict, 'stateDict()');
      assert.deepEqual(r.output, low.output, 'output');
      assert.deepEqual(r.weights, low.weights, 'averaged weights');
      assert.deepEqual(r.decode, low.decode, 'decode steps');
      assert.deepEqual(r.cross, low.cross, 'cross-attention from setKeyValue');
      assert.deepEqual(r.gradQuery, low.gradQuery, 'query gradient');
      assert.deepEqual(r.gradParams, low.gradParams, 'parameter gradients');
    });
  });
}
