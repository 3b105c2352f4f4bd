// An object garbage-collected while it still held memory (a layer not disposed, a grad result
// never backpropagated nor released): its memory is freed late, and the first such object of each
// kind says so once, naming the call that would have freed it in time.

/**
 * A FinalizationRegistry that frees what a collected object held (`free(held)`) and warns once with
 * `message`; `stillHeld(held)` tells whether anything was left to free (default: always).
 */
export function leakRegistry(message, free, stillHeld = () => true) {
  let warned = false;
  return new FinalizationRegistry((held) => {
    if (!stillHeld(held)) return;
    if (!warned) {
      warned = true;
      console.warn(message);
    }
    free(held);
  });
}
