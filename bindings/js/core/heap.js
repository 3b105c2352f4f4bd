// Moving typed arrays into and out of the wasm heap. HEAP views are re-read on every use:
// they are replaced when memory grows. Addresses go up to 4 GiB: a pointer is an unsigned number
// (`>>> 0` where wasm hands back an i32, `>>> 2` for a float index), never a signed `>> 2`.
import { describeGrowthRefusal } from './memory-growth.js';

/**
 * A current view of the heap. In the threaded build a worker thread may grow the (shared) memory,
 * and Emscripten only refreshes the main thread's HEAP views when its own code next looks.
 */
function heapView(module, Type) {
  const current = module.wasmMemory?.buffer;
  if (current && module.HEAPU8.buffer !== current) return new Type(current);
  if (Type === Float64Array) return new Float64Array(module.HEAPU8.buffer);  // (a float64 layer's; a view costs nothing)
  return Type === Float32Array ? module.HEAPF32 : module.HEAPU8;
}

/** Allocations for one call, freed together. */
export class HeapScope {
  constructor(module) {
    this.module = module;
    this.pointers = [];
  }

  /** Room for `bytes` bytes (at least 1), freed with the scope; `what` names it in the error. */
  allocate(bytes, what = 'an output') {
    bytes = Math.max(bytes, 1);
    const ptr = this.module._malloc(bytes) >>> 0;  // an i32 export: negative above 2 GiB
    if (ptr === 0) {
      throw new RangeError(`out of memory: cannot allocate ${bytes} bytes of WebAssembly memory for ${what}`
        + describeGrowthRefusal(this.module));
    }
    this.pointers.push(ptr);
    return ptr;
  }

  /** Copies a Float32Array, Uint8Array or Int32Array into the heap; returns its address. */
  copyIn(array) {
    const ptr = this.allocate(array.byteLength, 'an input');
    if (array instanceof Float32Array) {
      heapView(this.module, Float32Array).set(array, ptr >>> 2);
    } else {  // byte for byte (an Int32Array set into a Uint8Array view would truncate each element)
      heapView(this.module, Uint8Array).set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength), ptr);
    }
    return ptr;
  }

  free() {
    for (const ptr of this.pointers) this.module._free(ptr);
    this.pointers.length = 0;
  }
}

/**
 * A caller-owned copy of `length` floats at `ptr` (never a view of shared memory): a Float32Array,
 * or of doubles with `Type` Float64Array. Through set(), not slice(): in isolation Node 20's
 * Float32Array slice copied 256 KB in 0.7 ms and this in 0.015 ms (inside forward() the fresh
 * array's first-touch page faults cost about as much).
 */
export function copyOutFloats(module, ptr, length, Type = Float32Array) {
  const copy = new Type(length);
  const index = ptr / Type.BYTES_PER_ELEMENT;  // (aligned: an exact integer)
  copy.set(heapView(module, Type).subarray(index, index + length));
  return copy;
}

/** Copies `target.length` floats at `ptr` into the caller's Float32Array (or Float64Array) `target`. */
export function copyOutFloatsInto(module, ptr, target) {
  const Type = target.constructor;
  const index = ptr / Type.BYTES_PER_ELEMENT;
  target.set(heapView(module, Type).subarray(index, index + target.length));
  return target;
}

/** Whether `array` is a view of the module's memory (which moves when memory grows). */
export function viewsHeap(module, array) {
  const heap = module.wasmMemory?.buffer ?? module.HEAPU8.buffer;
  return array.buffer === heap;
}
