// Which variant of a kernel is fastest on this machine, measured: each variant run on a small
// problem that stays in cache, in rounds, until the times settle (a few milliseconds for all of
// them, more while an engine is still compiling them). The kernels' calibrations
// (gemm_calibration.hpp, gemv_calibration.hpp) give it their problem; kernel_choice.hpp runs each
// once per process.
#pragma once

#include <functional>
#include <vector>

namespace mha::kernels {

struct VariantCalibration {
  int best = 0;               // the index of the variant kept
  std::vector<double> rates;  // per variant: the problem's work / its best time, in units per ns
  double seconds = 0;         // the calibration's own wall time
  int rounds = 0;             // rounds over every variant
  bool settled = false;       // the times stopped improving (false: cut off at 0.3 s, still moving)
  int confirmations = 0;      // head-to-heads run against a variant that looked faster than the one kept
};

// `run(i)` runs variant i once on the problem, `work` of which (e.g. flops) each run does. The
// default (index `former`, the kernel before the variants) is kept unless another is 5% faster,
// in the rounds and again in a head-to-head with it (then `rates` holds the head-to-head's figure
// for the challenger).
VariantCalibration calibrate_variants(int count, int former, const std::function<void(int)>& run, double work);

}  // namespace mha::kernels
