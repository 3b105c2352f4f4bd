// What a calibration's result must say about its own figures (variant_calibration.cpp's rule): the
// default is kept unless another variant is 5% faster, and then the fastest is kept. Which variant
// is fastest is a timing and is not asserted; the rule holds on any timing (1% slack for the
// rates' rounding).
#pragma once

#include <gtest/gtest.h>

#include <vector>

// The most wall time a calibration may take here: it starts no round after 0.3 s, so it ends
// within about a second; the sanitizer builds run each round 10-40x slower (and CI runs their
// tests two at a time on two cores), so they get more.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kCalibrationSecondsAllowed = 5.0;
#else
constexpr double kCalibrationSecondsAllowed = 1.0;
#endif

inline void expect_calibration_rule(const std::vector<double>& gflops, int best, int default_index) {
  ASSERT_LT(best, static_cast<int>(gflops.size()));
  for (double g : gflops) EXPECT_GT(g, 0.0);
  const double kept_unless = gflops[default_index] / 0.95;
  if (best == default_index) {
    for (double g : gflops) EXPECT_LE(g, kept_unless * 1.01) << "a variant 5% faster than the default was not kept";
  } else {
    EXPECT_GE(gflops[best], kept_unless * 0.99) << "replaced the default by a variant less than 5% faster";
    for (double g : gflops) EXPECT_LE(g, gflops[best] * 1.0001) << "another variant was faster still";
  }
}
