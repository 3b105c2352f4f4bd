// A piece of work submitted to the GPU, checked: WebGPU reports a rejected command or an
// allocation it could not make not by throwing but in error scopes, later. This file owns those
// scopes, turns what they caught into the backend's errors ("the GPU rejected the call: ...",
// "the GPU is out of memory: ...") and, when a call fails, asks whether the device was lost,
// which is then the error the caller sees. Every submission of the backend goes through it
// (the layer's calls and backward passes, setKeyValue, the GPU-to-GPU weight load, AdamW, the
// probe of a caller's buffer).
import { lostError } from './device.js';

/**
 * The words of a rejection: `call` puts 'call: ' in front of both messages (for a verdict read
 * after the call returned, outside its withCallName); `rejected` and `RejectedError` replace the
 * validation error's words where a likelier cause can be named (a buffer of another device).
 */
const DEFAULT_WORDS = { call: null, rejected: 'the GPU rejected the call', RejectedError: Error };

/** The Error for what the scopes caught (validation error, out-of-memory error), or null. */
function verdictOf([invalid, outOfMemory], words) {
  const { call, rejected, RejectedError } = { ...DEFAULT_WORDS, ...words };
  const prefix = call ? `${call}: ` : '';
  if (invalid) return new RejectedError(`${prefix}${rejected}: ${invalid.message}`);
  if (outOfMemory) return new RangeError(`${prefix}the GPU is out of memory: ${outOfMemory.message}`);
  return null;
}

/** encode() run in an out-of-memory and a validation error scope: { result, failed (its throw), caught (the popped scopes) }. */
function inScopes(device, encode) {
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let result, failed = null;
  try {
    result = encode();
  } catch (error) {
    failed = error;
  }
  // Both popped now, before any other call can push its own.
  return { result, failed, caught: Promise.all([device.popErrorScope(), device.popErrorScope()]) };
}

/**
 * Runs `encode()` (which encodes and submits work on `device` synchronously) in its own error
 * scopes. Returns { result: encode's value, verdict: a promise of the GPU's Error or null }.
 * A throw of encode is rethrown (the scopes popped first).
 */
export function submitChecked(device, encode, words = {}) {
  const { result, failed, caught } = inScopes(device, encode);
  if (failed) throw failed;
  return { result, verdict: caught.then((scopes) => verdictOf(scopes, words)) };
}

/**
 * submitChecked, awaited: throws the GPU's verdict, else a throw of `encode`, else resolves to
 * encode's value (awaited when a promise, e.g. a readback submitted with the work).
 */
export async function runChecked(device, encode, words = {}) {
  const { result, failed, caught } = inScopes(device, encode);
  // (awaited after the verdict: meanwhile its rejection, e.g. a readback's on a device lost, must
  // not count as unhandled)
  result?.catch?.(() => {});
  const verdict = verdictOf(await caught, words);
  if (verdict) throw verdict;
  if (failed) throw failed;
  return await result;
}

/**
 * Runs `work()` (async); if it fails and the device was lost meanwhile, the loss is the error
 * (lostError, named `call`): a lost device fails work in ways that do not say so.
 */
export async function failWithLoss(device, call, work) {
  try {
    return await work();
  } catch (error) {
    // (device.lost resolves soon after the loss; a task's wait lets a loss that failed this work land)
    const lost = await Promise.race([device.lost, new Promise((resolve) => { setTimeout(resolve, 0, null); })]);
    if (lost) throw lostError(call, { reason: lost.reason, message: lost.message });
    throw error;
  }
}
