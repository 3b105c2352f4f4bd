// The threads build: an engine refusing to grow WebAssembly memory when a pool worker asks (the
// worker's malloc grows the shared memory itself). Simulated by pool workers whose
// WebAssembly.Memory.prototype.grow always throws V8's RangeError (the module's own factory
// option nodeWorkerThreads, as bindings/js/platform.node.js passes it, with a Worker that patches
// its thread first); the main thread grows as usual. A forward whose attention tasks allocate
// (needWeights keeps whole rows of scores per task: 32 query rows x 400k keys = 51 MB each, more
// than the 20% Emscripten grows beyond a request) then fails on the worker's allocation, and the
// main thread's error names the worker's refusal (src/mha/runtime/wasm_threads_pre.js).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import * as workerThreads from 'node:worker_threads';

import { defineMultiHeadAttention } from '../../bindings/js/core/layer.js';
import { threadsStarted } from '../../bindings/js/core/thread-start.js';

const REASON = 'WebAssembly.Memory.grow(): Maximum memory size exceeded';
const refusingWorkerThreads = {
  ...workerThreads,
  Worker: class RefusingWorker extends workerThreads.Worker {
    constructor(code, options) {
      const patch = `WebAssembly.Memory.prototype.grow = function refusingGrow() { throw new RangeError(${JSON.stringify(REASON)}); };\n`;
      super(patch + code, options);
    }
  },
};

const DIST = new URL('../../dist/', import.meta.url);
const { default: createMhaModule } = await import(new URL('mha-simd-threads.mjs', DIST));
const module = await createMhaModule({
  wasmBinary: await readFile(new URL('mha-simd-threads.wasm', DIST)),
  nodeWorkerThreads: refusingWorkerThreads,
  hardwareConcurrency: 2,
  printErr: (text) => text.startsWith('Blocking on the main thread') || console.error(text),
});
module.setNumThreads(2);
await threadsStarted(module);  // (a pthread beyond the preloaded workers starts once the main thread yields)
const MultiHeadAttention = defineMultiHeadAttention(module);

// "...; the engine refused to grow WebAssembly memory to <asked> (<n> bytes), below this build's
// maximum: it allowed <size> so far (<the engine's reason>)"
const REFUSAL = /; the engine refused to grow WebAssembly memory to [\d.]+ MiB \((\d+) bytes\), below this build's maximum: it allowed ([\d.]+) MiB so far \(WebAssembly\.Memory\.grow\(\): Maximum memory size exceeded\)$/;

test('a pool worker\'s refused growth reaches the main thread\'s out-of-memory message', () => {
  const E = 4, L = 64, S = 400000;
  const layer = new MultiHeadAttention({ embedDim: E, numHeads: 1 }).initialize({ seed: 1 });
  const query = { data: new Float32Array(L * E).fill(0.1), shape: [1, L, E] };
  const keys = { data: new Float32Array(S * E).fill(0.2), shape: [1, S, E] };
  const call = () => layer.forward(query, keys, keys, { needWeights: true });
  // The main thread takes a task too; a worker asks for memory only once it has taken one (the
  // caller's own task runs tens of milliseconds, so it does), hence a few tries.
  let error;
  for (let attempt = 0; attempt < 5 && !error; attempt++) {
    try { call(); } catch (e) { error = e; }
  }
  assert.ok(error, 'the forward failed on the worker\'s allocation');
  assert.equal(error.constructor, RangeError, error.message);
  assert.ok(error.message.startsWith('forward: out of memory: the request does not fit in WebAssembly memory; the engine refused'), error.message);
  const [, asked, allowed] = error.message.match(REFUSAL) ?? assert.fail(`no refusal in: ${error.message}`);
  // Allowed: the memory's size when the worker asked (the caller's task may have grown it since).
  const size = module.wasmMemory.buffer.byteLength;
  // (the message rounds to 0.1 MiB: the size it names may read up to 0.05 MiB above the bytes)
  assert.ok(Number(allowed) >= 100 && (Number(allowed) - 0.05) * 2 ** 20 <= size, `allowed ${allowed} MiB, now ${size} bytes`);  // (the weights alone: 98 MiB)
  assert.ok(Number(asked) > Number(allowed) * 2 ** 20 + 2 ** 20, `asked ${asked} bytes, more than the ${allowed} MiB allowed`);

  // Reported once; and the module still works (the main thread's own growths are allowed).
  const small = { data: new Float32Array(3 * E).fill(0.3), shape: [1, 3, E] };
  assert.deepEqual(layer.forward(small).output.shape, [1, 3, E]);
  assert.equal(module.takeWorkerGrowthRefusal(), null, 'the record was taken');
  layer.dispose();
});
