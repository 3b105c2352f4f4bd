// mha.Linear's core (src/mha/layer/linear_layer.hpp) in every weightDtype, from every stored format
// (float32, binary16 and bfloat16 bits): forward equals the float64 product with the weights its
// format defines (weight_formats.hpp's quantize_matrix, the reference twin), on the decode GEMV
// (few rows) and the GEMM (many) paths; rows() gives those weights' rows exactly; a bfloat16
// weight quantizes as its float32 value does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "mha/kernels/weight_formats.hpp"
#include "mha/layer/linear_layer.hpp"
#include "random_vector.hpp"

namespace {

using mha::LinearLayer;
using mha::WeightDtype;
using mha::WeightSource;
namespace k = mha::kernels;

constexpr int64_t kOut = 37, kIn = 70;  // neither a multiple of a panel nor of q4's block

uint16_t to_bf16(float x) {  // truncation: the test's bf16 values are then exact floats
  uint32_t word;
  std::memcpy(&word, &x, 4);
  return static_cast<uint16_t>(word >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t word = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &word, 4);
  return x;
}

struct Weight {
  std::vector<float> f32;      // the float32 values every format below holds exactly
  std::vector<uint16_t> bits;  // the same as f16 or bf16 bits
};

// Random weights exactly representable in `source` (so every source means the same matrix).
Weight weight_in(WeightSource source) {
  Weight w;
  w.f32 = random_vector(static_cast<size_t>(kOut * kIn), 7);
  if (source == WeightSource::kF32) return w;
  w.bits.resize(w.f32.size());
  for (size_t i = 0; i < w.f32.size(); ++i) {
    w.bits[i] = source == WeightSource::kF16 ? k::float_to_half(w.f32[i]) : to_bf16(w.f32[i]);
    w.f32[i] = source == WeightSource::kF16 ? k::half_to_float(w.bits[i]) : from_bf16(w.bits[i]);
  }
  return w;
}

// The weights dtype's format defines for float32 W: the reference twin of what the layer packs.
std::vector<float> reference_weights(WeightDtype dtype, const std::vector<float>& w) {
  if (dtype == WeightDtype::kF32) return w;
  return k::dequantize_matrix(k::quantize_matrix(dtype, w.data(), kOut, kIn));
}

class LinearLayerFormats : public ::testing::TestWithParam<std::tuple<WeightDtype, WeightSource>> {};

TEST_P(LinearLayerFormats, ForwardAndRowsMatchTheFormatsReference) {
  const auto [dtype, source] = GetParam();
  const Weight w = weight_in(source);
  const std::vector<float> bias = random_vector(kOut, 9);
  LinearLayer layer(kIn, kOut, true, dtype);
  layer.load(source == WeightSource::kF32 ? static_cast<const void*>(w.f32.data()) : w.bits.data(), source, bias.data());
  const std::vector<float> want_w = reference_weights(dtype, w.f32);
  // int8 and q4 multiply x quantized to int16 on the few-rows path (quantized_gemv.hpp): 1e-3 of the row's scale.
  const double tolerance = dtype == WeightDtype::kInt8 || dtype == WeightDtype::kQ4 ? 1e-3 : 1e-5;
  for (int64_t rows : {1, 3, 17}) {
    const std::vector<float> x = random_vector(static_cast<size_t>(rows * kIn), 11);
    std::vector<float> y(static_cast<size_t>(rows * kOut));
    layer.forward(x.data(), y.data(), rows, nullptr);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < kOut; ++o) {
        double want = bias[o], scale = 0;
        for (int64_t i = 0; i < kIn; ++i) {
          want += static_cast<double>(x[r * kIn + i]) * want_w[o * kIn + i];
          scale += std::abs(static_cast<double>(x[r * kIn + i]) * want_w[o * kIn + i]);
        }
        ASSERT_NEAR(y[r * kOut + o], want, tolerance * (scale + 1)) << "rows " << rows << ", row " << r << ", column " << o;
      }
    }
  }
  const std::vector<int32_t> ids = {0, 36, 5, 5, 8, 17};
  std::vector<float> got(ids.size() * kIn);
  layer.rows(ids.data(), static_cast<int64_t>(ids.size()), got.data());
  for (size_t r = 0; r < ids.size(); ++r) {
    for (int64_t i = 0; i < kIn; ++i) ASSERT_EQ(got[r * kIn + i], want_w[ids[r] * kIn + i]) << "row " << ids[r] << ", column " << i;
  }
  EXPECT_EQ(layer.weight_bytes() > 0, true);
  EXPECT_LE(layer.weight_bytes(), LinearLayer::packed_bytes(dtype, kOut, kIn));
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<WeightDtype, WeightSource>>& info) {
  static const char* const kSources[] = {"F32", "F16", "BF16"};
  return std::string(mha::weight_dtype_name(std::get<0>(info.param))) + "_from_" + kSources[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    EveryDtypeAndSource, LinearLayerFormats,
    ::testing::Combine(::testing::Values(WeightDtype::kF32, WeightDtype::kF16, WeightDtype::kInt8, WeightDtype::kQ4),
                       ::testing::Values(WeightSource::kF32, WeightSource::kF16, WeightSource::kBF16)),
    case_name);

TEST(LinearLayer, RowsRefusesAnIdOutsideTheTable) {
  LinearLayer layer(4, 3, false, WeightDtype::kQ4);
  const std::vector<float> w(12, 0.5f);
  layer.load(w.data(), WeightSource::kF32, nullptr);
  const int32_t id = 3;
  float out[4];
  EXPECT_THROW(layer.rows(&id, 1, out), std::exception);
}

TEST(LinearLayer, LoadMemoryCountsTheCanonicalMatrixOfAQuantizedLoad) {
  LinearLayer layer(kIn, kOut, false, WeightDtype::kInt8);
  uint64_t total = 0;
  for (const auto& item : layer.load_memory(kOut * kIn * 2, WeightSource::kBF16)) total += item.bytes;
  EXPECT_GE(total, static_cast<uint64_t>(kOut * kIn * 2 + kOut * kIn + LinearLayer::packed_bytes(WeightDtype::kInt8, kOut, kIn)));
}

}  // namespace
