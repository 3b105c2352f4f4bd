// Keras' attention_axes on plain row-major arrays: a [B, d1, ..., dn, F] input attends over some of
// d1..dn; the other axes act as more batch. The input is permuted to [B, others..., attended..., F]
// and read as [B * others, attended, F]; the output is permuted back.

/** { attended, batch, order, inverse } for an input of `rank` (attended axes between 1 and rank - 2). */
export function attentionLayout(rank, attentionAxes, caller) {
  const inner = Array.from({ length: rank - 2 }, (_, i) => i + 1);
  // A negative axis counts from the end, as Keras counts it (-1: the features; -2: the last inner axis).
  const attended = attentionAxes?.map((a) => (a < 0 ? rank + a : a)) ?? inner;
  for (const a of attended) {
    if (!inner.includes(a)) {
      throw new RangeError(`${caller}: attentionAxes ${JSON.stringify(attentionAxes)} must name axes between 1 and ${rank - 2} (not the batch or features) of a rank-${rank} input`);
    }
  }
  const batch = [0, ...inner.filter((a) => !attended.includes(a))];
  const order = [...batch, ...attended, rank - 1];
  return { attended, batch, order, inverse: order.map((_, i) => order.indexOf(i)) };
}

/** data of `shape` with its axes reordered: out axis i is input axis order[i]. */
export function permute(data, shape, order) {
  const rank = shape.length, outShape = order.map((a) => shape[a]);
  const strides = new Array(rank);
  for (let i = rank - 1, s = 1; i >= 0; s *= shape[i], i--) strides[i] = s;
  const out = new data.constructor(data.length), index = new Array(rank).fill(0);
  const inStride = order.map((a) => strides[a]);
  for (let o = 0, from = 0; o < data.length; o++) {
    out[o] = data[from];
    for (let i = rank - 1; i >= 0; i--) {  // odometer over the output's index
      index[i]++;
      from += inStride[i];
      if (index[i] < outShape[i]) break;
      from -= inStride[i] * outShape[i];
      index[i] = 0;
    }
  }
  return { data: out, shape: outShape };
}

/** A [B, ..., F] tensor as [B * others, prod(attended), F] for the layout. */
export function foldForAttention(tensor, { batch, attended, order }) {
  const { data, shape } = permute(tensor.data, tensor.shape, order);
  const size = (axes) => axes.reduce((n, a) => n * tensor.shape[a], 1);
  return { data, shape: [size(batch), size(attended), shape[shape.length - 1]] };
}
