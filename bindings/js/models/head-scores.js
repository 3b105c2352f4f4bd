// Head detection scores, as TransformerLens' head_detector.detect_head defines them with its
// defaults (exclude_bos=False, exclude_current_token=False, error_measure="mul"): for one head's
// pattern A [q, k] and a detection pattern P of 0s and 1s, the score is Σ(A ∘ P) / ΣA, the share
// of the head's attention that lands where P says. The token ids are the cache's own.

/** P[q][k] of each kind: whether key k is where such a head looks from query q. */
const DETECTORS = {
  // The token before: k = q − 1.
  previous_token: (ids, q, k) => k === q - 1,
  // An earlier copy of the query's own token.
  duplicate_token: (ids, q, k) => k < q && ids[k] === ids[q],
  // The token after an earlier copy of the query's token (the duplicate pattern shifted one key on).
  induction: (ids, q, k) => k >= 1 && k - 1 < q && ids[k - 1] === ids[q],
};

/** { data, shape: [layers, heads] }: every head's score of `kind` on the cache's run. */
export function headScores(model, cache, kind) {
  const detect = DETECTORS[kind];
  if (!detect) {
    throw new TypeError(`headScores: kind must be one of ${Object.keys(DETECTORS).map((k) => `'${k}'`).join(', ')}, got ${JSON.stringify(kind)}`);
  }
  const { numLayers, numHeads: H } = model.config;
  const ids = cache.ids;
  const L = ids.length;
  const data = new Float32Array(numLayers * H);
  for (let l = 0; l < numLayers; l++) {
    const name = `blocks.${l}.attn.hook_pattern`;
    if (!cache.has(name)) throw new TypeError(`headScores: the cache has no ${name}; run runWithCache(ids) with it (or without names)`);
    const pattern = cache.get(name).data;
    for (let h = 0; h < H; h++) {
      let hit = 0, all = 0;
      for (let q = 0; q < L; q++) {
        for (let k = 0; k < L; k++) {
          const a = pattern[(h * L + q) * L + k];
          all += a;
          if (detect(ids, q, k)) hit += a;
        }
      }
      data[l * H + h] = all > 0 ? hit / all : 0;
    }
  }
  return { data, shape: [numLayers, H] };
}
