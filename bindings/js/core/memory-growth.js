// When an engine refuses to grow WebAssembly memory before the build's maximum (4 GiB): the
// out-of-memory error says how much was asked and what the engine allowed. Emscripten's glue
// grows memory with wasmMemory.grow() and swallows the engine's RangeError (malloc then returns 0,
// and C++ throws bad_alloc), so a wrapper on this module's own Memory object (not the global
// prototype) records the refusal for the error to name. The threads build's pool workers grow
// the same shared memory through their own Memory objects: their refusals are recorded in the
// shared memory by the build's --pre-js (src/mha/runtime/wasm_threads_pre.js, takeWorkerGrowthRefusal).

const watches = new WeakMap();  // the module, and its LayerHandle class -> { module, refusal }

/** The module's memory: exported as wasmMemory by the threads build, else among its exports. */
function memoryOf(module) {
  return module.wasmMemory ?? Object.values(module.asm ?? {}).find((value) => value instanceof WebAssembly.Memory);
}

/** Starts recording refused growths of `module`'s memory (once per module). */
export function watchMemoryGrowth(module) {
  if (watches.has(module)) return;
  const watch = { module, refusal: null };
  watches.set(module, watch);
  if (module.LayerHandle) watches.set(module.LayerHandle, watch);
  const memory = memoryOf(module);
  if (!memory) return;
  Object.defineProperty(memory, 'grow', {
    configurable: true,
    writable: true,
    value: function grow(pages) {
      const from = this.buffer.byteLength;
      try {
        const previous = Object.getPrototypeOf(this).grow.call(this, pages);
        watch.refusal = null;
        return previous;
      } catch (error) {
        // Emscripten asks for a few sizes, largest first: the last (smallest) one is the request.
        watch.refusal = { from, to: from + pages * 65536, reason: String(error?.message ?? error) };
        throw error;
      }
    },
  });
}

/** "512 bytes", "3.5 KiB", "1.2 GiB": as the core's messages (src/mha/plan/memory_budget.hpp, format_bytes). */
export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * The text to append to an out-of-memory message when the engine refused to grow the memory
 * since the last successful growth, on this thread or (threads build) a pool worker ('' when it
 * did not), e.g. "; the engine refused to grow WebAssembly memory to 1.3 GiB (1395654656 bytes),
 * below this build's maximum: it allowed 1.0 GiB so far (<the engine's reason>)". Reported once.
 * (Emscripten asks the engine only for sizes within the build's maximum.) `owner` is the module or one of its LayerHandle objects.
 */
export function describeGrowthRefusal(owner) {
  const watch = watches.get(owner) ?? watches.get(owner?.constructor);
  if (!watch) return '';
  const fromWorker = watch.module.takeWorkerGrowthRefusal?.() ?? null;  // (both are taken)
  const refusal = watch.refusal ?? fromWorker;
  watch.refusal = null;
  if (!refusal) return '';
  return `; the engine refused to grow WebAssembly memory to ${formatBytes(refusal.to)} (${refusal.to} bytes), `
    + `below this build's maximum: it allowed ${formatBytes(refusal.from)} so far (${refusal.reason})`;
}
