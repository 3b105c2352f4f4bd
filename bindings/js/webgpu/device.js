// The GPU device: found from a GPU object (navigator.gpu or the caller's) or taken as given, its
// limits checked against what the kernels need, its loss watched. Never a silent fallback: every
// reason init({ backend: 'webgpu' }) cannot run becomes an Error that says it.

/** The limits the kernels are written for: WebGPU's defaults, which every adapter offers. */
const NEEDED_LIMITS = {
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 64,
  maxComputeWorkgroupSizeX: 64,
  maxStorageBuffersPerShaderStage: 8,
};

function checkLimits(limits, what) {
  for (const [name, needed] of Object.entries(NEEDED_LIMITS)) {
    if (!(limits[name] >= needed)) {
      throw new Error(`init: the WebGPU ${what}'s limit ${name} is ${limits[name]}; the kernels need at least ${needed}`);
    }
  }
}

function describeAdapter(info) {
  return {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    isFallbackAdapter: Boolean(info?.isFallbackAdapter),
  };
}

const isDevice = (x) => x !== null && typeof x === 'object' && typeof x.createComputePipeline === 'function'
  && typeof x.createBuffer === 'function' && x.queue !== undefined;

/**
 * Opens the device: `device` as given (shared with tfjs, onnxruntime-web, ...), else one from
 * `gpu` (default navigator.gpu) with the adapter's largest buffer sizes and shader-f16 where it has it. Returns { device,
 * adapterInfo, features, lost } where lost is null until the device is lost ({ reason, message }).
 */
export async function openDevice({ gpu, device } = {}) {
  let adapterInfo, source = null, adapter = null;
  if (device !== undefined) {
    if (!isDevice(device)) throw new TypeError('init: device must be a GPUDevice');
    checkLimits(device.limits, 'device');
    adapterInfo = describeAdapter(device.adapterInfo);
  } else {
    source = gpu ?? globalThis.navigator?.gpu;
    if (source === undefined || source === null) {
      throw new Error("init: backend 'webgpu' needs WebGPU: this runtime has no navigator.gpu "
        + "(pass a GPU object as { gpu }, e.g. the 'webgpu' package's create([]) in Node)");
    }
    if (typeof source.requestAdapter !== 'function') throw new TypeError('init: gpu must be a GPU object (with requestAdapter())');
    adapter = await source.requestAdapter();
    if (!adapter) throw new Error('init: no WebGPU adapter is available (gpu.requestAdapter() gave null)');
    checkLimits(adapter.limits, 'adapter');
    device = await adapter.requestDevice({
      // shader-f16 where present: f16 caches and weights are then read as f16 (half-reads.js).
      requiredFeatures: adapter.features?.has('shader-f16') ? ['shader-f16'] : [],
      requiredLimits: {
        maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxBufferSize: adapter.limits.maxBufferSize,
      },
    });
    adapterInfo = describeAdapter(adapter.info);
    if (adapter.isFallbackAdapter) adapterInfo.isFallbackAdapter = true;  // (older browsers: on the adapter)
  }
  // The GPU object and adapter stay referenced as long as the device: Dawn's Node bindings free
  // the instance behind a collected GPU object even while its device runs (a crash, seen here).
  const state = { device, adapterInfo, features: [...device.features].sort(), lost: null, keepAlive: [source, adapter] };
  device.lost.then((info) => { state.lost = { reason: info.reason, message: info.message }; });
  return state;
}

/** The Error for a call on a lost device; the layer stays unusable. */
export function lostError(call, lost) {
  return new Error(`${call}: the GPU device was lost (${lost.reason}${lost.message ? `: ${lost.message}` : ''}); `
    + "this layer is unusable: make a new one from a new init({ backend: 'webgpu' })");
}
