// Types of the CommonJS entry of mha-wasm/tfjs (tfjs.cjs): async access to the ES module.
import type * as esm from './tfjs.js';

export type * from './tfjs.js';

export declare function mhaTfjs(tf?: esm.Tfjs, initOptions?: import('./index.js').InitOptions): Promise<esm.MhaTfjs>;
export declare function registerFastGradients(tf: esm.Tfjs, options?: esm.FastGradientsOptions): Promise<esm.FastGradientsRegistration>;
export declare function load(): Promise<typeof esm>;
