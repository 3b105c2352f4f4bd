// PyTorch's own nn.MultiheadAttention test cases (tests/fixtures/pytorch-mha/, written by
// tools/make_pytorch_mha_fixtures.py from torch itself) and how one draw of a case is checked
// against torch's numbers: output, attention weights, and the gradients torch autograd gives for
// loss = sum(output * dOut). Shared by the wasm backend's port (pytorch-mha.test.js) and the
// WebGPU backend's (tests/webgpu/pytorch-mha.test.js): a `backend` says how a layer is made and
// called ({ MultiHeadAttention, forward(layer, query, key, value, options), backward(result, dOut) },
// each maybe async). PyTorch's math path gives NaN for a query row whose keys are all masked; our
// documented rule is zero weights and zero attended values (the output row is then
// out_proj.bias), and the checks hold us to it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { worstError } from './fixtures.js';
import { seededFloats } from './seeded.js';

// --- the fixtures ---------------------------------------------------------------------------------

const DIR = new URL('../fixtures/pytorch-mha/', import.meta.url);
export const index = JSON.parse(readFileSync(new URL('index.json', DIR), 'utf8'));
const blob = readFileSync(new URL(index.binary, DIR));
const KINDS = { float32: Float32Array, uint8: Uint8Array };
export const count = (shape) => shape.reduce((n, d) => n * d, 1);

/** A fixture tensor { data, shape }: read from cases.bin, or regenerated (seededFloats) where the generator says. */
export function tensor(entry) {
  if ('seeded' in entry) return { data: seededFloats(count(entry.shape), entry.seeded, entry.scale), shape: entry.shape };
  const Kind = KINDS[entry.dtype];
  const bytes = blob.subarray(entry.offset, entry.offset + entry.length * Kind.BYTES_PER_ELEMENT);
  return { data: new Kind(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)), shape: entry.shape };
}
export const tensors = (entries = {}) => Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, tensor(v)]));
export const arrays = (entries = {}) => Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, tensor(v).data]));

/** The features of NOT_YET a draw needs. */
export function featuresOf(draw) {
  const needs = [];
  if (draw.config.batchFirst === false) needs.push('batchFirst');
  if (draw.config.addBiasKv) needs.push('addBiasKv');
  if (draw.config.addZeroAttn) needs.push('addZeroAttn');
  if (draw.tensors.staticK || draw.tensors.staticV) needs.push('staticK');
  return needs;
}

const tolerance = index.tolerance;
/** Gradients sum over rows and heads: the same relative bound, with an absolute floor scaled by their size. */
function gradientTolerance(want) {
  const largest = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  return { absolute: tolerance.absolute * Math.max(1, largest), relative: tolerance.relative };
}

let largestError = 0;
/** The largest absolute error expectClose saw so far. */
export const largestErrorSeen = () => largestError;
export function expectClose(got, want, what, bound = tolerance) {
  assert.equal(got.length, want.length, `${what}: length`);
  const e = worstError(got, want, bound);
  largestError = Math.max(largestError, e.absolute);
  assert.ok(e.ratio <= 1, `${what}[${e.index}] = ${got[e.index]}, torch ${want[e.index]} (off by ${e.absolute})`);
}

/**
 * Torch's output with each fully masked row (NaN in torch) replaced by what our rule gives there:
 * zero attended values, so the row is out_proj.bias (zeros without bias).
 */
function withMaskedRows(want, outBias, width) {
  const fixed = Float32Array.from(want);
  for (let row = 0; row < fixed.length / width; row++) {
    if (!Number.isNaN(fixed[row * width])) continue;
    for (let i = 0; i < width; i++) fixed[row * width + i] = outBias ? outBias[i] : 0;
  }
  return fixed;
}

/** The forward options of a draw (its masks and static keys/values included), plus `extra`. */
export function drawOptions(draw, t, extra = {}) {
  const options = { ...draw.options, ...extra };
  for (const name of ['keyPaddingMask', 'attnMask', 'staticK', 'staticV']) if (t[name]) options[name] = t[name];
  return options;
}

/**
 * A nested-tensor draw (torch's fast path, no_grad), called as a ragged batch: the packed output,
 * and each sequence's weights (torch pads them to [B, max, max]; the fixture keeps [L_i, L_i]).
 * Torch refuses nested tensors where grad is enabled; mha-wasm's ragged calls take grad
 * (tests/js/ragged.test.js checks those gradients against per-sequence calls).
 */
async function checkNestedDraw(draw, backend) {
  const query = { ...tensor(draw.tensors.query), lengths: draw.lengths };
  const layer = new backend.MultiHeadAttention(draw.config);
  try {
    layer.loadStateDict(arrays(draw.stateDict));
    const r = await backend.forward(layer, query, null, null, drawOptions(draw, {}));
    const want = tensor(draw.expected.output);
    assert.deepEqual(r.output.shape, want.shape);
    assert.deepEqual([...r.output.lengths], draw.lengths);
    expectClose(r.output.data, want.data, 'output');
    assert.equal(r.weights.length, draw.lengths.length);
    draw.expected.weights.forEach((entry, i) => {
      const w = tensor(entry);
      assert.deepEqual(r.weights[i].shape, w.shape);
      expectClose(r.weights[i].data, w.data, `weights of sequence ${i}`);
    });
  } finally {
    layer.dispose();
  }
}

/** Runs one draw through a new layer of `backend`: output, weights and gradients against torch's. */
export async function checkDraw(draw, backend) {
  if (draw.lengths) return checkNestedDraw(draw, backend);
  const t = tensors(draw.tensors);
  const stateDict = arrays(draw.stateDict);
  const layer = new backend.MultiHeadAttention(draw.config);
  try {
    layer.loadStateDict(stateDict);
    const [key, value] = draw.selfAttention ? [null, null] : [t.key, t.value];
    if (draw.error) {  // PyTorch refuses the call: so do we, in its words
      await assert.rejects(async () => backend.forward(layer, t.query, key, value, drawOptions(draw, t)),
        (e) => e.message.includes(draw.error));
      return;
    }
    const expected = tensors(draw.expected);
    const grad = Boolean(draw.gradients);
    const r = await backend.forward(layer, t.query, key, value, drawOptions(draw, t, grad ? { grad: true } : {}));
    assert.deepEqual(r.output.shape, expected.output.shape);
    const width = expected.output.shape.at(-1);
    expectClose(r.output.data, withMaskedRows(expected.output.data, stateDict['out_proj.bias'], width), 'output');
    if (draw.options.needWeights) {
      // (The largest cases keep the weights of their first batch rows only.)
      assert.equal(count(r.weights.shape), count(r.weights.shape.slice(1)) * r.weights.shape[0]);
      const want = expected.weights.data.map((w) => (Number.isNaN(w) ? 0 : w));
      expectClose(r.weights.data.subarray(0, want.length), want, 'weights');
      assert.deepEqual(r.weights.shape.slice(1), expected.weights.shape.slice(1));
    } else {
      assert.equal(r.weights, null);
    }
    if (!grad) return;
    const g = await backend.backward(r, t.dOut);
    const wantGrads = tensors(draw.gradients);
    for (const [name, want] of Object.entries(wantGrads)) {
      assert.deepEqual(g[name].shape, want.shape, `d${name}: shape`);
      expectClose(g[name].data, want.data, `d${name}`, gradientTolerance(want.data));
    }
    for (const [name, want] of Object.entries(arrays(draw.paramGradients))) {
      assert.ok(g.params[name], `d${name}: missing (got ${Object.keys(g.params).join(', ')})`);
      expectClose(g.params[name], want, `d${name}`, gradientTolerance(want));
    }
  } finally {
    layer.dispose();
  }
}

// --- test_multihead_attn_3d_attn_mask's own check -------------------------------------------------------

/** Batch row b of a sequence-first [L, B, E] tensor, as [L, 1, E]. */
function batchRow({ data, shape: [L, B, E] }, b) {
  const out = new Float32Array(L * E);
  for (let l = 0; l < L; l++) out.set(data.subarray((l * B + b) * E, (l * B + b + 1) * E), l * E);
  return { data: out, shape: [L, 1, E] };
}

/** test_multihead_attn_3d_attn_mask's own check: the [N*H, T, S] mask's result, batch row by batch row with [T, S] masks. */
export async function threeDMaskRowByRow(c, backend) {
  for (const draw of c.draws) {
    const t = tensors(draw.tensors);
    const masks = tensor(draw.perRowMasks);
    const [N, T, S] = masks.shape;
    const layer = new backend.MultiHeadAttention(draw.config);
    try {
      layer.loadStateDict(arrays(draw.stateDict));
      const all = (await backend.forward(layer, t.query, t.key, t.value, { attnMask: t.attnMask })).output;
      for (let i = 0; i < N; i++) {
        const attnMask = { data: masks.data.subarray(i * T * S, (i + 1) * T * S), shape: [T, S] };
        const one = (await backend.forward(layer, batchRow(t.query, i), batchRow(t.key, i), batchRow(t.value, i), { attnMask })).output;
        expectClose(one.data, batchRow(all, i).data, `batch row ${i}`);  // (PyTorch's assertEqual: within float32 tolerance)
      }
    } finally {
      layer.dispose();
    }
  }
}


/** The cases taken from one of PyTorch's test files. */
export const casesOf = (source) => index.cases.filter((c) => c.source === source);
