// Every flash-attention variant (flash_variants.hpp) with every exp scheme (exp_variants.hpp),
// forced one pair at a time through the process's kernel choice, against the reference twin
// (attention_head_reference) on shapes that hit every tile edge (query rows around each tile's
// rows, keys around each key tile), every mask, weights, the score step's variants, and the NaN
// and blocked-key rules; and the calibrations pick listed variants.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>

#include "calibration_rule.hpp"
#include "head_check.hpp"
#include "mha/kernels/flash_calibration.hpp"
#include "mha/kernels/kernel_choice.hpp"
#include "mha/kernels/simd.hpp"

namespace {

using namespace head_check;  // NOLINT
using mha::kernels::KernelChoice;

// Runs `check` once per (flash, exp) pair, forced; restores a calibrated choice afterwards.
template <class Check>
void for_every_variant(Check check) {
  int flash_count = 0, exp_count = 0;
  const mha::kernels::FlashVariant* flash = mha::kernels::flash_variants(&flash_count);
  const mha::kernels::ExpVariant* exp = mha::kernels::exp_variants(&exp_count);
  auto& choice = KernelChoice::process();
  for (int f = 0; f < flash_count; ++f) {
    for (int e = 0; e < exp_count; ++e) {
      const std::string spec = std::string("flash=") + flash[f].name + ",exp=" + exp[e].name;
      ASSERT_EQ(choice.force(spec), "");
      ASSERT_STREQ(choice.flash().name, flash[f].name);
      ASSERT_STREQ(choice.exp().name, exp[e].name);
      SCOPED_TRACE(spec);
      check();
      if (testing::Test::HasFatalFailure()) return;
    }
  }
  choice.recalibrate();
}

TEST(FlashVariants, EveryVariantMatchesReferenceOnEveryTileEdge) {
  for_every_variant([] {
    for (int64_t L : {1, 5, 9, 33, 70}) {
      for (int64_t S : {1, 6, 63, 65, 129, 300}) {
        for (int64_t Dh : {1, 7, 64}) {
          for (int flags = 0; flags < 16; ++flags) {
            const HeadCase c{L, S, Dh, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0, (flags & 8) != 0,
                             (flags & 1) ? 3 : 0};
            SCOPED_TRACE(testing::Message() << "L=" << L << " S=" << S << " Dh=" << Dh << " flags=" << flags);
            check_head(c);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  });
}

TEST(FlashVariants, EveryVariantMatchesReferenceWithTheScoreSteps) {
  for_every_variant([] {
    std::mt19937 rng(2025);
    const auto pick = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
    for (int trial = 0; trial < 60; ++trial) {
      HeadCase c{pick({1, 5, 33, 70}), pick({1, 6, 150, 300}), pick({1, 8, 64}), rng() % 2 == 0, rng() % 3 == 0,
                 rng() % 4 == 0, rng() % 2 == 0, pick({0, 3, 130})};
      c.Dv = pick({0, 1, 5, 24});
      c.epilogue.window = pick({0, 0, 1, 5, 40, 128});
      if (rng() % 3 == 0) c.epilogue.softcap = rng() % 2 ? 1.5f : 30.0f;
      if (rng() % 3 == 0) c.epilogue.alibi_slope = rng() % 2 ? 0.3f : 0.0039f;
      if (rng() % 3 == 0) c.epilogue.sink = rng() % 2 ? 0.7f : -2.0f;
      SCOPED_TRACE(testing::Message() << "trial " << trial);
      check_head(c);
      if (testing::Test::HasFatalFailure()) return;
    }
  });
}

TEST(FlashVariants, EveryVariantKeepsTheNaNAndBlockedKeyRules) {
  for_every_variant([] {
    check_blocked_keys_are_never_read();
    check_nan_scores_reach_the_output();
  });
}

TEST(FlashVariants, NamesAreUniqueAndTheDefaultsAreTheFormerKernels) {
  int count = 0;
  const mha::kernels::FlashVariant* v = mha::kernels::flash_variants(&count);
  ASSERT_GE(count, 6);
  for (int i = 0; i < count; ++i) {
    EXPECT_EQ(mha::kernels::find_flash_variant(v[i].name), v + i);
    for (int j = 0; j < i; ++j) EXPECT_STRNE(v[i].name, v[j].name);
  }
  EXPECT_EQ(mha::kernels::flash_default_variant().rows, mha::kernels::simd::kTileRows);
  EXPECT_EQ(mha::kernels::flash_default_variant().key_tile, 128);
  EXPECT_STREQ(mha::kernels::exp_default_variant().name, "estrin5");
  EXPECT_EQ(mha::kernels::find_flash_variant("9x9"), nullptr);
  EXPECT_EQ(mha::kernels::find_exp_variant("taylor2"), nullptr);
}

TEST(FlashVariants, CalibrationsPickAListedVariantAndReportEveryRate) {
  int flash_count = 0, exp_count = 0;
  mha::kernels::flash_variants(&flash_count);
  mha::kernels::exp_variants(&exp_count);
  const int flash_default = static_cast<int>(&mha::kernels::flash_default_variant() - mha::kernels::flash_variants(&flash_count));
  const int exp_default = static_cast<int>(&mha::kernels::exp_default_variant() - mha::kernels::exp_variants(&exp_count));
  for (const auto& [c, count, def] : {std::tuple{mha::kernels::calibrate_flash(), flash_count, flash_default},
                                      std::tuple{mha::kernels::calibrate_exp(), exp_count, exp_default}}) {
    ASSERT_EQ(static_cast<int>(c.rates.size()), count);
    EXPECT_GE(c.best, 0);
    expect_calibration_rule(c.rates, c.best, def);
    EXPECT_LT(c.seconds, kCalibrationSecondsAllowed);
  }
}

TEST(FlashVariants, ForcedByNameAndReportedWithTheGemm) {
  auto& choice = KernelChoice::process();
  EXPECT_EQ(choice.force("gemm=4x8,flash=2x128,exp=horner5"), "");
  EXPECT_STREQ(choice.flash().name, "2x128");
  EXPECT_STREQ(choice.exp().name, "horner5");
  const std::string d = choice.describe();
  EXPECT_NE(d.find("\"flash\":{\"variant\":\"2x128\",\"source\":\"forced\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"exp\":{\"variant\":\"horner5\",\"source\":\"forced\""), std::string::npos) << d;
  const std::string unknown = choice.force("flash=4x128,exp=taylor2");
  EXPECT_NE(unknown.find("unknown exp variant 'taylor2'; known: estrin5, horner5"), std::string::npos) << unknown;
  EXPECT_STREQ(choice.flash().name, "2x128") << "a refused spec changes nothing";
  EXPECT_NE(choice.force("flash=3x3").find("unknown flash variant '3x3'; known: 2x128, 4x128"), std::string::npos);
  choice.recalibrate();
  const auto& picked = choice.flash();
  EXPECT_EQ(&choice.flash(), &picked) << "calibrated once, then kept";
  EXPECT_NE(choice.describe().find("\"flash\":{\"variant\":\"" + std::string(picked.name) + "\",\"source\":\"calibrated\""),
            std::string::npos);
}

}  // namespace
