// The k most likely tokens of a row of logits, as the page lists them ({ token, id, probability }).
// No DOM: the page's worker.

const TOP = 5;

/** The k largest logits of a row as { token, id, probability } (softmax over the whole row). */
export function topTokens(logits, tokenizer, k = TOP) {
  let max = -Infinity;
  for (const v of logits) max = Math.max(max, v);
  let total = 0;
  for (const v of logits) total += Math.exp(v - max);
  const best = [];
  logits.forEach((v, id) => {
    if (best.length < k || v > best[best.length - 1].v) {
      best.push({ id, v });
      best.sort((a, b) => b.v - a.v);
      if (best.length > k) best.pop();
    }
  });
  return best.map(({ id, v }) => ({ token: tokenizer.decodeOne(id), id, probability: Math.exp(v - max) / total }));
}
