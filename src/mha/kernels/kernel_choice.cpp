#include "kernel_choice.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "gemm_calibration.hpp"

namespace mha::kernels {
namespace {

std::string known_gemm_variants() {
  int count = 0;
  const GemmVariant* v = gemm_variants(&count);
  std::string names;
  for (int i = 0; i < count; ++i) names += (i ? ", " : "") + std::string(v[i].name);
  return names;
}

const char* source_name(ChoiceSource s) {
  return s == ChoiceSource::kForced ? "forced" : s == ChoiceSource::kSaved ? "saved" : "calibrated";
}

}  // namespace

KernelChoice& KernelChoice::process() {
  static KernelChoice& choice = [] () -> KernelChoice& {
    static KernelChoice c;
#ifndef __EMSCRIPTEN__  // (in wasm the JS reads the variable and calls force())
    if (const char* spec = std::getenv("MHA_KERNELS")) {
      const std::string error = c.force(spec);
      if (!error.empty()) throw std::invalid_argument("MHA_KERNELS: " + error);
    }
#endif
    return c;
  }();
  return choice;
}

std::string KernelChoice::force(const std::string& spec, ChoiceSource source) {
  std::vector<const GemmVariant*> gemm;  // checked whole before anything changes
  size_t begin = 0;
  while (begin < spec.size()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string pair = spec.substr(begin, end - begin);
    begin = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string kernel = pair.substr(0, eq), name = eq == std::string::npos ? "" : pair.substr(eq + 1);
    if (kernel != "gemm") return "unknown kernel '" + kernel + "' in '" + spec + "'; known kernels: gemm";
    const GemmVariant* v = find_gemm_variant(name.c_str());
    if (!v) return "unknown gemm variant '" + name + "'; known: " + known_gemm_variants();
    gemm.push_back(v);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const GemmVariant* v : gemm) {
    gemm_source_ = source;
    gemm_gflops_.clear();
    calibration_ms_ = 0;
    settled_ = false;
    gemm_.store(v, std::memory_order_release);
  }
  return "";
}

void KernelChoice::recalibrate() {
  std::lock_guard<std::mutex> lock(mutex_);
  gemm_.store(nullptr, std::memory_order_release);
}

const GemmVariant& KernelChoice::calibrate_gemm_once() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const GemmVariant* v = gemm_.load(std::memory_order_acquire)) return *v;  // another thread did it
  const GemmCalibration c = calibrate_gemm();
  gemm_source_ = ChoiceSource::kCalibrated;
  gemm_gflops_ = c.gflops;
  calibration_ms_ = c.seconds * 1e3;
  settled_ = c.settled;
  gemm_.store(c.best, std::memory_order_release);
  return *c.best;
}

std::string KernelChoice::describe() {
  const GemmVariant& chosen = gemm();
  std::lock_guard<std::mutex> lock(mutex_);
  int count = 0;
  const GemmVariant* v = gemm_variants(&count);
  std::string names, rates;
  for (int i = 0; i < count; ++i) names += (i ? ",\"" : "\"") + std::string(v[i].name) + "\"";
  char number[32];
  for (size_t i = 0; i < gemm_gflops_.size(); ++i) {
    std::snprintf(number, sizeof number, "%s%.2f", i ? "," : "", gemm_gflops_[i]);
    rates += number;
  }
  std::snprintf(number, sizeof number, "%.2f", calibration_ms_);
  return std::string("{\"gemm\":{\"variant\":\"") + chosen.name + "\",\"source\":\"" + source_name(gemm_source_) +
         "\",\"variants\":[" + names + "],\"gflops\":[" + rates + "],\"calibrationMs\":" + number +
         ",\"settled\":" + (settled_ ? "true" : "false") + "}}";
}

}  // namespace mha::kernels
