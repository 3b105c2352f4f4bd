// The quantized weight formats, stated once (the session contract's definitions; the JS twin in
// tests/js reproduces these bits): how a float32 projection matrix W [out][in] becomes int8, q4
// or f16, and what each stored value means as a float. This is also the canonical *external*
// layout (loadQuantized, ONNX import); the kernels repack it (quantized_panels.hpp).
//
//   int8: per output row o, amax = max_i |W[o,i]|, d = amax / 127, id = d ? 1/d : 0,
//         q = roundf(W[o,i] * id) clamped to [-127, 127]; w = q * d        (ggml q8_0, per row)
//   q4:   blocks of 32 inputs per output row (the last padded with zeros); max = the element of
//         largest |x| (the first on ties, with its sign), d = max / -8, id = d ? 1/d : 0,
//         q = min(15, (int)(x * id + 8.5f)); w = (q - zp) * d, zp = 8 unless imported (ggml q4_0,
//         onnxruntime MatMulNBits)
//   f16:  IEEE binary16, round to nearest even; w = float(h)
// Every product and sum above is one float32 operation (no fused multiply-add: this file is
// compiled with -ffp-contract=off).
#pragma once

#include <cstdint>
#include <vector>

#include "mha/plan/attention_config.hpp"

namespace mha::kernels {

constexpr int64_t kQ4Block = 32;  // q4's inputs per block

inline int64_t q4_blocks(int64_t in_features) { return (in_features + kQ4Block - 1) / kQ4Block; }

// One projection matrix in the canonical layout (row = output feature, column = input feature):
//   int8: data int8 [out][in] (as bytes), scales float [out]
//   q4:   data uint8 [out][blocks][16] (element j of a block in byte j / 2, low nibble for even j),
//         scales float [out][blocks], zero_points uint8 [out][ceil(blocks / 2)] two per byte,
//         low nibble first, or empty (= 8 everywhere)
//   f16:  data uint16 [out][in] (as bytes, little-endian), no scales
struct QuantizedMatrix {
  WeightDtype dtype = WeightDtype::kInt8;
  int64_t out_features = 0, in_features = 0;
  std::vector<uint8_t> data;
  std::vector<float> scales;
  std::vector<uint8_t> zero_points;

  // The sizes the canonical layout has for these dimensions (bytes of data and of zero points
  // when present, floats of scales).
  static int64_t data_bytes(WeightDtype dtype, int64_t out, int64_t in);
  static int64_t scale_count(WeightDtype dtype, int64_t out, int64_t in);
  static int64_t zero_point_bytes(WeightDtype dtype, int64_t out, int64_t in);

  // q4's zero point of block b of row o (8 when absent).
  int zero_point(int64_t o, int64_t b) const;
};

// Binary16 <-> float32 (bindings/js/formats/float16.js's arithmetic: NaN stays NaN, overflow is Inf).
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);

// One output row of the formats: int8 returns d and writes in_features values; q4 writes
// q4_blocks(in) scales and q4_blocks(in) * 32 codes (0..15, unpacked, the padding included).
float quantize_int8_row(const float* w, int64_t in_features, int8_t* q);
void quantize_q4_row(const float* w, int64_t in_features, float* scales, uint8_t* codes);

// W [out][in] float32 -> the canonical layout (dtype int8, q4 or f16).
QuantizedMatrix quantize_matrix(WeightDtype dtype, const float* w, int64_t out_features, int64_t in_features);

// The canonical layout -> float32 W [out][in], by the definitions above.
std::vector<float> dequantize_matrix(const QuantizedMatrix& m);

}  // namespace mha::kernels
