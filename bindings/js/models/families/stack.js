// Stored tensors stacked by rows, in their own dtype: two [rows, cols] products become one
// (Llama's gate and up projections, [2I, E]).

/** Rows [rows of out, ...] stacked. */
export function stacked(tensors) {
  const { dtype } = tensors[0];
  const cols = tensors[0].shape[1];
  const rows = tensors.reduce((sum, t) => sum + t.shape[0], 0);
  const data = new tensors[0].data.constructor(rows * cols);
  let offset = 0;
  for (const t of tensors) {
    data.set(t.data, offset);
    offset += t.data.length;
  }
  return { dtype, shape: [rows, cols], data };
}
