// What the loader needs from a browser or worker (chosen by the "#platform" import condition).

export const platformName = 'browser';

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
