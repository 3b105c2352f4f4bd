// What the tests of a layer variant against the float64 steps reference share (gate.test.js,
// qk-norm.test.js): the tolerance of float32 against float64, the closeness check, a case's
// seeded inputs (self-attention, or cross with key and value) and the forward call on them.
import assert from 'node:assert/strict';
import { worstError } from './fixtures.js';
import { seededFloats } from './seeded.js';

export const TOLERANCE = { absolute: 2e-5, relative: 2e-4 };  // float32 against float64

export function assertClose(got, want, what, tolerance = TOLERANCE) {
  assert.equal(got.length, want.length, `${what}: length`);
  const e = worstError(got, want, tolerance);
  assert.ok(e.ratio <= 1, `${what}[${e.index}]: ${got[e.index]} vs ${want[e.index]} (off by ${e.absolute})`);
}

/** A case's inputs ({ config, B, L, S?, causal? }): query [B, L, E], and key / value [B, S, ·] when it has S. */
export function inputsOf(c, seed = 1) {
  const { embedDim: E, kdim = E, vdim = E } = c.config;
  const query = { data: seededFloats(c.B * c.L * E, seed, 1), shape: [c.B, c.L, E] };
  if (!c.S) return { query, causal: !!c.causal };
  return {
    query,
    key: { data: seededFloats(c.B * c.S * kdim, seed + 1, 1), shape: [c.B, c.S, kdim] },
    value: { data: seededFloats(c.B * c.S * vdim, seed + 2, 1), shape: [c.B, c.S, vdim] },
    causal: !!c.causal,
  };
}

export const forwardOf = (layer, inputs, options = {}) => layer.forward(inputs.query, inputs.key ?? null, inputs.value ?? null,
  { causal: inputs.causal, ...options });
