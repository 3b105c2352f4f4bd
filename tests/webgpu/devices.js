// The WebGPU devices the tests run on: Dawn in Node (npm 'webgpu') on SwiftShader, opened twice,
// with the 'subgroups' feature requested and without, so every case runs on both.
import { create, globals } from 'webgpu';

import { init } from '../../bindings/js/index.js';

Object.assign(globalThis, globals);
export const gpu = create([]);
const adapters = [];  // (kept referenced while their devices live: Dawn's Node bindings need it)

/** A device (from a fresh adapter: an adapter makes one device) with or without 'subgroups'. */
export async function openDevice(subgroups) {
  const adapter = await gpu.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter: run through tests/stages/25-webgpu.sh (it sets VK_ICD_FILENAMES)');
  adapters.push(adapter);
  const features = subgroups && adapter.features.has('subgroups') ? ['subgroups'] : [];
  return adapter.requestDevice({ requiredFeatures: features });
}

/** [label, mha] for a module on a device with subgroups and one without. */
export async function modules() {
  return Promise.all([true, false].map(async (subgroups) => {
    const mha = await init({ backend: 'webgpu', device: await openDevice(subgroups) });
    return [subgroups ? 'subgroups requested' : 'without subgroups', mha];
  }));
}
