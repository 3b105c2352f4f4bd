// What each head does, measured on held-out data as tools/train_demo_model.py's head_scores does:
// the mean attention weight on the position each pattern predicts.
//   previousToken  on position i-1 (generated text)
//   bos            on <bos> (generated text; a resting head)
//   bracket        from the token just before a closing bracket, on the open bracket it closes
//   induction      in the second copy of a repeated random-letter block, on the token after the
//                  current token's earlier occurrence
// Weights are per layer [B, H, L, L] (mha-wasm's forward with needWeights, averageWeights false).

function meanOver(weights, B, H, L, pick) {
  const scores = new Float64Array(H);
  let count = 0;
  for (let b = 0; b < B; b++) {
    pick(b, (query, key) => {
      for (let h = 0; h < H; h++) scores[h] += weights[((b * H + h) * L + query) * L + key];
      count += 1;
    });
  }
  return Array.from(scores, (s) => (count ? s / count : 0));
}

/** Per head of one layer: previous-token, bos and bracket scores on generated text [B, H, L, L]. */
export function textScores(weights, B, H, L, pairs) {
  const previousToken = meanOver(weights, B, H, L, (b, add) => { for (let i = 1; i < L; i++) add(i, i - 1); });
  const bos = meanOver(weights, B, H, L, (b, add) => { for (let i = 1; i < L; i++) add(i, 0); });
  const bySequence = Array.from({ length: B }, () => []);
  for (const [b, query, opener] of pairs) bySequence[b].push([query, opener]);
  const bracket = meanOver(weights, B, H, L, (b, add) => { for (const [query, opener] of bySequence[b]) add(query, opener); });
  return { previousToken, bos, bracket };
}

/** Per head of one layer: the induction score on <bos> + block + block ([B, H, L, L], L = 2 * period + 1). */
export function inductionScores(weights, B, H, L) {
  const period = (L - 1) / 2;
  return meanOver(weights, B, H, L, (b, add) => {
    for (let query = period + 1; query <= 2 * period; query++) add(query, query - period + 1);
  });
}

// A head's role from its scores, with tools/train_demo_model.py's thresholds (a score is "high"
// when it clearly beats what spreading attention would give; bos: almost all).
const ROLES = [
  ['induction', 0.25, 'induction: attends to the token after an earlier occurrence of the current token (copies what came next)'],
  ['bracket', 0.25, 'bracket matching: before a closing bracket, attends to the open bracket it closes'],
  ['previousToken', 0.35, 'previous token: attends to the token just before'],
  ['bos', 0.6, 'resting: attends mostly to <bos> (a no-op)'],
];
const ROLE_NAMES = { induction: 'induction', bracket: 'bracket', previousToken: 'previous_token', bos: 'bos' };

/** heads.json-style descriptions ({ layer, head, role, description, scores }) of measured head scores. */
export function describeHeads(headScores) {
  return headScores.map(({ layer, head, ...scores }) => {
    const [name, threshold, description] = ROLES.reduce((best, role) => (scores[role[0]] / role[1] > scores[best[0]] / best[1] ? role : best));
    const high = scores[name] >= threshold;
    return {
      layer, head,
      role: high ? ROLE_NAMES[name] : 'mixed',
      description: high ? description : 'mixed: no single pattern stands out',
      scores: Object.fromEntries(Object.entries(scores).map(([k, v]) => [ROLE_NAMES[k], v])),
    };
  });
}
