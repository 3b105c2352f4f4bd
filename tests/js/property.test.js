// Property tests (fast-check): for random valid configurations, shapes, masks and options, every
// wasm build gives what a float64 reference written from the definition gives, within tolerance,
// and the builds agree with each other.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import fc from 'fast-check';

import { loadAllBuilds } from './all-builds.js';
import { seededFloats } from './seeded.js';

const BUILDS = await loadAllBuilds(); // SIMD, scalar, SIMD + threads at 1 and 3 threads

// ---- the reference: nn.MultiheadAttention (batch_first, inference) in float64 ----

function project(x, rows, inDim, weight, bias, outDim) {
  const y = new Float64Array(rows * outDim);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outDim; o++) {
      let s = bias ? bias[o] : 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i] * weight[o * inDim + i];
      y[r * outDim + o] = s;
    }
  }
  return y;
}

/** Masks as additive biases: bool true -> -Infinity, float as given. */
const bias = (mask, index) => (!mask ? 0 : mask.data instanceof Uint8Array ? (mask.data[index] ? -Infinity : 0) : mask.data[index]);

function referenceForward(c, p, { B, L, S, query, key, value, options }) {
  const { embedDim: E, numHeads: H } = c;
  const Hkv = c.numKvHeads ?? H, Dh = E / H, KV = Hkv * Dh;
  const kdim = c.kdim ?? E, vdim = c.vdim ?? E, scale = c.scale ?? 1 / Math.sqrt(Dh);
  const q = project(query, B * L, E, p.qW, p.qB, E);
  const k = project(key ?? query, B * S, kdim, p.kW, p.kB, KV);
  const v = project(value ?? query, B * S, vdim, p.vW, p.vB, KV);
  const attended = new Float64Array(B * L * E);
  const average = options.averageWeights ?? true;
  const weights = options.needWeights ? new Float64Array(average ? B * L * S : B * H * L * S) : null;
  const perHeadMask = options.attnMask?.shape.length === 3;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const kvh = Math.floor(h / (H / Hkv));
      for (let i = 0; i < L; i++) {
        const scores = new Float64Array(S).fill(-Infinity);
        let max = -Infinity;
        for (let j = 0; j < S; j++) {
          const maskRow = perHeadMask ? b * H + h : 0;
          const total = (options.causal && j > i ? -Infinity : 0) + bias(options.keyPaddingMask, b * S + j)
            + bias(options.attnMask, (maskRow * L + i) * S + j);
          if (total === -Infinity) continue;
          let dot = 0;
          for (let d = 0; d < Dh; d++) dot += q[(b * L + i) * E + h * Dh + d] * k[(b * S + j) * KV + kvh * Dh + d];
          scores[j] = dot * scale + total;
          max = Math.max(max, scores[j]);
        }
        if (max === -Infinity) continue; // every key blocked: zeros
        let sum = 0;
        for (let j = 0; j < S; j++) sum += Math.exp(scores[j] - max);
        for (let j = 0; j < S; j++) {
          const prob = Math.exp(scores[j] - max) / sum;
          if (prob === 0) continue;
          for (let d = 0; d < Dh; d++) attended[(b * L + i) * E + h * Dh + d] += prob * v[(b * S + j) * KV + kvh * Dh + d];
          if (weights) weights[average ? (b * L + i) * S + j : ((b * H + h) * L + i) * S + j] += average ? prob / H : prob;
        }
      }
    }
  }
  return { output: project(attended, B * L, E, p.oW, p.oB, E), weights };
}

// ---- random valid requests ----

const divisors = (n) => [...Array(n).keys()].map((i) => i + 1).filter((d) => n % d === 0);

/** Random requests up to the given sizes. */
const requestArbitrary = ({ maxHeadDim, maxLength }) => fc.record({
  numHeads: fc.integer({ min: 1, max: 4 }),
  headDim: fc.integer({ min: 1, max: maxHeadDim }),
  kvPick: fc.nat(),
  kdim: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
  vdim: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
  bias: fc.boolean(),
  scale: fc.option(fc.double({ min: -2, max: 2, noNaN: true }), { nil: undefined }),
  batched: fc.boolean(),
  B: fc.integer({ min: 1, max: 3 }),
  L: fc.integer({ min: 1, max: maxLength }),
  S: fc.integer({ min: 1, max: maxLength }),
  selfAttention: fc.boolean(),
  causal: fc.boolean(),
  keyPaddingMask: fc.constantFrom('none', 'bool', 'float'),
  attnMask: fc.constantFrom('none', 'bool2d', 'float2d', 'bool3d', 'float3d'),
  needWeights: fc.boolean(),
  averageWeights: fc.boolean(),
  seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
});

/** Turns drawn numbers into a config, a state dict and a forward request. */
function build(r) {
  const H = r.numHeads, E = H * r.headDim, Dh = r.headDim;
  const kvChoices = divisors(H), Hkv = kvChoices[r.kvPick % kvChoices.length];
  const config = { embedDim: E, numHeads: H, bias: r.bias, numKvHeads: Hkv };
  if (r.kdim !== undefined) config.kdim = r.kdim;
  if (r.vdim !== undefined) config.vdim = r.vdim;
  if (r.scale !== undefined) config.scale = r.scale;
  const kdim = config.kdim ?? E, vdim = config.vdim ?? E, KV = Hkv * Dh;
  const selfAttention = r.selfAttention && kdim === E && vdim === E;
  const B = r.batched ? r.B : 1, L = r.L, S = selfAttention ? L : r.S;
  let seed = r.seed;
  const floats = (n, scale = 1) => seededFloats(n, seed++, scale);
  const p = {
    qW: floats(E * E, 0.5), kW: floats(KV * kdim, 0.5), vW: floats(KV * vdim, 0.5), oW: floats(E * E, 0.5),
    qB: r.bias ? floats(E) : null, kB: r.bias ? floats(KV) : null, vB: r.bias ? floats(KV) : null, oB: r.bias ? floats(E) : null,
  };
  const stateDict = { q_proj_weight: p.qW, k_proj_weight: p.kW, v_proj_weight: p.vW, 'out_proj.weight': p.oW };
  if (r.bias) {
    stateDict.in_proj_bias = Float32Array.from([...p.qB, ...p.kB, ...p.vB]);
    stateDict['out_proj.bias'] = p.oB;
  }
  const shape = (...dims) => (r.batched ? dims : dims.slice(1));
  const mask = (kind, n, dims) => {
    const bits = floats(n);
    return kind.startsWith('bool')
      ? { data: Uint8Array.from(bits, (x) => (x > 0.2 ? 1 : 0)), shape: dims }
      : { data: Float32Array.from(bits, (x) => (x > 0.3 ? -Infinity : x * 4)), shape: dims };
  };
  const options = { causal: r.causal, needWeights: r.needWeights, averageWeights: r.averageWeights };
  if (r.keyPaddingMask !== 'none') options.keyPaddingMask = mask(r.keyPaddingMask, B * S, shape(B, S));
  if (r.attnMask.endsWith('2d')) options.attnMask = mask(r.attnMask, L * S, [L, S]);
  if (r.attnMask.endsWith('3d')) options.attnMask = mask(r.attnMask, B * H * L * S, [r.batched ? B * H : H, L, S]);
  const query = floats(B * L * E), key = selfAttention ? null : floats(B * S * kdim), value = selfAttention ? null : floats(B * S * vdim);
  return {
    config, stateDict, p, B, L, S, query, key, value, options,
    args: [{ data: query, shape: shape(B, L, E) }, key && { data: key, shape: shape(B, S, kdim) },
      value && { data: value, shape: shape(B, S, vdim) }, options],
  };
}

function assertClose(what, got, want) {
  assert.equal(got.length, want.length, `${what}: length`);
  let magnitude = 0;
  for (const w of want) magnitude = Math.max(magnitude, Math.abs(w));
  const tolerance = 1e-4 * (1 + magnitude);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tolerance)) {
      assert.fail(`${what}[${i}] = ${got[i]}, reference ${want[i]} (tolerance ${tolerance})`);
    }
  }
}

function checkBuildsAgainstReference(sizes, numRuns) {
  let runs = 0;
  fc.assert(fc.property(requestArbitrary(sizes), (r) => {
    const request = build(r);
    const want = referenceForward(request.config, request.p, request);
    const results = BUILDS.map((build) => {
      build.use();
      const layer = new build.MultiHeadAttention(request.config).loadStateDict(request.stateDict);
      try {
        return layer.forward(...request.args);
      } finally {
        layer.dispose();
      }
    });
    for (const [n, { output, weights }] of results.entries()) {
      assertClose(`${BUILDS[n].label}: output`, output.data, want.output);
      if (want.weights) assertClose(`${BUILDS[n].label}: weights`, weights.data, want.weights);
      assertClose(`${BUILDS[n].label}: output against ${BUILDS[0].label}`, output.data, results[0].output.data);
    }
    runs++;
  }), { numRuns });
  console.log(`property: ${runs} random requests (head size <= ${sizes.maxHeadDim}, L, S <= ${sizes.maxLength}) on each of ${BUILDS.map((b) => b.label).join(', ')}`);
}

test('small random requests: every build matches the float64 reference and the others', () => {
  checkBuildsAgainstReference({ maxHeadDim: 8, maxLength: 9 }, 300);
});

test('larger random requests (work split across threads): the same', () => {
  checkBuildsAgainstReference({ maxHeadDim: 24, maxLength: 70 }, 40);
});
