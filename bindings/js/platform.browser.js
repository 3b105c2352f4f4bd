// What the loader needs from a browser or worker (chosen by the "#platform" import condition).

/** Browsers fetch the .wasm themselves (streaming compilation); nothing is read here. */
export function readWasmFile() {
  return null;
}

/** Why threads are impossible on this page, or null when they work. */
export function threadsBlocker() {
  if (typeof SharedArrayBuffer !== 'function') return 'SharedArrayBuffer is not available';
  if (globalThis.crossOriginIsolated !== true) {
    return 'the page is not cross-origin isolated (serve it with the headers '
      + 'Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)';
  }
  return null;
}

export function coreCount() {
  return globalThis.navigator?.hardwareConcurrency || 1;
}

/** Browsers need no extra factory arguments: Worker and navigator are globals. */
export function factoryArgs() {
  return {};
}

/**
 * The URL Emscripten starts each pthread worker from: a classic-worker bootstrap (a blob: URL, so
 * the worker has the page's origin) that imports Emscripten's worker script as an ES module. That
 * works wherever the script ends up: bundlers may inline it as a data: URL (a worker started from one
 * has an opaque origin and cannot load the module's JS on an isolated page), and Vite's dev server
 * adds `import` statements to it (a SyntaxError in a classic worker). Messages that arrive before
 * the script has set onmessage wait in a queue. Emscripten would wait forever for a worker whose
 * script failed to load, so the bootstrap reports that on a BroadcastChannel and `onFailure` hears it
 * until `stopListening()`.
 */
export async function workerScriptUrl(url, onFailure) {
  const channelName = `mha-wasm-worker-${Math.random().toString(36).slice(2)}`;
  const bootstrap = `const early = [];
self.onmessage = (event) => early.push(event);
import(${JSON.stringify(url.href)}).then(
  () => { for (const event of early.splice(0)) self.onmessage(event); },
  (error) => new BroadcastChannel(${JSON.stringify(channelName)}).postMessage(String(error)));`;
  const channel = new BroadcastChannel(channelName);
  channel.onmessage = (event) => onFailure(new Error(`the pthread worker script ${url.href} failed to load: ${event.data}`));
  return {
    href: URL.createObjectURL(new Blob([bootstrap], { type: 'text/javascript' })),
    stopListening: () => channel.close(),
  };
}

/** A page has no file paths: loadModel takes the File objects a drop or a picker gives. */
export async function openFileRange() {
  throw new TypeError('loadModel: a { name, path } file needs Node; in a browser, pass the File objects of a drop or a file picker');
}

/** A page has no folder paths: loadModel takes the File objects a drop or a picker gives. */
export async function readCheckpointFolder() {
  throw new TypeError('loadModelFromFolder: a folder path needs Node; in a browser, pass the File objects of a drop or a file picker to loadModel');
}

/**
 * Where the kernel choice lives between page loads (core/kernel-choice.js): localStorage, where the
 * page has it (workers have none: they calibrate each time); nothing can force a variant but init's
 * `kernels` option. The machine's name for the saved choice is the user agent and core count.
 */
export const kernelChoiceStore = {
  forced: () => undefined,
  machine: () => `${globalThis.navigator?.userAgent ?? 'unknown engine'} | ${globalThis.navigator?.hardwareConcurrency ?? 0} cores`,
  async read() {
    try {
      return JSON.parse(globalThis.localStorage?.getItem('mha-wasm:kernel-choice') ?? 'null');
    } catch {
      return null;
    }
  },
  async write(record) {
    try {
      globalThis.localStorage?.setItem('mha-wasm:kernel-choice', JSON.stringify(record));
    } catch {
      // (storage full or refused: the next load calibrates again)
    }
  },
};
