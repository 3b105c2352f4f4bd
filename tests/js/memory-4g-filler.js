// For the 4 GiB tests: a filler that pushes a module's later allocations above 2^31, and a record
// of every address the JS side gets from the module (read unsigned, as the wrapper must).
import assert from 'node:assert/strict';

export const TWO_GIB = 2 ** 31;

/** Takes 2 GiB and then every free block below 2 GiB; returns the addresses, to free later. */
export function takeLowMemory(module) {
  const held = [module._malloc(2 ** 30) >>> 0, module._malloc(2 ** 30) >>> 0];
  assert.ok(held.every((p) => p !== 0), 'the 2 GiB filler was allocated');
  for (const size of [2 ** 20, 2 ** 16, 2 ** 12, 2 ** 8, 8]) {
    for (;;) {
      const p = module._malloc(size) >>> 0;
      assert.notEqual(p, 0, `malloc(${size}) after the filler`);
      if (p >= TWO_GIB) { module._free(p); break; }
      held.push(p);
    }
  }
  return held;
}

/**
 * From now on, every address the JS side sees: what _malloc returns (the wrapper's copies of
 * inputs and weights), the result getters and the entry lists. Returns the live list.
 */
export function recordPointers(module) {
  const seen = [];
  const malloc = module._malloc;
  module._malloc = (bytes) => { const p = malloc(bytes); seen.push(p >>> 0); return p; };
  const proto = module.LayerHandle.prototype;
  for (const method of ['outputPtr', 'weightsPtr']) {
    const original = proto[method];
    proto[method] = function recorded(...args) {
      const p = original.apply(this, args);
      if (p !== 0) seen.push(p);  // (0: no weights asked for)
      return p;
    };
  }
  for (const method of ['stateDict', 'gradientEntries']) {
    const original = proto[method];
    proto[method] = function recorded(...args) {
      const entries = original.apply(this, args);
      for (const e of entries ?? []) if (e.length) seen.push(e.ptr);  // (self-attention: no key, value gradients)
      return entries;
    };
  }
  return seen;
}

/** The addresses in `pointers` that are not unsigned and above 2^31 (none, when all is well). */
export function below2GiB(pointers) {
  return pointers.filter((p) => !(p >= TWO_GIB && p < 2 ** 32));
}
