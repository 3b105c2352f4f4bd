// The process's kernel choice (src/mha/kernels/kernel_choice.hpp) for JavaScript: what was chosen,
// forcing or restoring a variant by name, calibrating again. bindings/js/core/kernel-choice.js
// calls these; its own EMSCRIPTEN_BINDINGS block beside module.cpp's.
#include <emscripten/bind.h>

#include <string>

#include "mha/kernels/kernel_choice.hpp"

namespace {

// JSON: {"gemm":{"variant":"4x8","source":"calibrated","variants":[...],"gflops":[...],"calibrationMs":9.1}};
// calibrates first if nothing was chosen yet.
std::string kernelChoice() { return mha::kernels::KernelChoice::process().describe(); }

// "gemm=4x8,...": forced (saved = false) or a calibration restored from an earlier process
// (saved = true). Returns "" or why the spec was refused, naming the kernel or variant.
std::string forceKernels(const std::string& spec, bool saved) {
  return mha::kernels::KernelChoice::process().force(
      spec, saved ? mha::kernels::ChoiceSource::kSaved : mha::kernels::ChoiceSource::kForced);
}

void recalibrateKernels() { mha::kernels::KernelChoice::process().recalibrate(); }

}  // namespace

EMSCRIPTEN_BINDINGS(kernel_choice) {
  emscripten::function("kernelChoice", &kernelChoice);
  emscripten::function("forceKernels", &forceKernels);
  emscripten::function("recalibrateKernels", &recalibrateKernels);
}
