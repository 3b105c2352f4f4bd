#include "kernel_choice.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "flash_calibration.hpp"
#include "gemm_calibration.hpp"

namespace mha::kernels {
namespace {

// One kernel with variants: its name, its variants' names, its default and its calibration.
struct KernelEntry {
  const char* name;
  int (*count)();
  const char* (*variant_name)(int);
  int (*default_index)();
  VariantCalibration (*calibrate)();
};

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
  static int default_index() {
    int n = 0;
    return static_cast<int>(&Default() - List(&n));
  }
};

VariantCalibration gemm_calibration() {
  const GemmCalibration g = calibrate_gemm();
  int n = 0;
  return {static_cast<int>(g.best - gemm_variants(&n)), g.gflops, g.seconds, g.rounds, g.settled};
}

using Gemm = Listed<GemmVariant, gemm_variants, gemm_default_variant>;
using Flash = Listed<FlashVariant, flash_variants, flash_default_variant>;
using Exp = Listed<ExpVariant, exp_variants, exp_default_variant>;

// In Kernel's order.
constexpr KernelEntry kKernelTable[] = {
    {"gemm", Gemm::count, Gemm::name, Gemm::default_index, gemm_calibration},
    {"flash", Flash::count, Flash::name, Flash::default_index, calibrate_flash},
    {"exp", Exp::count, Exp::name, Exp::default_index, calibrate_exp},
};
static_assert(sizeof kKernelTable / sizeof kKernelTable[0] == static_cast<size_t>(Kernel::kCount));

std::string known_variants(const KernelEntry& k) {
  std::string names;
  for (int i = 0; i < k.count(); ++i) names += (i ? ", " : "") + std::string(k.variant_name(i));
  return names;
}

std::string known_kernels() {
  std::string names;
  for (const KernelEntry& k : kKernelTable) names += (names.empty() ? "" : ", ") + std::string(k.name);
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
    int k = 0;
    while (k < kKernels && kernel != kKernelTable[k].name) ++k;
    if (k == kKernels) return "unknown kernel '" + kernel + "' in '" + spec + "'; known kernels: " + known_kernels();
    const KernelEntry& entry = kKernelTable[k];
    int v = 0;
    while (v < entry.count() && name != entry.variant_name(v)) ++v;
    if (v == entry.count()) return "unknown " + kernel + " variant '" + name + "'; known: " + known_variants(entry);
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

int KernelChoice::calibrate_once(int kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& s = slots_[kernel];
  if (const int i = s.chosen.load(std::memory_order_acquire); i >= 0) return i;  // another thread did it
  const VariantCalibration c = kKernelTable[kernel].calibrate();
  s.source = ChoiceSource::kCalibrated;
  s.gflops = c.gflops;
  s.calibration_ms = c.seconds * 1e3;
  s.settled = c.settled;
  s.chosen.store(c.best, std::memory_order_release);
  return c.best;
}

std::string KernelChoice::describe() {
  int chosen[kKernels];
  for (int k = 0; k < kKernels; ++k) chosen[k] = index(static_cast<Kernel>(k));
  std::lock_guard<std::mutex> lock(mutex_);
  std::string json = "{";
  char number[32];
  for (int k = 0; k < kKernels; ++k) {
    const KernelEntry& entry = kKernelTable[k];
    const Slot& s = slots_[k];
    std::string names, rates;
    for (int i = 0; i < entry.count(); ++i) names += (i ? ",\"" : "\"") + std::string(entry.variant_name(i)) + "\"";
    for (size_t i = 0; i < s.gflops.size(); ++i) {
      std::snprintf(number, sizeof number, "%s%.2f", i ? "," : "", s.gflops[i]);
      rates += number;
    }
    std::snprintf(number, sizeof number, "%.2f", s.calibration_ms);
    json += std::string(k ? "," : "") + "\"" + entry.name + "\":{\"variant\":\"" + entry.variant_name(chosen[k]) +
            "\",\"source\":\"" + source_name(s.source) + "\",\"variants\":[" + names + "],\"gflops\":[" + rates +
            "],\"calibrationMs\":" + number + ",\"settled\":" + (s.settled ? "true" : "false") + "}";
  }
  return json + "}";
}

}  // namespace mha::kernels
