// --pre-js of the mha-simd-threads build (runs inside the module factory, before the pthread
// code). Emscripten 3.1.6's `web,worker` glue starts its pthreads with the browser's `Worker`
// and counts cores with `navigator.hardwareConcurrency`; Node 20 has neither global, and an
// ES module cannot require() node:worker_threads itself. So in Node the caller passes it:
//   createMhaModule({ wasmBinary, nodeWorkerThreads: await import('node:worker_threads'),
//                     hardwareConcurrency: os.availableParallelism() })
// and these shadow the two globals for this module only (browsers keep their own).
var Worker = globalThis.Worker || (function nodeWebWorker() {
  var threads = Module['nodeWorkerThreads'];
  if (!threads || Module['ENVIRONMENT_IS_PTHREAD']) return undefined;
  // The thread's bootstrap: a web-worker scope (self, postMessage, onmessage) over
  // parentPort, then the Emscripten worker script itself. Messages that arrive before the
  // script has set onmessage wait in a queue.
  var bootstrap = [
    'const { parentPort, workerData } = require("node:worker_threads");',
    'globalThis.self = globalThis;',
    'globalThis.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);',
    'const early = [];',
    'parentPort.on("message", (data) => (self.onmessage ? self.onmessage({ data }) : early.push(data)));',
    'import(workerData).then(() => { for (const data of early.splice(0)) self.onmessage({ data }); });',
  ].join('\n');
  return class NodeWebWorker {
    constructor(url) {
      this.thread = new threads.Worker(bootstrap, { eval: true, workerData: String(url) });
      this.thread.on('message', (data) => {
        // Once loaded, an idle pthread must not keep the Node process alive.
        if (data && data.cmd === 'loaded') this.thread.unref();
        if (this.onmessage) this.onmessage({ data: data });
      });
      this.thread.on('error', (error) => this.onerror && this.onerror(error));
    }
    postMessage(message, transfer) { this.thread.postMessage(message, transfer); }
    terminate() { this.thread.terminate(); }
  };
})();
var navigator = globalThis.navigator || { hardwareConcurrency: Module['hardwareConcurrency'] || 1 };

// A refused memory growth on a pool worker. Emscripten's glue grows the shared memory on whichever
// thread's malloc needs it, and swallows the engine's RangeError; the main thread's record of
// refusals (bindings/js/core/memory-growth.js, a wrapper on its own Memory object) never sees a
// worker's, because each worker holds its own Memory object for the same shared buffer. So each
// worker wraps its Memory object's grow, and a refusal is written where the main thread reads it:
// into the shared memory itself, at mha_growth_refusal_record() (bindings/embind/module.cpp), laid out as
//   uint32 [0]: the size asked, in 64 KiB pages (0: none); written last, cleared when a worker's
//               next growth succeeds (as memory-growth.js keeps the main thread's record)
//   uint32 [1]: the memory's size then, in pages
//   bytes [8, 128): the engine's message, ASCII, NUL-terminated
// The main thread takes it (once) with Module.takeWorkerGrowthRefusal() -> { from, to, reason } in
// bytes, or null.
var kGrowthRefusalReasonBytes = 120;
function growthRefusalRecord(buffer) {
  var at = Module['_mha_growth_refusal_record']() >>> 0;
  return { pages: new Uint32Array(buffer, at, 2), reason: new Uint8Array(buffer, at + 8, kGrowthRefusalReasonBytes) };
}
if (Module['ENVIRONMENT_IS_PTHREAD'] && Module['wasmMemory']) {
  Object.defineProperty(Module['wasmMemory'], 'grow', {
    configurable: true,
    writable: true,
    value: function grow(pages) {
      var from = this.buffer.byteLength;
      try {
        var previous = Object.getPrototypeOf(this).grow.call(this, pages);
        Atomics.store(growthRefusalRecord(this.buffer).pages, 0, 0);
        return previous;
      } catch (error) {
        var record = growthRefusalRecord(this.buffer), text = String((error && error.message) || error);
        var n = Math.min(text.length, kGrowthRefusalReasonBytes - 1);
        for (var i = 0; i < n; i++) record.reason[i] = text.charCodeAt(i) < 128 ? text.charCodeAt(i) : 63;  // '?'
        record.reason[n] = 0;
        record.pages[1] = from / 65536;
        Atomics.store(record.pages, 0, from / 65536 + pages);
        throw error;
      }
    },
  });
} else {
  Module['takeWorkerGrowthRefusal'] = function takeWorkerGrowthRefusal() {
    var buffer = Module['wasmMemory'].buffer, record = growthRefusalRecord(buffer);
    var to = Atomics.exchange(record.pages, 0, 0) * 65536, from = record.pages[1] * 65536;
    if (!to) return null;
    var reason = '';
    for (var i = 0; i < kGrowthRefusalReasonBytes && record.reason[i]; i++) reason += String.fromCharCode(record.reason[i]);
    return { from: from, to: to, reason: reason };
  };
}
