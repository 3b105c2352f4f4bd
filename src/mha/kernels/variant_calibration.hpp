// The timing loop every kernel's calibration runs (kernel_choice.hpp): each variant of one kernel
// on a small problem that stays in cache, rounds over all of them until their times settle, and
// the default kept unless another is 5% faster. The problems are the kernels' own
// (gemm_calibration.cpp, flash_calibration.cpp); the loop and its waiting rules are here, once.
#pragma once

#include <functional>
#include <vector>

namespace mha::kernels {

struct VariantCalibration {
  int best = 0;                // index of the variant kept
  std::vector<double> gflops;  // per variant (the problem's flops over its best time)
  double seconds = 0;          // the calibration's own wall time
  int rounds = 0;              // rounds over every variant
  bool settled = false;        // the times stopped improving (false: cut off at 0.3 s, still moving)
};

// run(i) runs variant i once on the problem, which does `flops` floating-point operations.
VariantCalibration calibrate_variants(int count, int default_index, double flops, const std::function<void(int)>& run);

}  // namespace mha::kernels
