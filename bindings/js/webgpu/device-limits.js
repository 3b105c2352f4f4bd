// A call's buffers and dispatches against the device's limits, checked before anything is made:
// a buffer above maxStorageBufferBindingSize or maxBufferSize, or a dispatch of more workgroups
// than maxComputeWorkgroupsPerDimension, becomes a RangeError naming what needs it (WebGPU would
// only say so later, in an error scope, and not in these words).
import { checkBackwardLimits } from './backward.js';
import { workgroups } from './kernel-manifest.js';
import { stepsGroups } from './steps.js';

const count = (shape) => shape.reduce((n, d) => n * d, 1);

/** The checks for a device with `limits`: { checkSize(name, floats), checkGroups(name, [x, y, z]) }. */
export function limitChecks(limits) {
  return {
    checkSize(name, floats) {
      const bytes = floats * 4;
      for (const limit of ['maxStorageBufferBindingSize', 'maxBufferSize']) {
        if (bytes > limits[limit]) {
          throw new RangeError(`${name} needs ${bytes} bytes, above the device's ${limit} of ${limits[limit]}`);
        }
      }
    },
    checkGroups(name, groups) {
      const most = limits.maxComputeWorkgroupsPerDimension;
      if (groups.some((g) => g > most)) {
        throw new RangeError(`${name} needs [${groups.join(', ')}] workgroups, above the device's `
          + `maxComputeWorkgroupsPerDimension of ${most}`);
      }
    },
  };
}

/**
 * A forward call's limits (`checks`: limitChecks'): c the resolved config, call the layer's
 * prepared call, sizes its { B, L, S, newKeys }, kernels its plan (kernel-plan.js).
 */
export function checkCallLimits(checks, c, call, { B, L, S, newKeys }, kernels) {
  const { checkSize, checkGroups } = checks;
  const QD = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, VKV = c.numKvHeads * c.valueHeadDim;
  const AD = c.numHeads * c.valueHeadDim;
  if (kernels.keysPerTile < 1) {
    throw new RangeError(`headDim + valueHeadDim = ${c.headDim + c.valueHeadDim} floats per key do not fit the `
      + 'kernels\' workgroup storage (maxComputeWorkgroupStorageSize 16384 bytes)');
  }
  for (const [name, floats] of [['query', B * L * c.embedDim], ['the projected queries', B * L * QD],
    ['the projected keys', B * newKeys * KV], ['the projected values', B * newKeys * VKV], ['the attended values', B * L * AD],
    ['the keys with the appended ones', call.appended ? B * S * KV : 0], ['the values with the appended ones', call.appended ? B * S * VKV : 0],
    ['the output gate', c.gate ? B * L * AD : 0], ['the output', count(call.outputShape)], ['the weights', call.weightsShape ? count(call.weightsShape) : 0]]) {
    checkSize(name, floats);
  }
  checkGroups('the projections', workgroups('gemm_tiled', [Math.max(QD, KV, VKV, c.outputDim, c.gate ? AD : 0), B * Math.max(L, S)]));
  checkGroups('the attention', workgroups('flash_attention', [L, c.numHeads, B]));
  if (call.grad) checkBackwardLimits(c, { B, L, S }, kernels, checks);
  if (call.weightsShape) checkGroups('the attention weights', workgroups('attention_weights', [S, L, B * c.numHeads]));
  if (call.planned) {  // (the step path keeps [B, H, L, S] scores, logits and pattern, whatever it captures)
    checkSize('the step path\'s scores', B * c.numHeads * L * S);
    for (const { name, shape } of call.planned.captured) checkSize(`the captured ${name}`, count(shape));
    for (const [name, groups] of Object.entries(stepsGroups(c, { B, L, S }))) checkGroups(name, groups);
  }
}
