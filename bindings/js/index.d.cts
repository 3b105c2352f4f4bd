// Types of the CommonJS entry (index.cjs): async access to the ES module.
import type * as esm from './index.js';

export type * from './index.js';

/** The same as the ES module's `init({ backend: 'webgpu' })`: the WebGPU backend (docs/webgpu.md). */
export declare function init(options: esm.WebGpuInitOptions): Promise<esm.WebGpuModule>;
/** The same as the ES module's `init()`: loads the WebAssembly module once (single-flight). */
export declare function init(options?: esm.InitOptions): Promise<esm.MhaModule>;

/**
 * Resolves to the whole ES module (`init`, `readSafetensors`, `stateDictFromKeras`, ...), for
 * CommonJS code: `const { readSafetensors } = await require('mha-wasm').load();`
 */
export declare function load(): Promise<typeof esm>;
