// Types of the CommonJS entry of mha-wasm/models (models.cjs): async access to the ES module.
import type * as esm from './models.js';

export type * from './models.js';

export declare function loadModel(...args: Parameters<typeof esm.loadModel>): ReturnType<typeof esm.loadModel>;
export declare function estimateModelMemory(...args: Parameters<typeof esm.estimateModelMemory>): ReturnType<typeof esm.estimateModelMemory>;
export declare function loadModelFromFolder(...args: Parameters<typeof esm.loadModelFromFolder>): ReturnType<typeof esm.loadModelFromFolder>;
export declare function activationPatching(...args: Parameters<typeof esm.activationPatching>): ReturnType<typeof esm.activationPatching>;
export declare function directLogitAttribution(...args: Parameters<typeof esm.directLogitAttribution>): Promise<ReturnType<typeof esm.directLogitAttribution>>;
export declare function headScores(...args: Parameters<typeof esm.headScores>): Promise<ReturnType<typeof esm.headScores>>;
export declare function load(): Promise<typeof esm>;
