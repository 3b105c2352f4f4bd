// Compute pipelines, made once per device, kernel and template values (the kernels' variants:
// {{NAME}} in a .wgsl file is replaced by its value, e.g. the head size of flash_attention; the
// workgroup size and the kernel's constants come from its manifest entry, kernel-manifest.js).
import { manifestValues } from './kernel-manifest.js';
import { WGSL } from './wgsl.generated.js';

const caches = new WeakMap();  // device -> Map(key -> GPUComputePipeline)

/** The WGSL of `kernel` with its manifest's values and the caller's `values` substituted. */
export function specialize(kernel, values) {
  const source = WGSL[kernel];
  if (source === undefined) throw new Error(`webgpu: no kernel '${kernel}'`);
  const fixed = manifestValues(kernel);
  for (const name of Object.keys(values)) {
    if (name in fixed) throw new Error(`webgpu: kernel '${kernel}': ${name} is its manifest's (kernel-manifest.js), not a caller's`);
  }
  values = { ...fixed, ...values };
  return source.replace(/\{\{(\w+)\}\}/g, (_, name) => {
    if (!(name in values)) throw new Error(`webgpu: kernel '${kernel}' needs the template value ${name}`);
    return String(values[name]);
  });
}

/** The pipeline of `kernel` with `values` ({ DH: 64, ... }; the manifest's are added) on `device`. */
export function pipeline(device, kernel, values = {}) {
  let cache = caches.get(device);
  if (!cache) caches.set(device, (cache = new Map()));
  const key = `${kernel}:${JSON.stringify(values)}`;
  let made = cache.get(key);
  if (!made) {
    const module = device.createShaderModule({ label: key, code: specialize(kernel, values) });
    made = device.createComputePipeline({ label: key, layout: 'auto', compute: { module, entryPoint: 'main' } });
    cache.set(key, made);
  }
  return made;
}

/** One dispatch of `kernel` in `pass`: bindings { index: GPUBuffer }, workgroups [x, y, z]. */
export function dispatch(device, pass, made, bindings, workgroups) {
  const entries = Object.entries(bindings).map(([binding, buffer]) => ({ binding: Number(binding), resource: { buffer } }));
  const group = device.createBindGroup({ layout: made.getBindGroupLayout(0), entries });
  pass.setPipeline(made);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(...workgroups);
}
