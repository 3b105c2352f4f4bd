// forward's step options: `capture` (record the attention's intermediates) and `patch` (replace
// one step's values for some heads). Only their JavaScript types are checked here; the step
// names, shapes and heads are the core's to check (src/mha/steps/attention_steps.cpp, check_steps).
import { checkPlainObject, checkTensor, describe } from './validate.js';

/** capture: true | false | an array of step names. Returns what the core takes (or undefined). */
export function checkCapture(capture) {
  if (capture === undefined || capture === false) return undefined;
  if (capture === true) return true;
  if (!Array.isArray(capture) || !capture.every((name) => typeof name === 'string')) {
    throw new TypeError(`capture must be true or an array of step names (q, k, v, scores, logits, pattern, z, gate, result), got ${describe(capture)}`);
  }
  return capture;
}

/**
 * patch: { <step>: { data, shape }, heads?: [h, ...] }. Returns { steps, tensor, heads } with the
 * step names as given (the core wants exactly one), or null when absent.
 */
export function checkPatch(patch) {
  if (patch === undefined || patch === null) return null;
  checkPlainObject('patch', patch);
  const steps = Object.keys(patch).filter((key) => key !== 'heads');
  if (steps.length === 0) {
    throw new TypeError('patch: give one step to patch (q, k, v, pattern, z or gate) as { <step>: { data, shape }, heads? }');
  }
  const { heads } = patch;
  if (heads !== undefined && heads !== null) {
    if (!Array.isArray(heads) || !heads.every((h) => Number.isSafeInteger(h))) {
      throw new TypeError(`patch.heads must be an array of head indices (integers), got ${describe(heads)}`);
    }
  }
  const tensor = checkTensor(`patch.${steps[0]}`, patch[steps[0]], { expected: 'the captured shape of the step' });
  return { steps, tensor, heads: heads ?? null };
}

/** The patch as the core takes it: its tensor copied into `scope` (or shapes only, for planning). */
export function patchForCore(patch, toCore) {
  return patch && { steps: patch.steps, tensor: toCore(patch.tensor), heads: patch.heads };
}
