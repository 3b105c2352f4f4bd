// Promise-based requests to the page's worker: each message carries an id; the reply settles it,
// and a long request (Generate) may send progress messages before it. A { notice } answers no request.
export class WorkerClient {
  #worker;
  #nextId = 1;
  #pending = new Map();
  /** (notice) => called for each message the worker sends unasked. */
  onNotice = null;

  constructor(url) {
    this.#worker = new Worker(url, { type: 'module' });
    this.#worker.onmessage = ({ data }) => {
      if ('notice' in data) {  // news the worker sends unasked (the WebGPU device was lost)
        this.onNotice?.(data.notice);
        return;
      }
      const request = this.#pending.get(data.id);
      if (!request) return;
      if ('progress' in data) {
        request.onProgress?.(data.progress);
        return;
      }
      this.#pending.delete(data.id);
      if (data.error) {
        const error = new Error(data.error.message);
        error.name = data.error.name;
        request.reject(error);
      } else {
        request.resolve(data.result);
      }
    };
    // A worker that fails to start (e.g. a module that cannot load) fails every request.
    this.#worker.onerror = (event) => {
      event.preventDefault();
      const error = new Error(`the worker failed: ${event.message || 'could not load worker.js'}`);
      for (const request of this.#pending.values()) request.reject(error);
      this.#pending.clear();
    };
  }

  /** Resolves with the worker's result; onProgress(progress) is called for each progress message. */
  request(type, args, transfer = [], onProgress = null) {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ id, type, ...args }, transfer);
    });
  }
}
