// The rule every kernel's calibration follows (variant_calibration.cpp), on variants whose speed
// the test sets (each run spins for a fixed time): a clearly faster variant is kept, one within
// 5% of the default is not, and a variant that was fast only while the rounds timed it loses the
// head-to-head with the default (as a variant timed in a quiet moment of a loaded machine did).
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "calibration_rule.hpp"
#include "mha/kernels/variant_calibration.hpp"

namespace {

using Clock = std::chrono::steady_clock;

void spin(double seconds) {
  const auto t0 = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {}
}

// Runs variant i for micros[i] microseconds.
mha::kernels::VariantCalibration calibrate(const std::vector<double>& micros, int former = 0) {
  return mha::kernels::calibrate_variants(
      static_cast<int>(micros.size()), former, [&](int i) { spin(micros[i] * 1e-6); }, 1e3);
}

TEST(VariantCalibration, KeepsAVariantClearlyFasterAfterItsHeadToHead) {
  const auto c = calibrate({20, 12, 30});
  EXPECT_EQ(c.best, 1);
  EXPECT_GE(c.confirmations, 1);
  ASSERT_EQ(c.rates.size(), 3u);
  expect_calibration_rule(c.rates, c.best, 0);
  EXPECT_NEAR(c.rates[1], 1e3 / 12e-6 * 1e-9, 0.2 * 1e3 / 12e-6 * 1e-9);  // work / best time
  EXPECT_LT(c.seconds, kCalibrationSecondsAllowed);
}

TEST(VariantCalibration, KeepsTheDefaultAgainstOneLessThanFivePercentFaster) {
  const auto c = calibrate({30, 40, 29.4}, 0);
  EXPECT_EQ(c.best, 0);
  expect_calibration_rule(c.rates, c.best, 0);
}

TEST(VariantCalibration, KeepsADefaultThatIsNotTheFirstVariant) {
  const auto c = calibrate({12, 20, 30}, 1);
  EXPECT_EQ(c.best, 0);
  expect_calibration_rule(c.rates, c.best, 1);
}

TEST(VariantCalibration, RejectsAVariantFastOnlyWhileTheRoundsTimedIt) {
  // Variant 1 runs in 10 us for its first 20 calls, then in 40. The rounds make at least 22 calls
  // of it (its first call, then three rounds of 3 batches of 1 to 3 runs: 40 us / the fastest time
  // so far), so they time it at 10 us against the default's 20; the head-to-head that follows
  // times it at 40.
  int calls = 0;
  const auto c = mha::kernels::calibrate_variants(
      2, 0, [&](int i) { spin(i == 0 ? 20e-6 : (calls++ < 20 ? 10e-6 : 40e-6)); }, 1e3);
  EXPECT_EQ(c.best, 0);
  EXPECT_EQ(c.confirmations, 1);
  EXPECT_GT(calls, 20);
  expect_calibration_rule(c.rates, c.best, 0);
  EXPECT_LT(c.rates[1], c.rates[0]);  // the head-to-head's figure, not the rounds' 10 us
}

}  // namespace
