// The machine's memory bandwidth as WebAssembly sees it: a SIMD loop that reads a 256 MiB buffer
// (far larger than the last-level cache) with 128-bit loads, on 1 thread and on N threads (Node
// worker_threads sharing one WebAssembly.Memory, each reading its part). bench/decode.mjs turns
// it into the time a decode step's bytes need at best. The module is about 100 bytes, written out below,
// so the measurement needs no toolchain and nothing of mha-wasm.
//   node bench/stream-read.mjs [threads]      prints { threads: GB/s } as JSON
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const MIB = 1 << 20;
const BYTES = 256 * MIB;
const PAGES = BYTES / 65536 + 1;

// (func (export "read") (param $p i32) (param $end i32) (result f32) (local $a0 $a1 $a2 $a3 v128)
//   (loop  a0 += v128.load p; a1 += p+16; a2 += p+32; a3 += p+48;  p += 64;  br_if p < end)
//   f32x4.extract_lane 0 (a0 + a1 + a2 + a3))      four sums, so adds do not wait on each other
const leb = (n) => { const out = []; do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; out.push(b); } while (n); return out; };
const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
const name = (s) => [s.length, ...[...s].map((c) => c.charCodeAt(0))];
const F32X4_ADD = [0xfd, 0xe4, 0x01];
const load = (acc, offset) => [0x20, acc, 0x20, 0, 0xfd, 0x00, 4, ...leb(offset), ...F32X4_ADD, 0x21, acc];
const body = [1, 4, 0x7b,  // four v128 locals: 2..5
  0x03, 0x40, ...load(2, 0), ...load(3, 16), ...load(4, 32), ...load(5, 48),
  0x20, 0, 0x41, 0xc0, 0x00, 0x6a, 0x22, 0, 0x20, 1, 0x49, 0x0d, 0, 0x0b,
  0x20, 2, 0x20, 3, ...F32X4_ADD, 0x20, 4, ...F32X4_ADD, 0x20, 5, ...F32X4_ADD, 0xfd, 0x1f, 0, 0x0b];
const WASM = Uint8Array.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
  ...section(1, [1, 0x60, 2, 0x7f, 0x7f, 1, 0x7d]),
  ...section(2, [1, ...name('env'), ...name('mem'), 0x02, 0x03, ...leb(PAGES), ...leb(PAGES)]),
  ...section(3, [1, 0]),
  ...section(7, [1, ...name('read'), 0x00, 0]),
  ...section(10, [1, ...leb(body.length), ...body])]);

async function reader(memory) {
  const { instance } = await WebAssembly.instantiate(WASM, { env: { mem: memory } });
  return instance.exports.read;
}

if (isMainThread) {
  const threads = Number(process.argv[2] ?? 2);
  const memory = new WebAssembly.Memory({ initial: PAGES, maximum: PAGES, shared: true });
  new Uint8Array(memory.buffer, 0, BYTES).fill(1);  // touch every page before timing
  const read = await reader(memory);
  const result = {};
  for (const n of [1, threads]) {
    const part = BYTES / n;
    // Helpers wait on `go` (Atomics) so every thread starts together; each reports its seconds.
    const control = new Int32Array(new SharedArrayBuffer(8));
    const helpers = Array.from({ length: n - 1 }, (_, t) => new Worker(new URL(import.meta.url), {
      workerData: { memory, control, begin: (t + 1) * part, end: (t + 2) * part },
    }));
    await Promise.all(helpers.map((w) => new Promise((resolve) => w.once('message', resolve))));  // instantiated
    let best = Infinity;
    for (let rep = 0; rep < 7; rep++) {
      const done = helpers.map((w) => new Promise((resolve) => w.once('message', resolve)));
      Atomics.store(control, 0, rep + 1);
      Atomics.notify(control, 0);
      const t0 = performance.now();
      read(0, part);
      const own = (performance.now() - t0) / 1000;
      const seconds = Math.max(own, ...(await Promise.all(done)));
      if (rep > 0) best = Math.min(best, seconds);  // the first pass warms up
    }
    Atomics.store(control, 0, -1);
    Atomics.notify(control, 0);
    await Promise.all(helpers.map((w) => w.terminate()));
    result[n] = BYTES / best / 1e9;
  }
  console.log(JSON.stringify(result));
} else {
  const { memory, control, begin, end } = workerData;
  const read = await reader(memory);
  parentPort.postMessage('ready');
  for (let seen = 0; ;) {
    Atomics.wait(control, 0, seen);
    seen = Atomics.load(control, 0);
    if (seen < 0) break;
    const t0 = performance.now();
    read(begin, end);
    parentPort.postMessage((performance.now() - t0) / 1000);
  }
}
