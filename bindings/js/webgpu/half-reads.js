// How a kernel reads float16 data (an f16 KV cache's keys and values, f16 weights): the one place
// that decides which variant a device gets. With 'shader-f16' the buffer is an array<f16> read
// directly (`enable f16;`); without it, an array<u32> of packed halves read with
// unpack2x16float. Either way each half becomes its exact float32 value (subnormals kept on the
// adapters tested, docs/webgpu.md) and the math stays float32. Float32 data is read as it is.
// The kernels take these as template values: {{ENABLE_F16}} on their first line, the array's
// element type, and the read of element e of a buffer.

/** True when kernels on `device` read halves as f16 (the device has 'shader-f16'). */
export const readsF16 = (device) => device.features.has('shader-f16');

/** The WGSL expression reading element `e` (a u32 expression) of `buffer`, holding `dtype` ('f32' or 'f16') data, as an f32. */
function readElement(f16Type, dtype, buffer, e) {
  if (dtype === 'f32') return `${buffer}[${e}]`;
  return f16Type ? `f32(${buffer}[${e}])` : `unpack2x16float(${buffer}[(${e}) >> 1u])[(${e}) & 1u]`;
}

/**
 * Template values for a kernel whose buffers `names` (e.g. { K: 'k', V: 'v' }) hold `dtype` data:
 * ENABLE_F16, and per name X: X_T (the array's element type) and X_AT (a read of element `e`).
 */
export function halfReadValues(device, dtype, names) {
  const f16Type = dtype === 'f16' && readsF16(device);
  const values = { ENABLE_F16: f16Type ? 'enable f16;' : '' };
  for (const [name, buffer] of Object.entries(names)) {
    values[`${name}_T`] = dtype === 'f32' ? 'f32' : f16Type ? 'f16' : 'u32';
    values[`${name}_AT`] = readElement(f16Type, dtype, buffer, 'e');
  }
  return values;
}
