// The captured steps of a forward call with `capture`, copied out of the wasm module's memory
// (the options themselves are read by api/step-options.js).
import { copyOutFloats } from './heap.js';

/** The handle's captured steps as { name: { data, shape } }, copied out of wasm memory. */
export function copyOutCaptured(module, handle) {
  const captured = {};
  for (const { name, ptr, length, shape } of handle.capturedEntries()) {
    captured[name] = { data: copyOutFloats(module, ptr, length), shape };
  }
  return captured;
}
