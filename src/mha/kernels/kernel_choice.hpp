// Which variant of each hot kernel this process runs: the one place that decides it, and the one
// process-wide object that remembers it (KernelChoice::process()). A kernel's variant is either
// forced (MHA_KERNELS=gemm=4x8,flash=4x128,exp=estrin5 natively; the JS init option `kernels` or
// the same variable in Node, passed in through force()), restored (a calibration an earlier
// process saved, also through force()), or measured on this machine at the kernel's first use
// (gemm_calibration.hpp, flash_calibration.hpp). Every variant gives the reference's results
// (tests/native/kernel_variants_test.cpp, flash_variants_test.cpp), so the choice changes speed
// only. The kernels are one table (kernel_choice.cpp): a kernel with variants is one entry there.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "exp_variants.hpp"
#include "flash_variants.hpp"
#include "gemm_variants.hpp"

namespace mha::kernels {

enum class ChoiceSource { kCalibrated, kForced, kSaved };

// The kernels with variants, in kernel_choice.cpp's table order.
enum class Kernel { kGemm, kFlash, kExp, kCount };

class KernelChoice {
 public:
  // The process's one choice. Natively the first call reads MHA_KERNELS and throws
  // std::invalid_argument (naming it) for an unknown kernel or variant.
  static KernelChoice& process();

  // Each kernel's variant: calibrates at the kernel's first use unless one was forced or restored.
  const GemmVariant& gemm() {
    int n = 0;
    return gemm_variants(&n)[index(Kernel::kGemm)];
  }
  const FlashVariant& flash() {
    int n = 0;
    return flash_variants(&n)[index(Kernel::kFlash)];
  }
  const ExpVariant& exp() {
    int n = 0;
    return exp_variants(&n)[index(Kernel::kExp)];
  }

  // "gemm=4x8,flash=4x128" (kernel=variant pairs, comma-separated; "" changes nothing). Returns ""
  // or why the spec was refused ("unknown gemm variant '9x9'; known: ..."), changing nothing then.
  std::string force(const std::string& spec, ChoiceSource source = ChoiceSource::kForced);
  // Forgets every kernel's variant: each next use calibrates again (tests, benchmarks).
  void recalibrate();
  // What was chosen, as JSON, one member per kernel: {"gemm":{"variant":"4x8","source":"calibrated",
  // "variants":[...],"gflops":[...] (the calibration's, per variant; empty unless this process
  // calibrated),"calibrationMs":31.9,"settled":true (its times stopped improving; false: cut off
  // while an engine was still optimizing, not worth saving)},"flash":{...},"exp":{...}}.
  // Calibrates first what was not chosen yet.
  std::string describe();

 private:
  static constexpr int kKernels = static_cast<int>(Kernel::kCount);
  struct Slot {
    std::atomic<int> chosen{-1};  // index into the kernel's variants; -1: not chosen yet
    ChoiceSource source = ChoiceSource::kCalibrated;
    std::vector<double> gflops;
    double calibration_ms = 0;
    bool settled = false;
  };

  KernelChoice() = default;
  int index(Kernel k) {
    const int i = slots_[static_cast<int>(k)].chosen.load(std::memory_order_acquire);
    return i >= 0 ? i : calibrate_once(static_cast<int>(k));
  }
  int calibrate_once(int kernel);

  std::mutex mutex_;
  Slot slots_[kKernels];
};

}  // namespace mha::kernels
