// The WebGPU devices the tests run on: Dawn in Node (npm 'webgpu') on the software adapter that
// tests/stages/25-webgpu.sh selects (MHA_WEBGPU_ADAPTER: 'swiftshader', the default, or
// 'lavapipe'), opened twice: with every optional feature the kernels use requested ('subgroups',
// and 'shader-f16' where the adapter has it) and with none, so every case runs on both.
import { create, globals } from 'webgpu';

import { init } from '../../bindings/js/index.js';

/** The adapters the stage runs the suite on: how each is recognised and what it offers. */
export const ADAPTERS = {
  swiftshader: { is: (info) => info.architecture === 'swiftshader', subgroupSize: 4, shaderF16: false },
  lavapipe: { is: (info) => info.description.startsWith('llvmpipe'), subgroupSize: 8, shaderF16: true },
};
/** The adapter asked for. */
export const adapterName = process.env.MHA_WEBGPU_ADAPTER || 'swiftshader';
if (!ADAPTERS[adapterName]) {
  throw new Error(`MHA_WEBGPU_ADAPTER must be one of ${Object.keys(ADAPTERS).join(', ')}, got ${adapterName}`);
}

Object.assign(globalThis, globals);
export const gpu = create([]);
const adapters = [];  // (kept referenced while their devices live: Dawn's Node bindings need it)

/** An adapter, checked to be the one asked for (so a run on the wrong driver fails, not passes). */
export async function openAdapter() {
  const adapter = await gpu.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter: run through tests/stages/25-webgpu.sh (it sets VK_ICD_FILENAMES)');
  if (!ADAPTERS[adapterName].is(adapter.info)) {
    throw new Error(`the WebGPU adapter is ${adapter.info.vendor} ${adapter.info.architecture} (${adapter.info.description}), `
      + `not ${adapterName}: check VK_ICD_FILENAMES (tests/stages/25-webgpu.sh sets it)`);
  }
  adapters.push(adapter);
  return adapter;
}

/**
 * A device (from a fresh adapter: an adapter makes one device) with the optional features the
 * kernels use ('subgroups', 'shader-f16') where the adapter has them, or with none.
 */
export async function openDevice(optional) {
  const adapter = await openAdapter();
  const features = optional ? ['subgroups', 'shader-f16'].filter((f) => adapter.features.has(f)) : [];
  return adapter.requestDevice({ requiredFeatures: features });
}

/** [label, mha] for a module on a device with the optional features requested and one without. */
export async function modules() {
  return Promise.all([true, false].map(async (optional) => {
    const mha = await init({ backend: 'webgpu', device: await openDevice(optional) });
    const label = optional ? `${adapterName}, ${mha.features.filter((f) => f === 'subgroups' || f === 'shader-f16').join(' and ')} requested`
      : `${adapterName}, without subgroups or shader-f16`;
    return [label, mha];
  }));
}
