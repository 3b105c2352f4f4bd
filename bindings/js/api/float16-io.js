// Float16Array inputs and results, where the runtime has Float16Array (Chromium does; Node 20 does
// not): a call's Float16Array tensors are read as float32, computed in float32, and its results
// given back as Float16Array, as a PyTorch call on half tensors returns half tensors. Where the
// runtime lacks Float16Array nothing here changes anything.
const Half = globalThis.Float16Array;

/** Whether `data` is a Float16Array (false wherever the runtime has none). */
export const isHalf = (data) => Half !== undefined && data instanceof Half;

/** A { data, shape } tensor with Float16Array data as a Float32Array copy; any other value as it is. */
export function widenTensor(tensor) {
  return tensor && typeof tensor === 'object' && isHalf(tensor.data) ? { data: Float32Array.from(tensor.data), shape: tensor.shape } : tensor;
}

/** A tensor's float32 data rounded to Float16Array (null and GPU tensors as they are). */
function narrowTensor(tensor) {
  return tensor && tensor.data instanceof Float32Array ? { ...tensor, data: Half.from(tensor.data) } : tensor;
}

/** A forward result ({ output, weights, captured? }) with its float32 tensors as Float16Array. */
export function narrowResult(result) {
  const narrowed = { ...result, output: narrowTensor(result.output), weights: narrowTensor(result.weights) };
  if (result.captured) {
    narrowed.captured = Object.fromEntries(Object.entries(result.captured).map(([name, t]) => [name, narrowTensor(t)]));
  }
  return narrowed;
}
