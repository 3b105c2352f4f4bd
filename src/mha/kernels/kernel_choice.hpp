// Which variant of each hot kernel this process runs: the one place that decides it, and the one
// process-wide object that remembers it (KernelChoice::process()). A kernel's variant is either
// forced (MHA_KERNELS=gemm=4x8 natively; the JS init option `kernels` or the same variable in
// Node, passed in through force()), restored (a calibration an earlier process saved, also through
// force()), or measured on this machine at the kernel's first use (gemm_calibration.hpp). Every
// variant gives the reference's results (tests/native/kernel_variants_test.cpp), so the choice
// changes speed only.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "gemm_variants.hpp"

namespace mha::kernels {

enum class ChoiceSource { kCalibrated, kForced, kSaved };

class KernelChoice {
 public:
  // The process's one choice. Natively the first call reads MHA_KERNELS and throws
  // std::invalid_argument (naming it) for an unknown kernel or variant.
  static KernelChoice& process();

  // The GEMM variant: calibrates at the first call unless one was forced or restored.
  const GemmVariant& gemm() {
    const GemmVariant* v = gemm_.load(std::memory_order_acquire);
    return v ? *v : calibrate_gemm_once();
  }

  // "gemm=4x8" (kernel=variant pairs, comma-separated; "" changes nothing). Returns "" or why the
  // spec was refused ("unknown gemm variant '9x9'; known: ..."), changing nothing then.
  std::string force(const std::string& spec, ChoiceSource source = ChoiceSource::kForced);
  // Forgets the GEMM's variant: its next use calibrates again (tests, benchmarks).
  void recalibrate();
  // What was chosen, as JSON: {"gemm":{"variant":"4x8","source":"calibrated","variants":[...],
  // "gflops":[...] (the calibration's, per variant; empty unless this process calibrated),
  // "calibrationMs":31.9,"settled":true (its times stopped improving; false: cut off while an
  // engine was still optimizing, not worth saving)}}. Calibrates first if nothing was chosen yet.
  std::string describe();

 private:
  KernelChoice() = default;
  const GemmVariant& calibrate_gemm_once();

  std::mutex mutex_;
  std::atomic<const GemmVariant*> gemm_{nullptr};
  ChoiceSource gemm_source_ = ChoiceSource::kCalibrated;
  std::vector<double> gemm_gflops_;
  double calibration_ms_ = 0;
  bool settled_ = false;
};

}  // namespace mha::kernels
