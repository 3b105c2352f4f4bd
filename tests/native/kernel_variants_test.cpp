// Every variant of the packed GEMM (gemm_variants.hpp) against the reference twin
// (linear_reference) on shapes that hit every tile edge, float32 and quantized weights; the
// variants give the same bits as each other; and the process-wide choice (kernel_choice.hpp):
// calibration picks a listed variant, forcing by name works, unknown names are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "calibration_rule.hpp"
#include "random_vector.hpp"
#include "mha/kernels/gemm_calibration.hpp"
#include "mha/kernels/gemm_variants.hpp"
#include "mha/kernels/kernel_choice.hpp"
#include "mha/kernels/linear.hpp"
#include "mha/kernels/packed_linear.hpp"
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
  EXPECT_LT(c.seconds, 1.0);  // a few milliseconds; generous for sanitizers and a loaded machine
}

TEST(KernelChoice, ForcesByNameRefusesUnknownNamesAndCalibratesOnce) {
  auto& choice = mha::kernels::KernelChoice::process();
  EXPECT_EQ(choice.force("gemm=5x8-shuffle"), "");
  EXPECT_STREQ(choice.gemm().name, "5x8-shuffle");
  EXPECT_NE(choice.describe().find("\"variant\":\"5x8-shuffle\",\"source\":\"forced\""), std::string::npos) << choice.describe();
  const std::string unknown = choice.force("gemm=9x9");
  EXPECT_NE(unknown.find("unknown gemm variant '9x9'; known: 1x8, 2x8"), std::string::npos) << unknown;
  EXPECT_NE(choice.force("softmax=fast").find("unknown kernel 'softmax' in 'softmax=fast'; known kernels: gemm, flash, exp"), std::string::npos);
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

}  // namespace
