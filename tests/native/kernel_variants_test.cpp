// Every variant of the packed GEMM (gemm_variants.hpp) against the reference twin
// (linear_reference) on shapes that hit every tile edge, float32 and quantized weights; the
// variants give the same bits as each other; and the process-wide choice (kernel_choice.hpp):
// calibration picks a listed variant, forcing by name works, unknown names are refused by name.
// The same for the decode GEMV's f16 and q4 variants (gemv_variants.hpp) against
// quantized_gemv_reference, with f16's extremes (65504, subnormal halves, |x| up to 1e4 and past
// the even-odd kernels' 2^27 limit).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "calibration_rule.hpp"
#include "random_vector.hpp"
#include "mha/kernels/gemm_calibration.hpp"
#include "mha/kernels/gemm_variants.hpp"
#include "mha/kernels/gemv_calibration.hpp"
#include "mha/kernels/gemv_variants.hpp"
#include "mha/kernels/kernel_choice.hpp"
#include "mha/kernels/linear.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/kernels/quantized_gemv.hpp"
#include "mha/kernels/weight_formats.hpp"

namespace {

using mha::kernels::GemmVariant;

std::vector<const GemmVariant*> all_variants() {
  int count = 0;
  const GemmVariant* v = mha::kernels::gemm_variants(&count);
  std::vector<const GemmVariant*> list;
  for (int i = 0; i < count; ++i) list.push_back(v + i);
  return list;
}

TEST(GemmVariants, EveryVariantMatchesReferenceOnEveryTileEdge) {
  // Rows around every tile height (1-6, 8) and a task's 120; depth across the 512 / 1024 depth
  // block (wasm / AVX-512) and not a multiple of the shuffle's 4; columns around a panel.
  for (int64_t rows : {1, 2, 3, 5, 7, 8, 9, 13, 24, 121}) {
    for (int64_t in : {1, 3, 6, 64, 517, 1030}) {
      for (int64_t out : {1, 4, 7, 9, 16, 33}) {
        const auto x = random_vector(rows * in, 1), w = random_vector(out * in, 2), b = random_vector(out, 3);
        std::vector<float> ref(rows * out);
        mha::kernels::linear_reference({x.data(), w.data(), b.data(), ref.data(), rows, in, out});
        const mha::kernels::PackedLinear packed(w.data(), b.data(), out, in);
        std::vector<float> first;
        for (const GemmVariant* v : all_variants()) {
          std::vector<float> y(rows * out, 99.0f);
          packed.apply(x.data(), y.data(), 0, rows, *v);
          SCOPED_TRACE(testing::Message() << v->name << " rows=" << rows << " in=" << in << " out=" << out);
          for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-5 + 1e-4 * std::abs(ref[i])) << "y[" << i << "]";
          if (first.empty()) first = y;
          ASSERT_EQ(y, first) << "the variants give the same bits";
        }
      }
    }
  }
}

TEST(GemmVariants, RowRangesAndQuantizedWeightsMatchReference) {
  const int64_t rows = 50, in = 96, out = 40;
  const auto x = random_vector(rows * in, 4), w = random_vector(out * in, 5), b = random_vector(out, 6);
  for (mha::WeightDtype dtype : {mha::WeightDtype::kInt8, mha::WeightDtype::kQ4, mha::WeightDtype::kF16}) {
    const auto m = mha::kernels::quantize_matrix(dtype, w.data(), out, in);
    const mha::kernels::PackedLinear packed(m, b.data());
    const std::vector<float> wq = packed.weight();  // the dequantized weights: the reference's
    std::vector<float> ref(rows * out);
    mha::kernels::linear_reference({x.data(), wq.data(), b.data(), ref.data(), rows, in, out});
    for (const GemmVariant* v : all_variants()) {
      std::vector<float> y(rows * out, 99.0f);
      packed.apply(x.data(), y.data(), 0, 17, *v);  // two ranges, as two tasks
      packed.apply(x.data(), y.data(), 17, rows, *v);
      SCOPED_TRACE(testing::Message() << v->name << " " << mha::weight_dtype_name(dtype));
      for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-5 + 1e-4 * std::abs(ref[i])) << "y[" << i << "]";
    }
  }
}

TEST(GemmVariants, NamesAreUniqueAndTheDefaultMatchesTheTileRows) {
  const auto list = all_variants();
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(mha::kernels::find_gemm_variant(list[i]->name), list[i]);
    for (size_t j = 0; j < i; ++j) EXPECT_STRNE(list[i]->name, list[j]->name);
  }
  EXPECT_EQ(mha::kernels::gemm_default_variant().rows, mha::kernels::PackedLinear::few_rows());
  EXPECT_EQ(mha::kernels::find_gemm_variant("9x9"), nullptr);
}

TEST(GemmCalibration, PicksTheFastestListedVariant) {
  const mha::kernels::GemmCalibration c = mha::kernels::calibrate_gemm();
  ASSERT_NE(c.best, nullptr);
  EXPECT_EQ(mha::kernels::find_gemm_variant(c.best->name), c.best);
  ASSERT_EQ(c.gflops.size(), all_variants().size());
  const auto list = all_variants();
  int best = 0, def = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == c.best) best = static_cast<int>(i);
    if (list[i] == &mha::kernels::gemm_default_variant()) def = static_cast<int>(i);
  }
  expect_calibration_rule(c.gflops, best, def);
  EXPECT_LT(c.seconds, kCalibrationSecondsAllowed);  // a few milliseconds; generous for a loaded machine
}

TEST(KernelChoice, ForcesByNameRefusesUnknownNamesAndCalibratesOnce) {
  auto& choice = mha::kernels::KernelChoice::process();
  EXPECT_EQ(choice.force("gemm=5x8-shuffle"), "");
  EXPECT_STREQ(choice.gemm().name, "5x8-shuffle");
  EXPECT_NE(choice.describe().find("\"variant\":\"5x8-shuffle\",\"source\":\"forced\""), std::string::npos) << choice.describe();
  const std::string unknown = choice.force("gemm=9x9");
  EXPECT_NE(unknown.find("unknown gemm variant '9x9'; known: 1x8, 2x8"), std::string::npos) << unknown;
  EXPECT_NE(choice.force("softmax=fast").find("unknown kernel 'softmax' in 'softmax=fast'; known kernels: gemm, gemv_f16, gemv_q4, flash, exp"), std::string::npos);
  EXPECT_STREQ(choice.gemm().name, "5x8-shuffle") << "a refused spec changes nothing";
  // The layer's entry point runs the forced variant and still matches the reference.
  const int64_t rows = 9, in = 33, out = 17;
  const auto x = random_vector(rows * in, 7), w = random_vector(out * in, 8), b = random_vector(out, 9);
  std::vector<float> ref(rows * out), y(rows * out);
  mha::kernels::linear_reference({x.data(), w.data(), b.data(), ref.data(), rows, in, out});
  mha::kernels::linear({x.data(), w.data(), b.data(), y.data(), rows, in, out});
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-5 + 1e-4 * std::abs(ref[i]));
  choice.recalibrate();
  const GemmVariant& picked = choice.gemm();
  EXPECT_EQ(&choice.gemm(), &picked) << "calibrated once, then kept";
  EXPECT_NE(choice.describe().find("\"source\":\"calibrated\""), std::string::npos);
}

// ---- the decode GEMV's variants (gemv_variants.hpp) ----

using mha::kernels::GemvVariant;
using mha::kernels::QuantizedPanels;
using mha::kernels::QuantizedRow;

std::vector<const GemvVariant*> gemv_list(const GemvVariant* (*list)(int*)) {
  int count = 0;
  const GemvVariant* v = list(&count);
  std::vector<const GemvVariant*> out;
  for (int i = 0; i < count; ++i) out.push_back(v + i);
  return out;
}

struct GemvCase {
  std::vector<float> w, x, bias;
  int64_t out, in;
};

// Every variant of `list` on `panels` against the twin: within the twin's tolerance of
// quant_kernels_test.cpp (1e-6 of the output's scale, growing with the depth: f16's float sums
// come in another order than the twin's, as the former kernel's did), on the whole range and on a split one (as
// two threads' shares; a variant's results must not depend on the split).
void expect_variants_match_twin(const GemvVariant* (*list)(int*), const QuantizedPanels& panels, const GemvCase& c,
                                const char* what) {
  QuantizedRow row;
  mha::kernels::quantize_activation_row(c.x.data(), c.in, row);
  const int64_t np = panels.num_panels();
  std::vector<float> twin(c.out);
  mha::kernels::quantized_gemv_reference(panels, c.x.data(), row, c.bias.data(), twin.data(), 0, np);
  double scale = 0;
  for (float v : twin) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (const GemvVariant* v : gemv_list(list)) {
    SCOPED_TRACE(testing::Message() << what << " " << v->name << " out=" << c.out << " in=" << c.in);
    std::vector<float> y(c.out, 99.0f), split(c.out, 99.0f);
    v->run(panels, c.x.data(), row, c.bias.data(), y.data(), 0, np);
    v->run(panels, c.x.data(), row, c.bias.data(), split.data(), 0, np / 2);
    v->run(panels, c.x.data(), row, c.bias.data(), split.data(), np / 2, np);
    for (int64_t o = 0; o < c.out; ++o) {
      if (std::isnan(twin[o])) {
        ASSERT_TRUE(std::isnan(y[o])) << o;
        continue;
      }
      ASSERT_NEAR(y[o], twin[o], 1e-6 * scale * (1 + c.in / 512.0)) << "y[" << o << "]";
    }
    // (bit for bit: gemv_variants.cpp compiles without FMA contraction, CMakeLists.txt says why)
    for (int64_t o = 0; o < c.out; ++o)
      if (!std::isnan(y[o])) ASSERT_EQ(y[o], split[o]) << "split y[" << o << "]";
  }
}

GemvCase gemv_case(int64_t out, int64_t in, unsigned seed) {
  return {random_vector(out * in, seed), random_vector(in, seed + 1), random_vector(out + 64, seed + 2), out, in};
}

TEST(GemvVariants, F16AndQ4VariantsMatchTheTwin) {
  // Columns from under a panel to 10 panels natively (above the even-odd kernels' 4-panel minimum
  // in every build), depths odd, under and over a q4 block, and long.
  for (int64_t out : {13, 40, 200, 300}) {
    for (int64_t in : {1, 45, 128, 777, 2048}) {
      const GemvCase c = gemv_case(out, in, static_cast<unsigned>(out * 7 + in));
      const QuantizedPanels f16(mha::kernels::quantize_matrix(mha::WeightDtype::kF16, c.w.data(), out, in));
      expect_variants_match_twin(mha::kernels::gemv_f16_variants, f16, c, "f16");
      auto q = mha::kernels::quantize_matrix(mha::WeightDtype::kQ4, c.w.data(), out, in);
      expect_variants_match_twin(mha::kernels::gemv_q4_variants, QuantizedPanels(q), c, "q4");
      q.zero_points.resize(static_cast<size_t>(mha::kernels::QuantizedMatrix::zero_point_bytes(mha::WeightDtype::kQ4, out, in)));
      for (size_t i = 0; i < q.zero_points.size(); ++i) q.zero_points[i] = static_cast<uint8_t>(i * 53 + 7);
      expect_variants_match_twin(mha::kernels::gemv_q4_variants, QuantizedPanels(q), c, "q4 zero points");
    }
  }
}

// The even-odd kernel moves the 2^112 rebias out of the loop by powers of two: with the widen
// kernel's depth steps it gives the widen kernel's bits, at f16's extremes too.
TEST(GemvVariants, F16EvenOddIsTheWidenKernelAtTheExtremes) {
  const int64_t out = 300, in = 96;
  GemvCase c = gemv_case(out, in, 77);
  for (int64_t i = 0; i < out * in; ++i) {
    switch (i % 5) {
      case 0: c.w[i] = (i % 2 ? 1.0f : -1.0f) * 65504.0f; break;                             // f16 max
      case 1: c.w[i] = (i % 3 ? 1.0f : -1.0f) * std::ldexp(1.0f, -24) * (1 + i % 1023); break;  // subnormal halves
      case 2: c.w[i] = 0.0f; break;
      default: break;
    }
  }
  for (int64_t i = 0; i < in; ++i) c.x[i] = (i % 4 == 0 ? 1e4f : i % 4 == 1 ? -3e-3f : i % 4 == 2 ? 7e-6f : -9.5e3f) * (1 + 0.01f * i);
  const QuantizedPanels f16(mha::kernels::quantize_matrix(mha::WeightDtype::kF16, c.w.data(), out, in));
  const auto by_name = [](const char* name) {
    for (const GemvVariant* v : gemv_list(mha::kernels::gemv_f16_variants))
      if (std::string(v->name) == name) return v;
    return static_cast<const GemvVariant*>(nullptr);
  };
  const GemvVariant *widen = by_name("widen"), *even_odd = by_name("even-odd");
  ASSERT_TRUE(widen && even_odd);
  QuantizedRow row;  // (f16 reads x)
  for (float big : {0.0f, 1.5e8f, INFINITY, NAN}) {  // past 2^27, Inf and NaN: the widen kernel runs
    std::vector<float> x = c.x;
    if (big != 0.0f) x[in / 2] = big;
    std::vector<float> a(out), b(out), twin(out);
    widen->run(f16, x.data(), row, c.bias.data(), a.data(), 0, f16.num_panels());
    even_odd->run(f16, x.data(), row, c.bias.data(), b.data(), 0, f16.num_panels());
    mha::kernels::quantized_gemv_reference(f16, x.data(), row, c.bias.data(), twin.data(), 0, f16.num_panels());
    float scale = 0;  // (the columns sum terms up to 65504 * 1e4: a tolerance of the outputs' scale)
    for (float v : twin) scale = std::isfinite(v) ? std::max(scale, std::abs(v)) : scale;
    for (int64_t o = 0; o < out; ++o) {
      SCOPED_TRACE(testing::Message() << "x[in/2] = " << big << ", y[" << o << "]");
      if (std::isnan(a[o])) {
        ASSERT_TRUE(std::isnan(b[o]) && std::isnan(twin[o]));
        continue;
      }
      ASSERT_EQ(a[o], b[o]);
      if (std::isinf(twin[o])) {
        ASSERT_EQ(b[o], twin[o]);
        continue;
      }
      ASSERT_NEAR(b[o], twin[o], 1e-5 * scale);
    }
  }
}

TEST(GemvVariants, NamesAreUniqueAndTheDefaultsComeFirst) {
  for (const auto list : {mha::kernels::gemv_f16_variants, mha::kernels::gemv_q4_variants}) {
    const auto v = gemv_list(list);
    ASSERT_GE(v.size(), 3u);
    for (size_t i = 0; i < v.size(); ++i)
      for (size_t j = 0; j < i; ++j) EXPECT_STRNE(v[i]->name, v[j]->name);
  }
  EXPECT_STREQ(mha::kernels::gemv_f16_default_variant().name, "widen");
  EXPECT_STREQ(mha::kernels::gemv_q4_default_variant().name, "1p");
}

TEST(GemvCalibration, PicksAListedVariantWithEveryRate) {
  for (const auto& [c, count] : {std::pair{mha::kernels::calibrate_gemv_f16(), gemv_list(mha::kernels::gemv_f16_variants).size()},
                                 std::pair{mha::kernels::calibrate_gemv_q4(), gemv_list(mha::kernels::gemv_q4_variants).size()}}) {
    ASSERT_GE(c.best, 0);
    ASSERT_LT(c.best, static_cast<int>(count));
    ASSERT_EQ(c.rates.size(), count);
    for (double r : c.rates) EXPECT_GT(r, 0.0);  // (which wins is a timing: not asserted)
  }
}

TEST(KernelChoice, ForcesGemvVariantsAndTheProjectionRunsThem) {
  auto& choice = mha::kernels::KernelChoice::process();
  EXPECT_EQ(choice.force("gemv_f16=even-odd-k4,gemv_q4=2p"), "");
  EXPECT_STREQ(choice.gemv_f16().name, "even-odd-k4");
  EXPECT_STREQ(choice.gemv_q4().name, "2p");
  const std::string d = choice.describe();
  EXPECT_NE(d.find("\"gemv_f16\":{\"variant\":\"even-odd-k4\",\"source\":\"forced\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"gemv_q4\":{\"variant\":\"2p\",\"source\":\"forced\""), std::string::npos) << d;
  const std::string unknown = choice.force("gemm=4x8,gemv_q4=9p");
  EXPECT_NE(unknown.find("unknown gemv_q4 variant '9p'; known: 1p, "), std::string::npos) << unknown;
  EXPECT_NE(choice.force("gemv=x").find("known kernels: gemm, gemv_f16, gemv_q4"), std::string::npos);
  EXPECT_STREQ(choice.gemv_q4().name, "2p") << "a refused spec changes nothing";
  // The projection's decode path runs the forced variants and matches the twin.
  const int64_t out = 200, in = 300;
  const GemvCase c = gemv_case(out, in, 5);
  for (mha::WeightDtype dtype : {mha::WeightDtype::kF16, mha::WeightDtype::kQ4}) {
    const auto m = mha::kernels::quantize_matrix(dtype, c.w.data(), out, in);
    const mha::kernels::PackedLinear packed(m, c.bias.data());
    const QuantizedPanels panels(m);
    QuantizedRow row;
    mha::kernels::quantize_activation_row(c.x.data(), in, row);
    std::vector<float> y(out), twin(out);
    packed.apply_few_rows(c.x.data(), y.data(), 1, 0, packed.num_panels());
    mha::kernels::quantized_gemv_reference(panels, c.x.data(), row, c.bias.data(), twin.data(), 0, panels.num_panels());
    for (int64_t o = 0; o < out; ++o) ASSERT_NEAR(y[o], twin[o], 1e-5 * (1 + std::abs(twin[o]))) << o;
  }
  choice.recalibrate();
  EXPECT_NE(choice.describe().find("\"gemv_q4\":{\"variant\":"), std::string::npos);
}

}  // namespace
