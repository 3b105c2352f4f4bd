// The quantized formats (src/mha/kernels/weight_formats.hpp) against their definitions: hand-worked
// values, a literal second reading of each definition (bit for bit), input sizes that are not a
// multiple of the q4 block, and the kernels' internal panels giving back the same floats.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "mha/kernels/quantized_panels.hpp"
#include "mha/kernels/weight_formats.hpp"
#include "random_vector.hpp"

namespace {

using mha::WeightDtype;
using mha::kernels::QuantizedMatrix;
using mha::kernels::QuantizedPanels;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Random weights with a few exact ties and zeros, so every branch of the definitions runs.
std::vector<float> weights(int64_t out, int64_t in, unsigned seed) {
  std::vector<float> w = random_vector(static_cast<size_t>(out * in), seed);
  for (float& x : w) x *= 0.3f;
  if (out > 2 && in > 3) {
    for (int64_t i = 0; i < in; ++i) w[in + i] = 0.0f;  // an all-zero row: d = 0
    w[2 * in] = 0.25f, w[2 * in + 1] = -0.25f;          // a tie of |max| (the first wins)
  }
  return w;
}

TEST(QuantFormats, Int8HandWorkedRow) {
  const float w[5] = {0.5f, -1.27f, 0.0049f, 1.0f, 0.635f};
  int8_t q[5];
  const float d = mha::kernels::quantize_int8_row(w, 5, q);
  EXPECT_EQ(bits(d), bits(1.27f / 127.0f));
  EXPECT_EQ(q[0], 50);
  EXPECT_EQ(q[1], -127);
  EXPECT_EQ(q[2], 0);
  EXPECT_EQ(q[3], 100);
  EXPECT_EQ(q[4], static_cast<int8_t>(std::roundf(0.635f * (1.0f / d))));
}

TEST(QuantFormats, Q4HandWorkedBlock) {
  // max = 2 (the first of |2| = |-2|), d = 2 / -8 = -0.25, id = -4.
  std::vector<float> w(32, 0.0f);
  w[0] = 2.0f, w[1] = -2.0f, w[2] = 1.0f, w[3] = 0.1f;
  float d;
  std::vector<uint8_t> q(32);
  mha::kernels::quantize_q4_row(w.data(), 32, &d, q.data());
  EXPECT_EQ(d, -0.25f);
  EXPECT_EQ(q[0], 0);   // 2 * -4 + 8.5 = 0.5 -> 0
  EXPECT_EQ(q[1], 15);  // -2 * -4 + 8.5 = 16.5 -> 16 -> min 15
  EXPECT_EQ(q[2], 4);   // -4 + 8.5 = 4.5 -> 4
  EXPECT_EQ(q[3], 8);   // -0.4 + 8.5 = 8.1 -> 8
  EXPECT_EQ(q[31], 8);  // zero
}

TEST(QuantFormats, HalfRoundsToNearestEven) {
  using mha::kernels::float_to_half;
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);            // rounds up to Inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // a tie: to even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // a tie: to even (2)
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_half(NAN) & 0x7e00, 0x7e00);
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every half survives the round trip
    const float f = mha::kernels::half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << h;
  }
}

// The definitions read literally, one element at a time (volatile: each product and sum rounded
// to float32 on its own, as the contract states).
float int8_value(const float* row, int64_t in, int64_t i) {
  float amax = 0.0f;
  for (int64_t j = 0; j < in; ++j) amax = std::fabs(row[j]) > amax ? std::fabs(row[j]) : amax;
  volatile float d = amax / 127.0f;
  volatile float id = d != 0.0f ? 1.0f / d : 0.0f;
  volatile float product = row[i] * id;
  float q = std::roundf(product);
  q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
  volatile float value = static_cast<float>(static_cast<int>(q)) * d;  // q is an integer: -0 is 0
  return value;
}

float q4_value(const float* row, int64_t in, int64_t i) {
  const int64_t first = i / 32 * 32;
  float amax = 0.0f, max = 0.0f;
  for (int64_t j = first; j < std::min(in, first + 32); ++j)
    if (amax < std::fabs(row[j])) amax = std::fabs(row[j]), max = row[j];
  volatile float d = max / -8.0f;
  volatile float id = d != 0.0f ? 1.0f / d : 0.0f;
  volatile float product = row[i] * id;
  volatile float t = product + 8.5f;
  const int q = std::min(15, static_cast<int>(t));
  volatile float value = static_cast<float>(q - 8) * d;
  return value;
}

class QuantFormatsShapes : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(QuantFormatsShapes, DequantizedEqualsTheDefinition) {
  const auto [out, in] = GetParam();
  const std::vector<float> w = weights(out, in, 3);
  for (WeightDtype dtype : {WeightDtype::kInt8, WeightDtype::kQ4, WeightDtype::kF16}) {
    const QuantizedMatrix m = mha::kernels::quantize_matrix(dtype, w.data(), out, in);
    ASSERT_EQ(static_cast<int64_t>(m.data.size()), QuantizedMatrix::data_bytes(dtype, out, in));
    ASSERT_EQ(static_cast<int64_t>(m.scales.size()), QuantizedMatrix::scale_count(dtype, out, in));
    const std::vector<float> back = mha::kernels::dequantize_matrix(m);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        const float* row = w.data() + o * in;
        const float want = dtype == WeightDtype::kInt8 ? int8_value(row, in, i)
                           : dtype == WeightDtype::kQ4 ? q4_value(row, in, i)
                                                       : mha::kernels::half_to_float(mha::kernels::float_to_half(row[i]));
        ASSERT_EQ(bits(back[o * in + i]), bits(want)) << mha::weight_dtype_name(dtype) << " [" << o << ", " << i << "]";
      }
    }
    // The kernels' panels hold the same values, and the same as float slices.
    const QuantizedPanels panels(m);
    const std::vector<float> from_panels = panels.dequantized();
    for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(bits(from_panels[i]), bits(back[i])) << i;
    // The canonical layout back from the panels (what the WebGPU backend uploads): byte for byte.
    const QuantizedMatrix again = panels.canonical();
    EXPECT_EQ(again.dtype, m.dtype);
    EXPECT_EQ(again.data, m.data);
    EXPECT_EQ(again.scales, m.scales);
    EXPECT_EQ(again.zero_points, m.zero_points);
    // Slices as the GEMM takes them (from a block start, any depth): the vectorized
    // dequantization against its element-by-element twin.
    for (int64_t k0 = 0; k0 < in; k0 += 32) {
      for (int64_t depth : {in - k0, std::min<int64_t>(in - k0, 32), std::min<int64_t>(in - k0, 7)}) {
        for (int64_t p = 0; p < panels.num_panels(); ++p) {
          std::vector<float> fast(static_cast<size_t>(depth * 64), 0.0f), twin(static_cast<size_t>(depth * 64), 0.0f);
          panels.dequantize_slice(p, k0, depth, fast.data());
          panels.dequantize_slice_reference(p, k0, depth, twin.data());
          for (size_t i = 0; i < fast.size(); ++i) ASSERT_EQ(bits(fast[i]), bits(twin[i])) << k0 << " " << depth << " " << i;
        }
      }
    }
  }
}

// 45 and 77 inputs: the last q4 block padded; 13 outputs: a partial panel.
INSTANTIATE_TEST_SUITE_P(Sizes, QuantFormatsShapes,
                         ::testing::Values(std::make_pair<int64_t, int64_t>(13, 45), std::make_pair<int64_t, int64_t>(3, 77),
                                           std::make_pair<int64_t, int64_t>(40, 64), std::make_pair<int64_t, int64_t>(1, 5),
                                           std::make_pair<int64_t, int64_t>(33, 600)));

TEST(QuantFormats, Q4PaddingQuantizesAsZero) {
  const std::vector<float> w = weights(2, 40, 9);
  const QuantizedMatrix m = mha::kernels::quantize_matrix(WeightDtype::kQ4, w.data(), 2, 40);
  // Row 0, block 1 holds inputs 32..39 and then padding: codes 8 (= 0 after the zero point).
  for (int j = 8; j < 32; ++j) {
    const uint8_t byte = m.data[16 + j / 2];
    EXPECT_EQ(j % 2 == 0 ? byte & 0x0f : byte >> 4, 8) << j;
  }
}

TEST(QuantFormats, ImportedZeroPoints) {
  // MatMulNBits' zero points: two per byte, low nibble first; w = (q - zp) * d.
  QuantizedMatrix m;
  m.dtype = WeightDtype::kQ4;
  m.out_features = 2;
  m.in_features = 70;  // 3 blocks: zero points 2 bytes per row
  m.data.assign(static_cast<size_t>(QuantizedMatrix::data_bytes(m.dtype, 2, 70)), 0);
  m.scales = {1.0f, 0.5f, 2.0f, 1.0f, 1.0f, 1.0f};
  m.zero_points = {0x31, 0x05, 0x00, 0x0f};  // row 0: 1, 3, 5; row 1: 0, 0, 15
  for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = static_cast<uint8_t>(i * 37);
  const std::vector<float> w = mha::kernels::dequantize_matrix(m);
  const auto code = [&](int64_t o, int64_t i) {
    const uint8_t byte = m.data[(o * 3 + i / 32) * 16 + i % 32 / 2];
    return i % 2 == 0 ? byte & 0x0f : byte >> 4;
  };
  EXPECT_EQ(w[0], static_cast<float>(code(0, 0) - 1) * 1.0f);
  EXPECT_EQ(w[40], static_cast<float>(code(0, 40) - 3) * 0.5f);
  EXPECT_EQ(w[69], static_cast<float>(code(0, 69) - 5) * 2.0f);
  EXPECT_EQ(w[70 + 69], static_cast<float>(code(1, 69) - 15) * 1.0f);
  const std::vector<float> from_panels = QuantizedPanels(m).dequantized();
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(bits(from_panels[i]), bits(w[i])) << i;
  const QuantizedMatrix again = QuantizedPanels(m).canonical();  // (the zero points too)
  EXPECT_EQ(again.data, m.data);
  EXPECT_EQ(again.scales, m.scales);
  EXPECT_EQ(again.zero_points, m.zero_points);
}

}  // namespace
