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

// One kernel's entry from its variant list and default (every list is `const V* list(int* count)`).
template <class V, const V* (*List)(int*), const V& (*Default)()>
struct Listed {
  static int count() {
    int n = 0;
    List(&n);
    return n;
  }
  static const char* name(int i) {
    int n = 0;
    return List(&n)[i].name;
  }
  static int former() {
    int n = 0;
    return static_cast<int>(&Default() - List(&n));
  }
};
using Gemm = Listed<GemmVariant, gemm_variants, gemm_default_variant>;
using GemvF16 = Listed<GemvVariant, gemv_f16_variants, gemv_f16_default_variant>;
using GemvQ4 = Listed<GemvVariant, gemv_q4_variants, gemv_q4_default_variant>;
using Flash = Listed<FlashVariant, flash_variants, flash_default_variant>;
using Exp = Listed<ExpVariant, exp_variants, exp_default_variant>;

VariantCalibration gemm_calibration() {
  const GemmCalibration c = calibrate_gemm();
  int n = 0;
  return {static_cast<int>(c.best - gemm_variants(&n)), c.gflops, c.seconds, c.rounds, c.settled};
}

const KernelEntry kKernels[kKernelCount] = {
    {"gemm", Gemm::count, Gemm::name, Gemm::former, gemm_calibration},
    {"gemv_f16", GemvF16::count, GemvF16::name, GemvF16::former, calibrate_gemv_f16},
    {"gemv_q4", GemvQ4::count, GemvQ4::name, GemvQ4::former, calibrate_gemv_q4},
    {"flash", Flash::count, Flash::name, Flash::former, calibrate_flash},
    {"exp", Exp::count, Exp::name, Exp::former, calibrate_exp},
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
