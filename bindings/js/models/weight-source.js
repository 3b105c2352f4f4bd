// One checkpoint file as a source of byte ranges, so a load reads each tensor when it needs it and
// never holds the whole file: a File or Blob (slice(), then arrayBuffer(): the browser reads just
// that range from disk), { name, bytes } (views of bytes the caller already holds), or { name,
// path } (Node: an open file handle read at offsets, "#platform"'s openFileRange). No DOM.
import { openFileRange } from '#platform';

const baseName = (name) => String(name).split(/[\\/]/).pop();

const isBlob = (file) => file && typeof file.slice === 'function' && typeof file.size === 'number';

/** A source over bytes the caller holds ({ name, bytes }): reads are views, synchronous too. */
export function bytesSource(name, bytes) {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const readSync = (begin, end) => view.subarray(begin, end);
  return { name: baseName(name), size: view.length, read: async (begin, end) => readSync(begin, end), readSync, close: async () => {} };
}

/**
 * { name (the base name), size, read(begin, end) -> Promise<Uint8Array>, readSync (or null where
 * the file can only be read asynchronously: a Blob), close() } for one of loadModel's files.
 * `what` names it in errors (files[i]).
 */
export async function weightSource(file, what) {
  if (file && typeof file.name === 'string' && (file.bytes instanceof Uint8Array || file.bytes instanceof ArrayBuffer)) {
    return bytesSource(file.name, file.bytes);
  }
  if (file && typeof file.name === 'string' && typeof file.path === 'string') {
    return { name: baseName(file.name), ...(await openFileRange(file.path)) };
  }
  if (isBlob(file)) {
    const name = file.webkitRelativePath || file.name;
    if (typeof name !== 'string' || !name) throw new TypeError(`loadModel: ${what} is a Blob without a name; give a File, or { name, bytes }`);
    return {
      name: baseName(name),
      size: file.size,
      read: async (begin, end) => new Uint8Array(await file.slice(begin, end).arrayBuffer()),
      readSync: null,
      close: async () => {},
    };
  }
  throw new TypeError(`loadModel: ${what} must be a File, a named Blob, { name: string, bytes: Uint8Array | ArrayBuffer } or { name, path } (Node)`);
}
