// A quantized projection repacked for the kernels (quantized_gemv.hpp for a few rows, the GEMM's
// dequantize-a-slice path in packed_linear.cpp for many). The canonical layout
// (weight_formats.hpp) is row-major W[o][i]; the kernels want what the float GEMM has: output
// columns in panels of P = kTileCols (2 vectors of W = kWidth lanes), the weights of a panel
// contiguous in depth order, so one panel streams from memory and each load fills whole vectors.
//
// Within a panel the codes are ordered for the integer dot product of every SIMD set we build
// for (wasm i32x4.dot_i16x8_s, SSE/AVX2/AVX-512 pmaddwd): it multiplies adjacent i16 lanes and
// adds each pair into one i32 lane, so lanes 2c, 2c+1 hold column c at two consecutive depths,
// and a broadcast pair (x[k], x[k+1]) of the quantized activation row multiplies them.
//   int8: per depth pair u (depths 2u, 2u+1), 2P bytes: byte 2c + t = column c, depth 2u + t.
//         A load-and-sign-extend of 2W bytes (wasm load8x8_s, pmovsxbw) gives the i16 lanes of
//         columns 0..W-1; the next 2W bytes columns W..2W-1. Depth padded to even with zeros.
//   q4:   per block of 32 depths, 8 groups of 4 depths; a group is 2P bytes (P = 8 in wasm: one
//         v128). Read as i16 lanes l = 0..2W-1, lane l's four nibbles (bits 0-3, 4-7, 8-11,
//         12-15) are: columns c = l/2 (nibbles 0, 1) and W + l/2 (nibbles 2, 3), depths
//         4g + l%2 (nibbles 0, 2) and 4g + 2 + l%2 (nibbles 1, 3). So a mask or a 16-bit shift
//         and a mask extracts four i16 vectors, each ready for the pair dot, without widening
//         bytes. Codes stay raw (0..15): the zero point is subtracted after the block's integer
//         sum, as zp * (sum of the block's activations).
//   f16:  [depth][P] half floats, as the float panels ([depth][P] floats).
// Scales: int8 [panels][P] (one per column), q4 [panels][blocks][P]; zero points (imported q4
// only) [panels][blocks][P] int32, absent = 8. Padding columns have zero codes and scales.
#pragma once

#include <cstdint>
#include <vector>

#include "weight_formats.hpp"

namespace mha::kernels {

class QuantizedPanels {
 public:
  QuantizedPanels() = default;
  explicit QuantizedPanels(const QuantizedMatrix& m);

  WeightDtype dtype() const { return dtype_; }
  int64_t out_features() const { return out_; }
  int64_t in_features() const { return in_; }
  int64_t num_panels() const { return panels_; }
  int64_t blocks() const { return blocks_; }  // q4: blocks of 32 depths per panel
  bool has_zero_points() const { return !zero_points_.empty(); }
  bool has_nonfinite() const { return nonfinite_; }  // f16: a weight is Inf or NaN

  // Bytes held: codes, scales and zero points.
  uint64_t bytes() const;

  // The panel's weights as floats for depths [k0, k0 + depth): out[k][c] = W[p*P + c][k0 + k]
  // (zeros in padding columns), the float GEMM's panel layout. k0 a multiple of 32 for q4.
  void dequantize_slice(int64_t panel, int64_t k0, int64_t depth, float* out) const;
  // Its portable twin (element by element; the fast one must give the same bits).
  void dequantize_slice_reference(int64_t panel, int64_t k0, int64_t depth, float* out) const;

  // W [out][in] as floats (stateDict, backward): the same values as dequantize_matrix.
  std::vector<float> dequantized() const;
  // The canonical layout back (weight_formats.hpp), byte for byte what the panels were made from
  // (q4 zero points only when the panels hold them): the WebGPU backend uploads it as is.
  QuantizedMatrix canonical() const;

  // Raw storage for the kernels.
  const uint8_t* codes(int64_t panel) const { return codes_.data() + panel * panel_bytes_; }
  const float* scales(int64_t panel) const { return scales_.data() + panel * panel_scales_; }
  const int32_t* zero_points(int64_t panel) const { return zero_points_.data() + panel * panel_scales_; }

 private:
  WeightDtype dtype_ = WeightDtype::kInt8;
  int64_t out_ = 0, in_ = 0, panels_ = 0, blocks_ = 0;
  int64_t panel_bytes_ = 0, panel_scales_ = 0;
  std::vector<uint8_t> codes_;
  std::vector<float> scales_;
  std::vector<int32_t> zero_points_;
  bool nonfinite_ = false;
};

}  // namespace mha::kernels
