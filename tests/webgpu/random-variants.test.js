// Random configurations with masks and variants against the float64 reference of the
// attention's steps (tests/js/float64-steps.js, itself pinned to PyTorch's fixtures): per device
// (subgroups requested and not), VARIANT_CONFIGS layers drawing GQA/MQA, rotary (full or partial,
// interleaved or not), ALiBi, softcap, sinks, a sliding window, causal, self or cross attention,
// and masks (key padding and attention masks, bool or float, 2-D or per head, rows fully blocked
// included), each output compared whole at the fixtures' tolerance (1e-5 + 1e-4 |ref|).
// api.test.js's random configurations cover the plain layer's shapes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { attentionSteps } from '../js/float64-steps.js';
import { modules } from './devices.js';
import { random, tensor } from './random-data.js';

const VARIANT_CONFIGS = 60;

/** A mask of `shape`: bool (true = blocked, about a quarter) or float (0, negatives and -inf). */
function randomMask(rand, shape, bool) {
  const n = shape.reduce((a, b) => a * b, 1);
  if (bool) return { data: Uint8Array.from({ length: n }, () => (rand() < -0.25 ? 1 : 0)), shape };
  return { data: Float32Array.from({ length: n }, () => { const u = rand(); return u < -0.3 ? -Infinity : u < 0 ? 2 * u : 0; }), shape };
}

for (const [label, mha] of await modules()) {
  describe(`random configurations with masks and variants against float64 (${label})`, () => {
    const rand = random(31);
    const pick = (values) => values[Math.floor((rand() + 0.5) * values.length)];
    const maybe = (p) => rand() + 0.5 < p;
    for (let n = 0; n < VARIANT_CONFIGS; n++) {
      const H = pick([1, 2, 4]), Hkv = pick([1, 2, 4].filter((g) => H % g === 0)), Dh = pick([2, 4, 6, 8]);
      const E = H * Dh;
      const config = { embedDim: E, numHeads: H, ...(Hkv !== H ? { numKvHeads: Hkv } : {}) };
      if (maybe(0.35)) config.rotary = { dim: pick([Dh, 2 * Math.floor(Dh / 4) || 2]), interleaved: maybe(0.5) };
      if (maybe(0.3)) config.alibi = true;
      if (maybe(0.3)) config.softcap = pick([2, 5]);
      if (maybe(0.3)) config.sinks = true;
      if (maybe(0.3)) config.slidingWindow = pick([1, 2, 5]);
      const B = pick([1, 2]), L = pick([1, 3, 9, 33]);
      const self = maybe(0.7), S = self ? L : pick([1, 6, 40]);
      const causal = maybe(0.4);
      const options = { causal };
      if (maybe(0.35)) options.keyPaddingMask = randomMask(rand, [B, S], maybe(0.5));
      if (maybe(0.35)) options.attnMask = randomMask(rand, maybe(0.5) ? [L, S] : [B * H, L, S], maybe(0.5));
      const variants = ['rotary', 'alibi', 'softcap', 'sinks', 'slidingWindow'].filter((v) => config[v]).join(', ');
      const masks = ['keyPaddingMask', 'attnMask'].filter((m) => options[m])
        .map((m) => `${m} ${options[m].data instanceof Uint8Array ? 'bool' : 'float'} [${options[m].shape}]`).join(', ');
      test(`B ${B}, L ${L}, S ${S}, H ${H}/${Hkv}, Dh ${Dh}${self ? '' : ' (cross)'}${causal ? ', causal' : ''}`
        + `${variants ? `; ${variants}` : ''}${masks ? `; ${masks}` : ''}`, async () => {
        const layer = new mha.MultiHeadAttention(config).initialize({ seed: n });
        const query = tensor(rand, [B, L, E]);
        const key = self ? null : tensor(rand, [B, S, E]);
        const { output } = await layer.forwardAsync(query, key, key, options);
        const want = attentionSteps(layer.config, layer.stateDict(), { query, key, value: key, ...options }).output.data;
        assert.equal(output.data.length, want.length);
        for (let i = 0; i < want.length; i++) {
          const got = output.data[i];
          assert.ok(Math.abs(got - want[i]) <= 1e-5 + 1e-4 * Math.abs(want[i]), `output[${i}]: ${got} vs float64 ${want[i]}`);
        }
        layer.dispose();
      });
    }
  });
}
