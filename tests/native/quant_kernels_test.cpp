// The quantized kernels against their twins: the decode GEMV (quantized_gemv) against
// quantized_gemv_reference and against the float product with the dequantized weights; the
// GEMM's dequantize-a-slice path (PackedLinear::apply) against linear_reference. Sizes that are
// not a multiple of 32 inputs or of a panel's columns, zero points, Inf/NaN activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "mha/kernels/linear.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/kernels/quantized_gemv.hpp"
#include "mha/kernels/weight_formats.hpp"
#include "random_vector.hpp"

namespace {

using mha::WeightDtype;
using mha::kernels::PackedLinear;
using mha::kernels::QuantizedMatrix;
using mha::kernels::QuantizedPanels;

struct Case {
  WeightDtype dtype;
  int64_t out, in;
  bool zero_points = false;
};

QuantizedMatrix matrix(const Case& c, unsigned seed) {
  std::vector<float> w = random_vector(static_cast<size_t>(c.out * c.in), seed);
  QuantizedMatrix m = mha::kernels::quantize_matrix(c.dtype, w.data(), c.out, c.in);
  if (c.zero_points) {
    m.zero_points.resize(static_cast<size_t>(QuantizedMatrix::zero_point_bytes(c.dtype, c.out, c.in)));
    for (size_t i = 0; i < m.zero_points.size(); ++i) m.zero_points[i] = static_cast<uint8_t>(i * 53 + 7);
  }
  return m;
}

// y = x W^T + b in double with the dequantized weights.
std::vector<double> exact(const std::vector<float>& w, const float* bias, const float* x, int64_t rows, int64_t out,
                          int64_t in) {
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias ? bias[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += static_cast<double>(w[o * in + i]) * x[r * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

double scale_of(const std::vector<double>& y) {
  double s = 0;
  for (double v : y) s = std::max(s, std::abs(v));
  return s;
}

class QuantKernels : public ::testing::TestWithParam<Case> {};

TEST_P(QuantKernels, GemvMatchesItsTwinAndTheDequantizedProduct) {
  const Case c = GetParam();
  const QuantizedMatrix m = matrix(c, 11);
  const QuantizedPanels panels(m);
  const std::vector<float> w = mha::kernels::dequantize_matrix(m);
  const std::vector<float> x = random_vector(static_cast<size_t>(c.in), 12);
  std::vector<float> bias = random_vector(static_cast<size_t>(panels.num_panels() * 64), 13);
  mha::kernels::QuantizedRow row;
  mha::kernels::quantize_activation_row(x.data(), c.in, row);
  std::vector<float> fast(static_cast<size_t>(c.out)), twin(static_cast<size_t>(c.out));
  mha::kernels::quantized_gemv(panels, x.data(), row, bias.data(), fast.data(), 0, panels.num_panels());
  mha::kernels::quantized_gemv_reference(panels, x.data(), row, bias.data(), twin.data(), 0, panels.num_panels());
  const std::vector<double> want = exact(w, bias.data(), x.data(), 1, c.out, c.in);
  const double scale = scale_of(want);
  for (int64_t o = 0; o < c.out; ++o) {
    // The twin: the same integer sums and float steps (natively a fused multiply-add may round once).
    ASSERT_NEAR(fast[o], twin[o], 1e-6 * scale) << o;
    // The int16 activations: within 1e-4 of the output's scale of the dequantized product.
    ASSERT_NEAR(fast[o], want[o], 1e-4 * scale) << o;
  }
  // A panel range writes those columns only (threads split decoding by panels).
  if (panels.num_panels() > 1) {
    std::vector<float> part(static_cast<size_t>(c.out), -7.0f);
    mha::kernels::quantized_gemv(panels, x.data(), row, bias.data(), part.data(), 1, panels.num_panels());
    EXPECT_EQ(part[0], -7.0f);
    EXPECT_EQ(part[c.out - 1], fast[c.out - 1]);
  }
}

TEST_P(QuantKernels, GemmOnDequantizedSlices) {
  const Case c = GetParam();
  const QuantizedMatrix m = matrix(c, 21);
  const std::vector<float> w = mha::kernels::dequantize_matrix(m);
  const std::vector<float> bias = random_vector(static_cast<size_t>(c.out), 22);
  const PackedLinear packed(m, bias.data());
  for (int64_t rows : {int64_t{1}, int64_t{3}, int64_t{37}}) {
    const std::vector<float> x = random_vector(static_cast<size_t>(rows * c.in), 23);
    std::vector<float> y(static_cast<size_t>(rows * c.out));
    if (rows < PackedLinear::few_rows()) packed.apply_few_rows(x.data(), y.data(), rows, 0, packed.num_panels());
    else packed.apply(x.data(), y.data(), 0, rows);
    const std::vector<double> want = exact(w, bias.data(), x.data(), rows, c.out, c.in);
    const double scale = scale_of(want);
    const double tolerance = rows < PackedLinear::few_rows() && c.dtype != WeightDtype::kF16 ? 1e-4 : 1e-5;
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], tolerance * scale) << rows << " rows, " << i;
  }
  // The float32 weights it gives back are the dequantized ones.
  const std::vector<float> back = packed.weight();
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(back[i], w[i]) << i;
}

TEST_P(QuantKernels, NonFiniteActivationsPropagate) {
  const Case c = GetParam();
  const PackedLinear packed(matrix(c, 31), nullptr);
  std::vector<float> x = random_vector(static_cast<size_t>(c.in), 32);
  x[c.in / 2] = NAN;
  std::vector<float> y(static_cast<size_t>(c.out));
  packed.apply_few_rows(x.data(), y.data(), 1, 0, packed.num_panels());
  for (float v : y) ASSERT_TRUE(std::isnan(v));
}

// A call's rows quantized once for every projection and task (QuantizedInput) give what each
// projection quantizing its own rows gives, bit for bit.
TEST_P(QuantKernels, SharedQuantizedInputGivesTheSameBits) {
  const Case c = GetParam();
  const PackedLinear packed(matrix(c, 41), nullptr);
  const std::vector<float> x = random_vector(static_cast<size_t>(3 * c.in), 42);
  std::vector<float> own(static_cast<size_t>(3 * c.out)), shared(own.size());
  packed.apply_few_rows(x.data(), own.data(), 3, 0, packed.num_panels());
  mha::kernels::QuantizedInput xq;
  if (packed.takes_quantized_input()) xq.prepare(x.data(), 3, c.in);
  const int64_t half = packed.num_panels() / 2;  // as two threads' shares
  packed.apply_few_rows(x.data(), shared.data(), 3, 0, half, &xq);
  packed.apply_few_rows(x.data(), shared.data(), 3, half, packed.num_panels(), &xq);
  for (size_t i = 0; i < own.size(); ++i) ASSERT_EQ(own[i], shared[i]) << i;
  EXPECT_EQ(packed.takes_quantized_input(), c.dtype != WeightDtype::kF16);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QuantKernels,
    ::testing::Values(Case{WeightDtype::kInt8, 64, 128}, Case{WeightDtype::kInt8, 13, 45}, Case{WeightDtype::kInt8, 70, 777},
                      Case{WeightDtype::kInt8, 40, 1030}, Case{WeightDtype::kQ4, 64, 128}, Case{WeightDtype::kQ4, 13, 45},
                      Case{WeightDtype::kQ4, 70, 777}, Case{WeightDtype::kQ4, 33, 100, true},
                      Case{WeightDtype::kQ4, 96, 2048, true}, Case{WeightDtype::kF16, 64, 128},
                      Case{WeightDtype::kF16, 13, 45}, Case{WeightDtype::kF16, 70, 777}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(mha::weight_dtype_name(info.param.dtype)) + "_" + std::to_string(info.param.out) + "x" +
             std::to_string(info.param.in) + (info.param.zero_points ? "_zp" : "");
    });

}  // namespace

// The activation row's rounding is C's roundf (half away from zero) without the library call:
// every tie k + 0.5 in the int16 range, and values a few ulps either side of each, then a sweep.
TEST(RoundHalfAway, IsRoundf) {
  for (int k = -32768; k <= 32767; ++k) {
    float v = static_cast<float>(k) + 0.5f;
    for (int s = 0; s < 3; ++s) v = std::nextafter(v, -INFINITY);
    for (int s = 0; s < 7; ++s, v = std::nextafter(v, INFINITY))
      ASSERT_EQ(mha::kernels::round_half_away(v), std::roundf(v)) << v;
  }
  for (float v = -70000.0f; v < 70000.0f; v += 0.1234567f) ASSERT_EQ(mha::kernels::round_half_away(v), std::roundf(v)) << v;
  for (float v : {0.0f, -0.0f, 0.49999997f, -0.49999997f, 8388607.5f, -8388607.5f, 16777216.0f, 1e30f, -1e30f})
    ASSERT_EQ(mha::kernels::round_half_away(v), std::roundf(v)) << v;
  // (-0.25 gives +0 where roundf gives -0: equal as floats, and the same int16.)
}

// The activation row is the arithmetic quantized_gemv.hpp states: q = roundf(x * (1 / dx)),
// dx = max |x| / 32767, block sums of q; rows with exact ties (x * inverse = k + 0.5) included.
TEST(QuantizeActivationRow, IsTheStatedArithmetic) {
  for (unsigned seed = 0; seed < 20; ++seed) {
    std::vector<float> x = random_vector(77 + seed, 60 + seed);
    x[seed % x.size()] = seed % 2 ? 1.0f : -1.0f;  // amax 1: inverse 32767, so x = (k + 0.5) / 32767 ties
    for (size_t i = 0; i + 1 < x.size(); i += 5) x[i] = (static_cast<float>(i) - 40.5f) / 32767.0f;
    mha::kernels::QuantizedRow row;
    mha::kernels::quantize_activation_row(x.data(), static_cast<int64_t>(x.size()), row);
    float amax = 0;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    ASSERT_EQ(row.scale, amax / 32767.0f);
    const float inverse = 1.0f / row.scale;
    std::vector<int32_t> sums(row.sums.size(), 0);
    for (size_t i = 0; i < x.size(); ++i) {
      const int16_t want = static_cast<int16_t>(std::clamp(std::roundf(x[i] * inverse), -32767.0f, 32767.0f));
      ASSERT_EQ(row.q[i], want) << seed << " " << i;
      sums[i / 32] += want;
    }
    for (size_t i = x.size(); i < row.q.size(); ++i) ASSERT_EQ(row.q[i], 0);
    ASSERT_EQ(row.sums, sums);
  }
}

// prepare() keeps rows it holds (same source, count and length) and quantizes new ones.
TEST(QuantizedInput, PrepareQuantizesOncePerSource) {
  const std::vector<float> a = random_vector(100, 51), b = random_vector(100, 52);
  mha::kernels::QuantizedInput xq;
  xq.prepare(a.data(), 1, 100);
  mha::kernels::QuantizedRow want;
  mha::kernels::quantize_activation_row(a.data(), 100, want);
  EXPECT_EQ(xq.row[0].q, want.q);
  EXPECT_EQ(xq.row[0].sums, want.sums);
  EXPECT_EQ(xq.row[0].scale, want.scale);
  xq.row[0].scale = -1.0f;  // a marker: held rows are not quantized again
  xq.prepare(a.data(), 1, 100);
  EXPECT_EQ(xq.row[0].scale, -1.0f);
  xq.prepare(b.data(), 1, 100);
  mha::kernels::quantize_activation_row(b.data(), 100, want);
  EXPECT_EQ(xq.row[0].q, want.q);
  EXPECT_EQ(xq.row[0].scale, want.scale);
}
