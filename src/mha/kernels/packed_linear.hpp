// The fast nn.Linear: y = x W^T + b with W repacked once into panels the register-blocked
// micro-kernel streams through (see simd.hpp for the tile shape), bias fused into the
// accumulators' start values.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gemm_variants.hpp"
#include "quantized_gemv.hpp"
#include "quantized_panels.hpp"

namespace mha::kernels {

class PackedLinear {
 public:
  PackedLinear() = default;
  // weight [out_features, in_features] (nn.Linear layout); bias [out_features] or null.
  PackedLinear(const float* weight, const float* bias, int64_t out_features, int64_t in_features);

  // Quantized weights (weight_formats.hpp's canonical layout), repacked into QuantizedPanels: a
  // few rows run the quantized GEMV (quantized_gemv.hpp), more the GEMM on panel slices
  // dequantized on the fly into a per-call buffer.
  PackedLinear(const QuantizedMatrix& weight, const float* bias);

  // The same from the weight's transpose, with no bias: weight_t [in_features, out_features]
  // row-major (W[o][i] = weight_t[i * out_features + o]). The backward pass's products
  // (dX = dY W, dW = dY^T X) are this GEMM with a transposed operand, packed per call. Inputs
  // i with zero_inputs[i] set pack as zeros (a row of X whose gradient is zero: it may hold the
  // NaN of a masked key, and 0 * NaN would reach the weight gradient).
  static PackedLinear from_transposed(const float* weight_t, int64_t out_features, int64_t in_features,
                                      const uint8_t* zero_inputs = nullptr);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  WeightDtype dtype() const { return quantized_ ? quantized_->dtype() : WeightDtype::kF32; }
  // Bytes this projection holds: panels (codes, scales, zero points) and bias.
  uint64_t weight_bytes() const;
  // The quantized panels, or null for a float32 projection.
  const QuantizedPanels* quantized() const { return quantized_.get(); }
  // W [out_features, in_features] as float32 (dequantized for a quantized projection).
  std::vector<float> weight() const;
  // Row o of a float32 projection's W (in_features floats), read from its panels.
  void weight_row(int64_t o, float* out) const;
  // Output columns per panel (the build's tile width; QuantizedPanels' P too).
  static int64_t panel_width();

  // y[r] = x[r] W^T + b for rows [row_begin, row_end); x rows are in_features long, y rows
  // out_features long. Disjoint row ranges may run on different threads.
  // The GEMM variant is the process's choice (kernel_choice.hpp: calibrated at first use).
  void apply(const float* x, float* y, int64_t row_begin, int64_t row_end) const;
  // The same with a given variant (gemm_variants.hpp): the tests and benchmarks run each.
  void apply(const float* x, float* y, int64_t row_begin, int64_t row_end, const GemmVariant& variant) const;

  // Rows per task so `threads` threads get a few tasks each and a task keeps its x rows in L2.
  static int64_t rows_per_task(int64_t rows, int threads);

  // Below this many rows a micro-tile would compute rows it throws away: use apply_few_rows.
  static int64_t few_rows();
  // The output columns come in panels of kTileCols; apply_few_rows splits its work by panel.
  int64_t num_panels() const;
  // y[r] = x[r] W^T + b for rows r < rows (rows < few_rows()), output panels [panel_begin,
  // panel_end): disjoint panel ranges may run on different threads (decoding splits by column).
  // A quantized int8 or q4 projection multiplies x quantized to int16 (quantized_gemv.hpp):
  // `xq`, when given, holds x's rows quantized once for the whole call (QuantizedInput::prepare).
  void apply_few_rows(const float* x, float* y, int64_t rows, int64_t panel_begin, int64_t panel_end,
                      const QuantizedInput* xq = nullptr) const;
  // Whether apply_few_rows multiplies a quantized x (int8 and q4 weights).
  bool takes_quantized_input() const;

 private:
  // apply_few_rows without a prepared input: quantizes x (int8, q4) for this call.
  void apply_few_rows_quantizing(const float* x, float* y, int64_t rows, int64_t panel_begin, int64_t panel_end) const;

  int64_t in_ = 0, out_ = 0;
  std::vector<float> panels_;  // [ceil(out / kTileCols)][in][kTileCols], zero padded
  std::vector<float> bias_;    // [ceil(out / kTileCols) * kTileCols], zeros where absent
  std::shared_ptr<const QuantizedPanels> quantized_;  // set for a quantized projection (panels_ empty)
};

}  // namespace mha::kernels
