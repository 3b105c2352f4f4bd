// One tensor of a checkpoint, known from its file's header before any of its bytes are read: dtype,
// shape and where it lies in its file. load() reads it (and only it); release() drops it again, so
// a model is built a layer at a time with only that layer's tensors in memory. `data` is the typed
// array (tensors.js' convention: F32 as Float32Array, F16 / BF16 as raw Uint16Array bits); a
// tensor not loaded is read on the spot where its file can be read synchronously ({ name, bytes },
// a Node file), and refused by name where it cannot (a browser File). No DOM.
import { typedTensorData } from '../formats/safetensors.js';

export class StoredTensor {
  #source;
  #data = null;

  constructor(name, { dtype, shape, begin, end }, source) {
    this.name = name;
    this.dtype = dtype;
    this.shape = shape;
    this.begin = begin;
    this.end = end;
    this.#source = source;
  }

  /** Bytes it holds in its file (and in memory once loaded). */
  get byteLength() { return this.end - this.begin; }

  get loaded() { return this.#data !== null; }

  /** Reads it from its file (once). */
  async load() {
    if (!this.#data) this.#data = typedTensorData(this.dtype, await this.#source.read(this.begin, this.end));
    return this;
  }

  /** Drops the bytes read (a later `data` or load() reads them again). */
  release() { this.#data = null; }

  get data() {
    if (this.#data) return this.#data;
    if (!this.#source.readSync) {
      throw new Error(`loadModel: tensor '${this.name}' of ${this.#source.name} was not read yet (a File is read a layer at a time: load it with CheckpointModel.create)`);
    }
    // Read but not kept: whoever asked holds it as long as it needs it.
    return typedTensorData(this.dtype, this.#source.readSync(this.begin, this.end));
  }
}
