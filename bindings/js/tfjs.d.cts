// Types of the CommonJS entry of mha-wasm/tfjs (tfjs.cjs): async access to the ES module.
import type * as esm from './tfjs.js';

export type * from './tfjs.js';

export declare function mhaTfjs(tf?: esm.Tfjs, initOptions?: esm.MhaTfjsOptions): Promise<esm.MhaTfjs>;
export declare function registerFastGradients(tf: esm.Tfjs, options?: esm.FastGradientsOptions): Promise<esm.FastGradientsRegistration>;
export declare function tfjsToGpu(tf: esm.Tfjs, tensor: unknown): Promise<esm.TfjsGpuInput>;
export declare function gpuToTfjs(tf: esm.Tfjs, gpuTensor: Parameters<typeof esm.gpuToTfjs>[1], options?: esm.GpuToTfjsOptions): Promise<unknown>;
export declare function load(): Promise<typeof esm>;
