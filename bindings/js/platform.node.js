// What the loader needs from Node (chosen by the "#platform" import condition in package.json,
// so browser bundles never see node: imports).
import { readSync } from 'node:fs';
import { access, open, readFile } from 'node:fs/promises';
import { arch, availableParallelism, cpus, homedir } from 'node:os';
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
 * node:worker_threads, which its ES-module glue cannot import itself (src/mha/runtime/wasm_threads_pre.js).
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
 * Node's pthread workers import Emscripten's worker script by its file URL (src/mha/runtime/wasm_threads_pre.js).
 * A worker whose script is missing would crash the process, so check it is there first.
 */
export async function workerScriptUrl(url) {
  await access(url);
  return { href: url.href, stopListening: () => {} };
}

/**
 * A file read at offsets through an open handle (mha-wasm/models' streaming load): { size,
 * read(begin, end), readSync(begin, end), close() }; only the ranges asked for are read.
 */
export async function openFileRange(path) {
  const handle = await open(path, 'r');
  const { size } = await handle.stat();
  const check = (begin, end) => {
    if (!(begin >= 0 && end >= begin && end <= size)) throw new RangeError(`${path}: bytes ${begin}..${end} are outside the file's ${size}`);
    return new Uint8Array(end - begin);
  };
  let closed = false;
  return {
    size,
    async read(begin, end) {
      const out = check(begin, end);
      for (let at = 0; at < out.length;) {
        const { bytesRead } = await handle.read(out, at, out.length - at, begin + at);
        if (bytesRead === 0) throw new RangeError(`${path}: the file ended at ${begin + at} bytes (it shrank while read)`);
        at += bytesRead;
      }
      return out;
    },
    readSync(begin, end) {
      const out = check(begin, end);
      for (let at = 0; at < out.length;) {
        const read = readSync(handle.fd, out, at, out.length - at, begin + at);
        if (read === 0) throw new RangeError(`${path}: the file ended at ${begin + at} bytes (it shrank while read)`);
        at += read;
      }
      return out;
    },
    async close() {
      if (!closed) await handle.close();
      closed = true;
    },
  };
}

/**
 * A checkpoint folder's files as { name, path } (mha-wasm/models' loadModelFromFolder, which reads
 * them at offsets): config.json, tokenizer.json and the weights (model.safetensors, or the index
 * and the shards it names).
 */
export async function readCheckpointFolder(path) {
  const { readdir } = await import('node:fs/promises');
  const { join } = await import('node:path');
  let present;
  try {
    present = new Set(await readdir(path));
  } catch (error) {
    throw new TypeError(`loadModelFromFolder: cannot read the folder ${path}: ${error.message}`);
  }
  const names = ['config.json', 'tokenizer.json', 'model.safetensors', 'model.safetensors.index.json'].filter((name) => present.has(name));
  if (!present.has('model.safetensors') && present.has('model.safetensors.index.json')) {
    const index = JSON.parse(await readFile(join(path, 'model.safetensors.index.json'), 'utf8'));
    // (shards the index names but the folder lacks are left for loadModel to name)
    names.push(...new Set(Object.values(index?.weight_map ?? {}).filter((name) => present.has(name))));
  }
  return names.map((name) => ({ name, path: join(path, name) }));
}

/**
 * Where the kernel choice lives between processes (core/kernel-choice.js): the variables Node has
 * (MHA_KERNELS forces variants; MHA_KERNEL_CACHE is the file path, or 'off'), this machine's name
 * for the saved choice (CPU model, architecture, Node's version: a new V8 may favour another
 * variant), and the saved file read and written as JSON, under the OS's cache folder by default.
 * Failures (a read-only home, no such file) read as nothing saved and write nothing.
 */
export const kernelChoiceStore = {
  forced: () => process.env.MHA_KERNELS,
  machine() {
    return `${cpus()[0]?.model ?? 'unknown CPU'} | ${arch()} | node ${process.version}`;
  },
  async read() {
    const path = kernelChoicePath();
    if (!path) return null;
    try {
      return JSON.parse(await readFile(path, 'utf8'));
    } catch {
      return null;
    }
  },
  async write(record) {
    const path = kernelChoicePath();
    if (!path) return;
    try {
      const { mkdir, writeFile } = await import('node:fs/promises');
      const { dirname } = await import('node:path');
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, `${JSON.stringify(record, null, 1)}\n`);
    } catch {
      // (a read-only or missing home: the next process calibrates again)
    }
  },
};

function kernelChoicePath() {
  const chosen = process.env.MHA_KERNEL_CACHE;
  if (chosen === 'off') return null;
  if (chosen) return chosen;
  const home = homedir();
  const base = process.platform === 'win32' ? (process.env.LOCALAPPDATA || `${home}\\AppData\\Local`)
    : process.platform === 'darwin' ? `${home}/Library/Caches`
      : (process.env.XDG_CACHE_HOME || `${home}/.cache`);
  return `${base}/mha-wasm/kernel-choice.json`;
}
