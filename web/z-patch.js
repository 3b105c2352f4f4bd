// The Steps view's one kind of change to a layer: a patch of z (docs/steps.md) that puts zeros in
// the ablated heads' z and another input's z in the patched heads'. Shared by the default model,
// the Sentiment classifier and "Your layer" (web/modes/*-worker.js, web/custom-layer.js). No DOM.

/**
 * One layer's z patch: zeros for the heads in `ablated`, the heads in `patched` from `other`
 * ([L, H, Dv] flattened, or null), as forward's patch ({ z, heads }); null for none.
 * `batch`: the shape gets a leading batch of one (the Keras layer's [1, T, H, Dv]).
 */
export function zPatch(ablated, patched, other, L, H, Dv, batch = false) {
  const heads = [...new Set([...ablated, ...patched])];
  if (heads.length === 0) return null;
  const z = new Float32Array(L * H * Dv);
  for (const h of patched) {
    for (let i = 0; i < L; i++) z.set(other.subarray((i * H + h) * Dv, (i * H + h + 1) * Dv), (i * H + h) * Dv);
  }
  return { z: { data: z, shape: batch ? [1, L, H, Dv] : [L, H, Dv] }, heads };
}
