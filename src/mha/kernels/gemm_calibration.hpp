// Which GEMM variant is fastest on this machine, measured: each variant on a small problem that
// stays in cache (a task's rows against two panels, as PackedLinear::apply runs them), a few
// milliseconds for all of them (more while an engine is still compiling them). kernel_choice.hpp
// runs it once per process, at the GEMM's first use.
#pragma once

#include <vector>

#include "gemm_variants.hpp"

namespace mha::kernels {

struct GemmCalibration {
  const GemmVariant* best = nullptr;
  std::vector<double> gflops;  // per variant, in gemm_variants()' order
  double seconds = 0;          // the calibration's own wall time
  int rounds = 0;              // rounds over every variant
  bool settled = false;        // the times stopped improving (false: cut off at 0.3 s, still moving)
};

GemmCalibration calibrate_gemm();

}  // namespace mha::kernels
