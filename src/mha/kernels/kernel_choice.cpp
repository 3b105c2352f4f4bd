#include "kernel_choice.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "flash_calibration.hpp"
#include "gemm_calibration.hpp"
#include "gemv_calibration.hpp"

namespace mha::kernels {
namespace {

// One row per kernel with variants, in enum Kernel's order: its name (in MHA_KERNELS, init's
// `kernels` and describe()), its variants' names, its former kernel and its calibration.
struct KernelEntry {
  const char* name;
  int (*count)();
  const char* (*variant_name)(int i);
  int (*former)();
  VariantCalibration (*calibrate)();
};

template <const GemvVariant* (*List)(int*)>
int gemv_count() {
  int n = 0;
  List(&n);
  return n;
}
template <const GemvVariant* (*List)(int*)>
const char* gemv_name(int i) {
  int n = 0;
  return List(&n)[i].name;
}

const KernelEntry kKernels[kKernelCount] = {
    {"gemm",
     [] { int n = 0; gemm_variants(&n); return n; },
     [](int i) { int n = 0; return gemm_variants(&n)[i].name; },
     [] { int n = 0; return static_cast<int>(&gemm_default_variant() - gemm_variants(&n)); },
     [] {
       int n = 0;
       const GemmCalibration c = calibrate_gemm();
       return VariantCalibration{static_cast<int>(c.best - gemm_variants(&n)), c.gflops, c.seconds, c.rounds, c.settled};
     }},
    {"gemv_f16", &gemv_count<gemv_f16_variants>, &gemv_name<gemv_f16_variants>,
     [] { int n = 0; return static_cast<int>(&gemv_f16_default_variant() - gemv_f16_variants(&n)); },
     &calibrate_gemv_f16},
    {"gemv_q4", &gemv_count<gemv_q4_variants>, &gemv_name<gemv_q4_variants>,
     [] { int n = 0; return static_cast<int>(&gemv_q4_default_variant() - gemv_q4_variants(&n)); },
     &calibrate_gemv_q4},
    {"flash",
     [] { int n = 0; flash_variants(&n); return n; },
     [](int i) { int n = 0; return flash_variants(&n)[i].name; },
     [] { int n = 0; return static_cast<int>(&flash_default_variant() - flash_variants(&n)); },
     &calibrate_flash},
    {"exp",
     [] { int n = 0; exp_variants(&n); return n; },
     [](int i) { int n = 0; return exp_variants(&n)[i].name; },
     [] { int n = 0; return static_cast<int>(&exp_default_variant() - exp_variants(&n)); },
     &calibrate_exp},
};

std::string known_kernels() {
  std::string names;
  for (int k = 0; k < kKernelCount; ++k) names += (k ? ", " : "") + std::string(kKernels[k].name);
  return names;
}

std::string known_variants(const KernelEntry& e) {
  std::string names;
  for (int i = 0; i < e.count(); ++i) names += (i ? ", " : "") + std::string(e.variant_name(i));
  return names;
}

int find_kernel(const std::string& name) {
  for (int k = 0; k < kKernelCount; ++k)
    if (name == kKernels[k].name) return k;
  return -1;
}

int find_variant(const KernelEntry& e, const std::string& name) {
  for (int i = 0; i < e.count(); ++i)
    if (name == e.variant_name(i)) return i;
  return -1;
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
  std::vector<std::pair<int, int>> chosen;  // (kernel, variant), checked whole before anything changes
  size_t begin = 0;
  while (begin < spec.size()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string pair = spec.substr(begin, end - begin);
    begin = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string kernel = pair.substr(0, eq), name = eq == std::string::npos ? "" : pair.substr(eq + 1);
    const int k = find_kernel(kernel);
    if (k < 0) return "unknown kernel '" + kernel + "' in '" + spec + "'; known kernels: " + known_kernels();
    const int v = find_variant(kKernels[k], name);
    if (v < 0) return "unknown " + kernel + " variant '" + name + "'; known: " + known_variants(kKernels[k]);
    chosen.emplace_back(k, v);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [k, v] : chosen) {
    Slot& s = slots_[k];
    s.source = source;
    s.gflops.clear();
    s.calibration_ms = 0;
    s.settled = false;
    s.chosen.store(v, std::memory_order_release);
  }
  return "";
}

void KernelChoice::recalibrate() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Slot& s : slots_) s.chosen.store(-1, std::memory_order_release);
}

int KernelChoice::calibrate_once(Kernel kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& s = slots_[static_cast<int>(kernel)];
  if (const int v = s.chosen.load(std::memory_order_acquire); v >= 0) return v;  // another thread did it
  const VariantCalibration c = kKernels[static_cast<int>(kernel)].calibrate();
  s.source = ChoiceSource::kCalibrated;
  s.gflops = c.rates;
  s.calibration_ms = c.seconds * 1e3;
  s.settled = c.settled;
  s.chosen.store(c.best, std::memory_order_release);
  return c.best;
}

std::string KernelChoice::describe() {
  for (int k = 0; k < kKernelCount; ++k) variant(static_cast<Kernel>(k));  // (calibrates what was not chosen)
  std::lock_guard<std::mutex> lock(mutex_);
  std::string json = "{";
  char number[32];
  for (int k = 0; k < kKernelCount; ++k) {
    const KernelEntry& e = kKernels[k];
    const Slot& s = slots_[k];
    std::string names, rates;
    for (int i = 0; i < e.count(); ++i) names += (i ? ",\"" : "\"") + std::string(e.variant_name(i)) + "\"";
    for (size_t i = 0; i < s.gflops.size(); ++i) {
      std::snprintf(number, sizeof number, "%s%.2f", i ? "," : "", std::isfinite(s.gflops[i]) ? s.gflops[i] : 0.0);  // (JSON has no inf)
      rates += number;
    }
    std::snprintf(number, sizeof number, "%.2f", s.calibration_ms);
    json += std::string(k ? "," : "") + "\"" + e.name + "\":{\"variant\":\"" +
            e.variant_name(s.chosen.load(std::memory_order_acquire)) + "\",\"source\":\"" + source_name(s.source) +
            "\",\"variants\":[" + names + "],\"gflops\":[" + rates + "],\"calibrationMs\":" + number +
            ",\"settled\":" + (s.settled ? "true" : "false") + "}";
  }
  return json + "}";
}

}  // namespace mha::kernels
