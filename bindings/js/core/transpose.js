// The one matrix transpose the weight conversions share: PyTorch's nn.Linear stores its weight
// [out, in], Keras' and ONNX's kernels are input-major [in, out] (formats/interop.js, keras/layout.js).

/** The transpose of a row-major [rows, cols] matrix: out[j][i] = in[i][j]. */
export function transpose(data, rows, cols) {
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = data[i * cols + j];
  return out;
}
