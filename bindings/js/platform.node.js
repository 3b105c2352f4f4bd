// What the loader needs from Node (chosen by the "#platform" import condition in package.json,
// so browser bundles never see node: imports).
import { access, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import * as workerThreads from 'node:worker_threads';

/** Node reads the .wasm from disk: Emscripten 3.1.6 would fetch() a file path and fail. */
export function readWasmFile(url) {
  return readFile(url);
}

/** Threads work in Node 20 without any headers. */
export function threadsBlocker() {
  return typeof SharedArrayBuffer === 'function' ? null : 'SharedArrayBuffer is not available';
}

export function coreCount() {
  return availableParallelism();
}

/**
 * Extra arguments for the Emscripten factory: the threaded build starts its pthreads with
 * node:worker_threads, which its ES-module glue cannot import itself (src/mha/wasm_threads_pre.js).
 */
export function factoryArgs(numThreads) {
  return {
    nodeWorkerThreads: workerThreads,
    hardwareConcurrency: Math.max(numThreads, availableParallelism()),
    // The browser-targeted glue takes Node's main thread for a page's and warns that blocking it is
    // dangerous; in Node it is not.
    printErr: (text) => text.startsWith('Blocking on the main thread') || console.error(text),
  };
}

/**
 * Node's pthread workers import Emscripten's worker script by its file URL (src/mha/wasm_threads_pre.js).
 * A worker whose script is missing would crash the process, so check it is there first.
 */
export async function workerScriptUrl(url) {
  await access(url);
  return { href: url.href, stopListening: () => {} };
}
