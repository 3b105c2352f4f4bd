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
