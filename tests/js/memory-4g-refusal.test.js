// An engine that refuses to grow WebAssembly memory before the build's 4 GiB (a phone, a 32-bit
// browser, a tab limit): simulated here by a WebAssembly.Memory.prototype.grow that throws the
// RangeError V8 throws past its limit once the memory would exceed 256 MiB. Every path that
// allocates then fails with a RangeError saying how much was asked and what the engine allowed,
// and the module keeps working. (This file's process only: node --test runs each file alone.)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { BUILDS, loadBuild } from '../../tools/load-wasm-build.mjs';
import { seededFloats } from './seeded.js';

const ENGINE_LIMIT = 256 * 2 ** 20;
const grow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function refusingGrow(pages) {
  if (this.buffer.byteLength + pages * 65536 > ENGINE_LIMIT) {
    throw new RangeError('WebAssembly.Memory.grow(): Maximum memory size exceeded');
  }
  return grow.call(this, pages);
};

// "...; the engine refused to grow WebAssembly memory to <asked> (<n> bytes), below this build's
// maximum: it allowed <size> so far (<the engine's reason>)"
const REFUSAL = /; the engine refused to grow WebAssembly memory to [\d.]+ MiB \((\d+) bytes\), below this build's maximum: it allowed ([\d.]+) MiB so far \(WebAssembly\.Memory\.grow\(\): Maximum memory size exceeded\)$/;

function assertRefused(call, start, { atLeast }) {
  assert.throws(call, (error) => {
    assert.equal(error.constructor, RangeError, error.message);
    assert.ok(error.message.startsWith(start), error.message);
    const [, asked, allowed] = error.message.match(REFUSAL) ?? assert.fail(`no refusal in: ${error.message}`);
    assert.ok(Number(allowed) * 2 ** 20 <= ENGINE_LIMIT, `allowed ${allowed} MiB`);
    assert.ok(Number(asked) > ENGINE_LIMIT && Number(asked) >= atLeast, `asked ${asked} bytes`);
    return true;
  });
}

for (const name of BUILDS) {
  describe(`an engine refusing to grow past 256 MiB, on ${name}`, async () => {
    const { module, MultiHeadAttention } = await loadBuild(name);
    module.setNumThreads?.(2);
    const E = 64, H = 4;
    const layer = new MultiHeadAttention({ embedDim: E, numHeads: H }).initialize({ seed: 1 });
    const probe = { data: seededFloats(2 * 3 * E, 5, 1.0), shape: [2, 3, E] };
    const expected = layer.forward(probe).output.data;
    const stillWorks = () => assert.deepEqual(layer.forward(probe).output.data, expected, 'the module still works');

    test('forward: per-head weights of 282 MB (C++ allocation: bad_alloc)', () => {
      const L = 4200, x = { data: new Float32Array(L * E), shape: [1, L, E] };
      assertRefused(() => layer.forward(x, null, null, { needWeights: true, averageWeights: false }),
        'forward: out of memory: the request does not fit in WebAssembly memory; the engine refused', { atLeast: H * L * L * 4 });
      stillWorks();
    });

    test('loadStateDict: weights of 302 MB copied in (the JS wrapper\'s malloc returns 0)', () => {
      const big = new MultiHeadAttention({ embedDim: 4480, numHeads: 8 });
      try {
        const sd = Object.fromEntries(Object.entries(big.stateDictShapes())
          .map(([key, shape]) => [key, new Float32Array(shape.reduce((n, d) => n * d, 1))]));
        assertRefused(() => big.loadStateDict(sd), 'loadStateDict: out of memory: ', { atLeast: 4480 * 4480 * 4 });
      } finally {
        big.dispose();
      }
      stillWorks();
    });

    test('createCache: a 300 MB cache', () => {
      assertRefused(() => layer.createCache({ capacity: 600000 }), 'createCache: out of memory: ', { atLeast: 600000 * E * 4 });
      stillWorks();
    });

    test('a request that fits still runs after the refusals', () => {
      const cache = layer.createCache({ batch: 2, capacity: 8 });
      const { output } = layer.forward(probe, null, null, { cache });
      assert.deepEqual(output.shape, [2, 3, E]);
      cache.dispose();
    });
  });
}
