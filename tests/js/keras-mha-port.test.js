// Keras 3.15's own tests of its MultiHeadAttention layer (keras/src/layers/attention/
// multi_head_attention_test.py, 31 methods, 50 parameterized ids), ported test by test and run on
// both of our Keras surfaces: mha.KerasMultiHeadAttention (plain arrays) and mha-wasm/tfjs's layer.
// Titles carry Keras' test names (with the parameterization's id). Expected values come from the
// Keras tests themselves or from tests/fixtures/keras-mha-port.json: a float64 reference written
// from Keras' source (tools/keras_mha_reference.py, tools/make_keras_port_fixtures.py), never from
// our layers. Six ids test backend-only machinery and are set aside (test.skip, each with its reason).
// Ids that do not pass yet are marked `todo` with the reason (KNOWN_GAPS below): they run and
// report, without failing the file; each one that starts passing must leave the list.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { init } from '../../bindings/js/index.js';
import { mhaTfjs } from '../../bindings/js/tfjs.js';
import { tf } from './keras-reference.js';

const mha = await init({ threads: 1 });
const tfjs = await mhaTfjs(tf, { threads: 1 });
const { cases: FIXTURES } = JSON.parse(readFileSync(new URL('../fixtures/keras-mha-port.json', import.meta.url)));
const VALUES = { absolute: 1e-5, relative: 1e-4 };  // float32 layers against the float64 reference

// ---------------------------------------------------------------------------------------------
// The two surfaces behind one interface: make(args) from Keras' snake_case arguments; call()
// -> { output, scores, mask } as { data, shape } (scores null unless asked; mask: the output's
// implicit mask, or null); setWeights / getWeights in Keras' get_weights() order and layouts.

const CAMEL = {
  num_heads: 'numHeads', key_dim: 'keyDim', value_dim: 'valueDim', use_bias: 'useBias', output_shape: 'outputShape',
  attention_axes: 'attentionAxes', sliding_window: 'slidingWindow', use_gate: 'useGate', dropout: 'dropout', seed: 'seed',
  kernel_initializer: 'kernelInitializer', kernel_constraint: 'kernelConstraint', bias_constraint: 'biasConstraint',
};
function camelArgs(args) {
  const out = {};
  for (const [key, value] of Object.entries(args)) {
    if (value === null || value === undefined || (key === 'use_gate' && value === false)) continue;
    out[CAMEL[key] ?? key] = value;
  }
  return out;
}
const product = (shape) => shape.reduce((a, b) => a * b, 1);
const f32 = (t) => (t ? { data: Float32Array.from(t.data), shape: t.shape } : null);

const plain = {
  name: 'KerasMultiHeadAttention',
  make: (args) => new mha.KerasMultiHeadAttention(camelArgs(args)),
  fromConfig: (config) => mha.KerasMultiHeadAttention.fromConfig(config),
  call(layer, query, value, key = null, o = {}) {
    const options = {};
    for (const name of ['useCausalMask', 'returnAttentionScores', 'training', 'queryMask', 'valueMask', 'keyMask']) {
      if (o[name] !== undefined) options[name] = o[name];
    }
    if (o.attentionMask) options.attentionMask = o.attentionMask;
    const r = layer.call(query, value, key, options);
    return { output: r.output, scores: r.scores ?? null, mask: r.mask ?? null };
  },
  setWeights: (layer, weights) => layer.setWeights(weights.map(f32)),
  getWeights: (layer) => layer.getWeights(),
  computeOutputShape: (layer, q, v, k) => layer.computeOutputShape(q, v, k),
  dispose: (layer) => layer.dispose(),
  // Sized by the weights' shapes (setWeights builds an unbuilt layer), then called.
  build(layer, c, query, value, key) {
    this.setWeights(layer, c.weights);
    this.call(layer, query, value, key);
  },
};

const tensorOf = (t) => (t ? tf.tensor(t.data, t.shape, t.data instanceof Uint8Array ? 'bool' : 'float32') : undefined);
const plainOf = (t) => ({ data: Float32Array.from(t.dataSync()), shape: t.shape });
const tfjsSurface = {
  name: 'mha-wasm/tfjs',
  make: (args) => tfjs.multiHeadAttention(camelArgs(args)),
  fromConfig: (config) => tf.serialization.SerializationMap.getMap().classNameMap.MultiHeadAttention[1](tfjs.MultiHeadAttention, config),
  call(layer, query, value, key = null, o = {}) {
    return tf.tidy(() => {
      const kwargs = { value: tensorOf(value) };
      if (key) kwargs.key = tensorOf(key);
      if (o.attentionMask) kwargs.attentionMask = tensorOf(o.attentionMask);
      for (const name of ['useCausalMask', 'returnAttentionScores', 'training']) if (o[name] !== undefined) kwargs[name] = o[name];
      // Implicit masks: what Embedding(maskZero) hands a layer inside a model (call's mask list).
      const q = tensorOf(query);
      if (o.queryMask || o.valueMask || o.keyMask) {
        const masks = [o.queryMask, o.valueMask, o.keyMask].map((m) => (m ? tf.tensor(m.data, m.shape, 'bool') : null));
        const r = layer.apply(q, { ...kwargs, mask: masks });
        const output = Array.isArray(r) ? r[0] : r;
        const mask = layer.computeMask([q, kwargs.value], masks);
        return { output: plainOf(output), scores: Array.isArray(r) ? plainOf(r[1]) : null, mask: mask && plainOf(tf.cast(mask, 'float32')) };
      }
      const r = layer.apply(q, kwargs);
      return { output: plainOf(Array.isArray(r) ? r[0] : r), scores: Array.isArray(r) ? plainOf(r[1]) : null, mask: null };
    });
  },
  setWeights: (layer, weights) => layer.setWeights(weights.map((w) => tf.tensor(w.data, w.shape))),
  getWeights: (layer) => layer.getWeights().map(plainOf),
  computeOutputShape: (layer, q, v, k) => layer.computeOutputShape(k ? [q, v, k] : [q, v]),
  dispose: (layer) => { if (layer.built) layer.dispose(); },  // (tfjs refuses to dispose an unbuilt layer)
  // Built by a first call (its input sizes), as Keras builds, then given the weights.
  build(layer, c, query, value, key) {
    this.call(layer, query, value, key);
    this.setWeights(layer, c.weights);
  },
};
const SURFACES = [plain, tfjsSurface];

/** A fixture case's layer on a surface, built and given the case's weights. */
function layerFor(surface, c, extraArgs = {}) {
  const layer = surface.make({ ...c.args, ...extraArgs });
  const { query, value, key } = c.inputs;
  try {
    surface.build(layer, c, f32(query), f32(value), f32(key));
  } catch (error) {
    surface.dispose(layer);
    throw error;
  }
  return layer;
}

function assertClose(got, want, what, tolerance = VALUES) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  for (let i = 0; i < want.data.length; i++) {
    const d = Math.abs(got.data[i] - want.data[i]);
    if (!(d <= tolerance.absolute + tolerance.relative * Math.abs(want.data[i]))) {
      assert.fail(`${what}[${i}]: ${got.data[i]} vs ${want.data[i]} (Keras' reference)`);
    }
  }
}
const assertSame = (a, b, what) => assertClose(a, b, what, { absolute: 1e-5, relative: 1e-5 });

/** Row-major [rows, cols] ones below and on the diagonal (ops.tril(ops.ones(...))). */
function tril(rows, cols, batch = []) {
  const data = new Uint8Array(product([...batch, rows, cols]));
  for (let i = 0; i < data.length; i++) data[i] = (i % cols) <= Math.floor(i / cols) % rows ? 1 : 0;
  return { data, shape: [...batch, rows, cols] };
}
const tile = (mask, times) => ({ data: Uint8Array.from({ length: mask.data.length * times }, (_, i) => mask.data[i % mask.data.length]), shape: [times, ...mask.shape] });

/** Embedded ids (Embedding(mask_zero=True)) and their mask, from a fixture's tables. */
function embedded(c, role) {
  const ids = c.inputs[role], table = c.embeddings[role];
  const [B, T] = ids.shape, F = table.shape[1];
  const data = new Float32Array(B * T * F);
  ids.data.forEach((id, i) => data.set(table.data.slice(id * F, (id + 1) * F), i * F));
  return { tensor: { data, shape: [B, T, F] }, mask: { data: Uint8Array.from(ids.data, (id) => (id !== 0 ? 1 : 0)), shape: [B, T] } };
}

// ---------------------------------------------------------------------------------------------
// Known gaps: `${surface}|${title}` -> why it does not pass yet (the test still runs, as todo).
const KNOWN_GAPS = new Map([
]);

/**
 * One ported test on every surface; `body(surface)` throws on failure. A known gap that fails is
 * reported as todo with its reason; one that passes fails the test: take it off KNOWN_GAPS.
 */
function port(title, body) {
  describe(title, () => {
    for (const surface of SURFACES) {
      const gap = KNOWN_GAPS.get(`${surface.name}|${title}`);
      test(surface.name, (t) => {
        try {
          body(surface);
        } catch (error) {
          if (!gap) throw error;
          t.todo(`${gap} (${error.message.split('\n')[0]})`);
          return;
        }
        if (gap) assert.fail(`passes now: take '${surface.name}|${title}' off KNOWN_GAPS`);
      });
    }
  });
}

/** Keras' backend-only tests: not ported, with the reason. */
function setAside(title, reason) {
  test.skip(`${title} (set aside: ${reason})`, () => {});
}

// ---------------------------------------------------------------------------------------------

port('test_basics', (s) => {
  const counts = [8, 4, 10, 5];
  const extra = [{}, { dropout: 0.5 }, {}, { dropout: 0.5 }];
  for (let i = 0; i < 4; i++) {
    const c = FIXTURES[`basics/${i}`];
    const layer = layerFor(s, c, extra[i]);
    try {
      assert.equal(s.getWeights(layer).length, counts[i], `configuration ${i}: trainable weights`);
      assert.equal(layer.supportsMasking, true, 'supports_masking');
      const r = s.call(layer, f32(c.inputs.query), f32(c.inputs.value), null, { training: false });
      assert.deepEqual(r.output.shape, [2, 8, 16]);
      assertClose(r.output, c.output, `configuration ${i}: output`);
    } finally {
      s.dispose(layer);
    }
  }
});

setAside('test_basics_with_flash_attention', 'Keras\' flash-attention flag of the JAX and torch backends; we have no such switch (our kernels are always the flash-style ones)');

for (const name of ['4d_inputs_1freebatch_mask2', '4d_inputs_1freebatch_mask3', '4d_inputs_1freebatch_mask4',
  '4d_inputs_2d_attention', '5d_inputs_2d_attention', '5d_inputs_2d_attention_fullmask']) {
  port(`test_high_dim_attention_${name}`, (s) => {
    for (const [variant, count] of [['plain', 8], ['gate', 10]]) {
      const c = FIXTURES[`high_dim/${name}/${variant}`];
      const layer = layerFor(s, c);
      try {
        assert.equal(s.getWeights(layer).length, count, `${variant}: trainable weights`);
        const r = s.call(layer, f32(c.inputs.query), f32(c.inputs.value));
        assert.deepEqual(r.output.shape, c.inputs.query.shape, `${variant}: output shape`);
        assertClose(r.output, c.output, `${variant}: output`);
      } finally {
        s.dispose(layer);
      }
    }
  });
}

port('test_attention_axes_negative_indexing', (s) => {
  for (const variant of ['plain', 'gate']) {
    const c = FIXTURES[`negative_axes/${variant}`];
    const x = f32(c.inputs.query);
    const pos = layerFor(s, c);
    const neg = s.make({ ...c.args, attention_axes: -2 });
    try {
      s.call(neg, x, x);
      s.setWeights(neg, s.getWeights(pos));
      const a = s.call(pos, x, x, null, { returnAttentionScores: true });
      const b = s.call(neg, x, x, null, { returnAttentionScores: true });
      assert.deepEqual(a.output.shape, b.output.shape);
      assert.deepEqual(a.scores.shape, b.scores.shape);
      assertSame(b.output, a.output, `${variant}: z_neg vs z_pos`);
      assertSame(b.scores, a.scores, `${variant}: a_neg vs a_pos`);
      assertClose(b.output, c.output, `${variant}: output`);
      assertClose(b.scores, c.scores, `${variant}: scores`);
    } finally {
      s.dispose(pos);
      s.dispose(neg);
    }
  }
});

for (const name of ['without_key_same_proj', 'with_key_same_proj', 'without_key_different_proj', 'with_key_different_proj',
  'high_dim_same_proj', 'high_dim_different_proj', 'different_qv_last_dims']) {
  port(`test_compute_output_shape_${name}`, (s) => {
    const c = FIXTURES[`compute_output_shape/${name}`];
    const layer = layerFor(s, c);
    try {
      const { query, value, key } = c.inputs;
      const r = s.call(layer, f32(query), f32(value), f32(key));
      assert.deepEqual(r.output.shape, s.computeOutputShape(layer, query.shape, value.shape, key?.shape));
      assert.deepEqual(r.output.shape, c.output.shape);
      assertClose(r.output, c.output, 'output');
    } finally {
      s.dispose(layer);
    }
  });
}

for (const [name, q, v, k] of [['query_value_dim_mismatch', [2, 4, 8], [2, 2, 7], [2]],
  ['key_value_dim_mismatch', [2, 4, 8], [2, 2, 8], [2, 1, 7]],
  ['key_value_dim_mismatch_high_dim', [2, 4, 2, 3, 8], [2, 1, 1, 5, 8], [2, 1, 15, 5, 2]]]) {
  port(`test_shape_mismatch_error_${name}`, (s) => {
    const layer = s.make({ num_heads: 4, key_dim: 2, value_dim: 2 });
    try {
      assert.throws(() => s.computeOutputShape(layer, q, v, k), /must be equal/);
      const ones = (shape) => ({ data: new Float32Array(product(shape)).fill(1), shape });
      assert.throws(() => s.call(layer, ones(q), ones(v), ones(k)), /must be equal/);
    } finally {
      s.dispose(layer);
    }
  });
}

port('test_invalid_scalar_args_rejected', (s) => {
  for (const bad of [0, -2, 1.5]) {
    assert.throws(() => s.make({ num_heads: bad, key_dim: 4 }), /numHeads/);
    assert.throws(() => s.make({ num_heads: 4, key_dim: bad }), /keyDim/);
    assert.throws(() => s.make({ num_heads: 4, key_dim: 4, value_dim: bad }), /valueDim/);
  }
  s.dispose(s.make({ num_heads: 4, key_dim: 4, value_dim: null }));
});

port('test_initializer', (s) => {
  const layer = s.make({ num_heads: 12, key_dim: 64, use_gate: true,
    kernel_initializer: s === plain ? { className: 'TruncatedNormal', config: { stddev: 0.02 } } : tf.initializers.truncatedNormal({ stddev: 0.02 }) });
  try {
    const x = { data: new Float32Array(2 * 4 * 8).fill(0.5), shape: [2, 4, 8] };
    s.call(layer, x, x);
    const w = s.getWeights(layer);  // query, bias, key, bias, gate, bias, value, bias, output, bias
    const kernels = { query: w[0], key: w[2], gate: w[4], value: w[6], output: w[8] };
    for (const name of ['key', 'value', 'output', 'gate']) {
      const a = kernels.query.data, b = kernels[name].data;
      assert.ok(a.length !== b.length || a.some((x, i) => Math.abs(x - b[i]) > 1e-6 + 1e-6 * Math.abs(b[i])), `query and ${name} kernels differ`);
    }
    assert.ok(kernels.query.data.every((x) => Math.abs(x) <= 0.04) && kernels.query.data.some((x) => x !== 0), 'truncated normal, stddev 0.02');
  } finally {
    s.dispose(layer);
  }
});

port('test_query_mask_propagation', (s) => {
  const c = FIXTURES.query_mask_propagation;
  const { tensor: query, mask } = embedded(c, 'query');
  const layer = layerFor(s, { ...c, inputs: { query, value: c.inputs.value } });
  try {
    assert.equal(layer.supportsMasking, true);
    const r = s.call(layer, query, f32(c.inputs.value), null, { queryMask: mask });
    assert.deepEqual(Array.from(r.mask.data, Boolean), Array.from(c.outputMask.data, Boolean));
    assertClose(r.output, c.output, 'output');
  } finally {
    s.dispose(layer);
  }
});

for (const [name, causal] of [['causal', true], ['not_causal', false]]) {
  port(`test_masking_${name}`, (s) => {
    const c = FIXTURES[`masking/${name}`];
    const q = embedded(c, 'query'), v = embedded(c, 'value');
    const layer = layerFor(s, { ...c, inputs: { query: q.tensor, value: v.tensor } });
    try {
      const implicit = s.call(layer, q.tensor, v.tensor, null, { queryMask: q.mask, valueMask: v.mask, useCausalMask: causal });
      // The test's own mask: [B, T, S] from the ids, and-ed with the causal one.
      const rows = [[[1, 1, 0], [1, 1, 0], [1, 1, 0], [0, 0, 0], [0, 0, 0]], Array(5).fill([1, 0, 0]), [[1, 1, 1], ...Array(4).fill([0, 0, 0])]];
      const causalRows = [[1, 0, 0], [1, 1, 0], [1, 1, 1], [1, 1, 1], [1, 1, 1]];
      const data = Uint8Array.from(rows.flatMap((b) => b.flatMap((row, t) => row.map((m, j) => (causal ? m & causalRows[t][j] : m)))));
      const manual = s.call(layer, q.tensor, v.tensor, null, { attentionMask: { data, shape: [3, 5, 3] } });
      assertSame(implicit.output, manual.output, 'implicit masks vs the manual mask');
      assertClose(implicit.output, c.output, 'output');
    } finally {
      s.dispose(layer);
    }
  });
}

port('test_masking_with_different_shapes', (s) => {
  const c = FIXTURES.masking_with_different_shapes;
  const layer = layerFor(s, c);
  try {
    const x = f32(c.inputs.query);
    const mask = tril(5, 5);  // (5, 5): [T, S]
    const out1 = s.call(layer, x, x, null, { attentionMask: mask }).output;
    const out2 = s.call(layer, x, x, null, { attentionMask: tile(mask, 2) }).output;  // (2, 5, 5)
    const perHead = tile(mask, 2);  // (2, 2, 5, 5): [B, H, T, S]
    const out3 = s.call(layer, x, x, null, { attentionMask: { data: tile(perHead, 2).data, shape: [2, 2, 5, 5] } }).output;
    assertSame(out2, out1, 'mask (2, 5, 5) vs (5, 5)');
    assertSame(out3, out1, 'mask (2, 2, 5, 5) vs (5, 5)');
    assertClose(out1, c.output, 'output');
  } finally {
    s.dispose(layer);
  }
});

port('test_no_warning_with_keras_mask', (s) => {
  const c = FIXTURES['masking/not_causal'];
  const q = embedded(c, 'query'), v = embedded(c, 'value');
  const layer = layerFor(s, { ...c, inputs: { query: q.tensor, value: v.tensor } });
  const { warn } = console;
  const warnings = [];
  console.warn = (...args) => warnings.push(args);
  try {
    s.call(layer, q.tensor, v.tensor, null, { queryMask: q.mask, valueMask: v.mask });
    assert.equal(warnings.length, 0, `warnings: ${JSON.stringify(warnings)}`);
  } finally {
    console.warn = warn;
    s.dispose(layer);
  }
});

port('test_sliding_window', (s) => {
  for (const [name, causal] of [['causal', true], ['bidirectional', false]]) {
    const c = FIXTURES[`sliding_window/${name}`];
    const layer = layerFor(s, c);
    try {
      const x = f32(c.inputs.query);
      const r = s.call(layer, x, x, null, { useCausalMask: causal, returnAttentionScores: true });
      const T = 6;
      for (let i = 0; i < T; i++) {
        for (let j = 0; j < T; j++) {
          const inWindow = causal ? j <= i && i - j < 3 : Math.abs(i - j) < 3;
          const score = r.scores.data[i * T + j];  // batch 0, head 0
          if (inWindow) assert.ok(score > 0, `${name}: score (${i}, ${j}) > 0`);
          else assert.equal(score, 0, `${name}: score (${i}, ${j})`);
        }
      }
      assertClose(r.scores, c.scores, `${name}: scores`);
      assertClose(r.output, c.output, `${name}: output`);
    } finally {
      s.dispose(layer);
    }
  }
});

port('test_causal_only_fast_path', (s) => {
  const c = FIXTURES.causal_only_fast_path;
  const layer = layerFor(s, c);
  try {
    const x = f32(c.inputs.query);
    const fast = s.call(layer, x, x, null, { useCausalMask: true }).output;
    const slow = s.call(layer, x, x, null, { attentionMask: tril(5, 5, [1]) }).output;  // (1, t, t)
    assertClose(fast, slow, 'fast vs slow', { absolute: 1e-5, relative: 0 });
    assertClose(fast, c.output, 'output');
  } finally {
    s.dispose(layer);
  }
});

setAside('test_causal_only_skipped_for_subclass', 'a Python subclass overriding the private _compute_attention hook; JavaScript users have no such hook');

port('test_causal_only_with_other_mask_falls_back', (s) => {
  const c = FIXTURES.causal_only_with_other_mask;
  const layer = layerFor(s, c);
  try {
    const x = f32(c.inputs.query);
    const extra = { data: Uint8Array.from(c.options.attention_mask.data), shape: [2, 5, 5] };
    const causal = tril(5, 5);
    const merged = { data: extra.data.map((m, i) => m & causal.data[i % 25]), shape: [2, 5, 5] };
    const out1 = s.call(layer, x, x, null, { attentionMask: extra, useCausalMask: true }).output;
    const out2 = s.call(layer, x, x, null, { attentionMask: merged, useCausalMask: false }).output;
    assert.deepEqual(out1.shape, [2, 5, 8]);
    assertClose(out1, out2, 'extra mask + causal vs merged', { absolute: 1e-5, relative: 0 });
    assertClose(out1, c.output, 'output');
  } finally {
    s.dispose(layer);
  }
});

for (const [name, dropout, returnScores] of [['scores_only', 0.0, true], ['dropout_only', 0.1, false], ['dropout_and_scores', 0.1, true]]) {
  port(`test_causal_only_masks_when_fused_path_disabled_${name}`, (s) => {
    const c = FIXTURES.causal_fused_path_disabled;
    const layer = layerFor(s, c, dropout ? { dropout } : {});
    try {
      const x = f32(c.inputs.query), t = 6;
      if (returnScores) {
        const r = s.call(layer, x, x, null, { useCausalMask: true, returnAttentionScores: true, training: false });
        let leak = 0;
        r.scores.data.forEach((p, i) => { if (i % t > Math.floor(i / t) % t) leak += p; });
        assert.ok(leak < 1e-6, `leak ${leak}`);
        assertClose(r.scores, c.scores, 'scores');
      } else {
        const outCausal = s.call(layer, x, x, null, { useCausalMask: true, training: false }).output;
        const explicit = s.call(layer, x, x, null, { attentionMask: tril(t, t, [1]), training: false }).output;
        assertClose(outCausal, explicit, 'causal vs explicit', { absolute: 1e-5, relative: 0 });
        assertClose(outCausal, c.output, 'output');
      }
    } finally {
      s.dispose(layer);
    }
  });
}

port('test_causal_only_masks_non_4d_inputs', (s) => {
  const c = FIXTURES.causal_non_4d;
  const layer = layerFor(s, c);
  try {
    const x = f32(c.inputs.query), t = 5;
    const r = s.call(layer, x, x, null, { useCausalMask: true, returnAttentionScores: true });
    let leak = 0;
    r.scores.data.forEach((p, i) => { if (i % t > Math.floor(i / t) % t) leak += p; });
    assert.ok(leak < 1e-6, `leak ${leak}`);
    assertClose(r.scores, c.scores, 'scores');
    assertClose(r.output, c.output, 'output');
  } finally {
    s.dispose(layer);
  }
});

for (const [name, returnScores] of [['fused_fallback', false], ['manual_path', true]]) {
  // _compute_attention on projected tensors = the layer with identity kernels (the fixture's weights).
  port(`test_compute_attention_combines_causal_and_explicit_mask_${name}`, (s) => {
    const c = FIXTURES.compute_attention_combines;
    const layer = layerFor(s, c);
    try {
      const [q, v, k] = [c.inputs.query, c.inputs.value, c.inputs.key].map(f32);
      const extra = { data: Uint8Array.from(c.options.attention_mask.data), shape: [1, 5, 5] };
      const causal = tril(5, 5);
      const merged = { data: extra.data.map((m, i) => m & causal.data[i]), shape: [1, 5, 5] };
      const both = s.call(layer, q, v, k, { attentionMask: extra, useCausalMask: true, returnAttentionScores: returnScores }).output;
      const alone = s.call(layer, q, v, k, { attentionMask: merged, useCausalMask: false, returnAttentionScores: returnScores }).output;
      assertClose(both, alone, 'both vs merged', { absolute: 1e-5, relative: 0 });
      assertClose(both, c.output, 'output');
    } finally {
      s.dispose(layer);
    }
  });
}

port('test_sliding_window_validation', (s) => {
  for (const bad of [0, -3]) assert.throws(() => s.make({ num_heads: 2, key_dim: 4, sliding_window: bad }), /slidingWindow/);
});

port('test_sliding_window_serialization', (s) => {
  const layer = s.make({ num_heads: 2, key_dim: 4, sliding_window: 5 });
  try {
    const config = layer.getConfig();
    assert.equal(config.slidingWindow, 5);
    const restored = s.fromConfig(config);
    assert.equal(restored.getConfig().slidingWindow, 5);
    s.dispose(restored);
  } finally {
    s.dispose(layer);
  }
});

port('test_correctness_disable_flash_attention', (s) => {
  const c = FIXTURES.correctness;
  const layer = layerFor(s, c);
  try {
    const r = s.call(layer, f32(c.inputs.query), f32(c.inputs.value), f32(c.inputs.key), { returnAttentionScores: true });
    // The test's own expected values (atol 1e-2, as Keras' float16 run), then the float64 reference's.
    const row = [2.406, 2.440, 2.473, 2.504, 2.535, 2.568, 2.602, 2.633];
    r.output.data.forEach((x, i) => assert.ok(Math.abs(x - row[Math.floor(i / 8)]) <= 1e-2, `output[${i}] ${x}`));
    r.scores.data.forEach((x, i) => {
      const want = (i % 8) === Math.floor(i / 8) % 8 ? 0.1691 : 0.1187;
      assert.ok(Math.abs(x - want) <= 1e-2, `scores[${i}] ${x}`);
    });
    assertClose(r.output, c.output, 'output');
    assertClose(r.scores, c.scores, 'scores');
  } finally {
    s.dispose(layer);
  }
});

setAside('test_correctness_enable_flash_attention', 'the same values through the JAX / torch flash-attention kernels in float16: a backend switch we do not have (the disable_flash_attention id runs)');

port('test_mha_constraints', (s) => {
  const query = { data: Float32Array.from([1, 0, 0, 1]), shape: [1, 2, 2] };
  for (const [arg, which] of [['kernel_constraint', 'kernel'], ['bias_constraint', 'bias']]) {
    const layer = s.make({ num_heads: 2, key_dim: 2, use_gate: true, [arg]: 'nonNeg' });
    try {
      s.call(layer, query, query);
      const names = ['query', 'key', 'gate', 'value'];
      const constrained = (layer.weights ?? []).filter((w) => names.some((n) => w.name.endsWith(`/${n}/${which}`)));
      assert.equal(constrained.length, 4, `${which}s of query, key, gate, value`);
      for (const w of constrained) assert.equal(w.constraint?.getClassName?.(), 'NonNeg', `${w.name}`);
    } finally {
      s.dispose(layer);
    }
  }
});

setAside('test_lora', 'LoRA on EinsumDense sublayers (enable_lora) and Keras model saving: neither exists in our layers');

for (const shape of [[1, 2, 3], [2, 3, 5]]) {
  port(`test_symbolic_return_attention_scores_${shape.join('_')}`, (s) => {
    const layer = s.make({ num_heads: 4, key_dim: 2 });
    try {
      const x = { data: Float32Array.from({ length: product(shape) }, (_, i) => (i % 7) / 7), shape };
      const r = s.call(layer, x, x, null, { returnAttentionScores: true });
      const want = [shape, [shape[0], 4, shape[1], shape[1]]];  // Keras' compute_output_spec
      assert.deepEqual([r.output.shape, r.scores.shape], want);
      if (s === tfjsSurface) {
        const sym = tf.input({ batchShape: shape });
        const symbolic = layer.apply(sym, { value: tf.input({ batchShape: shape }), returnAttentionScores: true });
        assert.equal(symbolic.length, 2);
        assert.deepEqual(symbolic.map((t) => t.shape), want);
      } else {
        assert.deepEqual(layer.computeOutputShape(shape, shape), shape);
      }
    } finally {
      s.dispose(layer);
    }
  });
}

setAside('test_dtype_policy_map', 'Keras DTypePolicyMap / QuantizedDTypePolicy per sublayer path; our quantization is the weightDtype option (test_quantize_int8 runs)');
setAside('test_flash_attention_with_errors', 'the flash_attention=True flag\'s errors (dropout, returned scores) on the JAX and torch backends; we have no such flag');

for (const [name, out] of [['int', [2, 4, 8]], ['tuple', [2, 4, 8, 8]]]) {
  port(`test_multi_head_attention_output_shape_as_${name}`, (s) => {
    const c = FIXTURES[`output_shape_as_${name}`];
    const layer = layerFor(s, c);
    try {
      const r = s.call(layer, f32(c.inputs.query), f32(c.inputs.value));
      assert.deepEqual(r.output.shape, out);
      assertClose(r.output, c.output, 'output');
    } finally {
      s.dispose(layer);
    }
  });
}

// Keras rejects the float 8.0; JavaScript cannot tell 8.0 from 8, so the port passes 8.5.
port('test_multi_head_attention_output_shape_error', (s) => {
  assert.throws(() => s.make({ num_heads: 2, key_dim: 16, output_shape: 8.5 }), /outputShape/);
});

port('test_quantize_int8', (s) => {
  for (const variant of ['plain', 'gate']) {
    const c = FIXTURES[`quantize_int8/${variant}`];
    const layer = layerFor(s, c, { weightDtype: 'int8' });
    try {
      const r = s.call(layer, f32(c.inputs.query), f32(c.inputs.value), f32(c.inputs.key));
      const mse = r.output.data.reduce((sum, x, i) => sum + (x - c.output.data[i]) ** 2, 0) / r.output.data.length;
      assert.ok(mse < 1e-2, `${variant}: mse ${mse}`);  // the test's own "weak correctness test"
      assert.ok(mse > 0, `${variant}: the weights are int8, not float32`);
    } finally {
      s.dispose(layer);
    }
  }
});
