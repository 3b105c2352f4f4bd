#include "gemm_calibration.hpp"

#include <algorithm>
#include <vector>

#include "simd.hpp"
#include "variant_calibration.hpp"

namespace mha::kernels {
namespace {

// One task of the layer's GEMM: 120 rows (a multiple of every tile's rows: 1 to 6 and 8) x one
// 512-float depth block (the x rows, 240 KB, in L2; each panel slice, 16 KB in wasm, in L1) x four
// panels, written into rows 512 floats apart as a layer's output is. With rows only the four
// panels wide (64 floats), the relaxed-SIMD build's tiles ran at half their rate in the layer
// and ranked 5x8 above 4x8, which the layer runs 20% faster on an Intel Xeon.
struct Problem {
  static constexpr int64_t kRows = 120, kDepth = 512, kPanels = 4, kOut = 512;
  std::vector<float> x, panels, bias, y;
  Problem() : x(kRows * kDepth), panels(kPanels * kDepth * simd::kTileCols), bias(kPanels * simd::kTileCols, 0.5f),
              y(kRows * kOut) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.01f - 0.06f;
    for (size_t i = 0; i < panels.size(); ++i) panels[i] = static_cast<float>(i % 7) * 0.02f - 0.06f;
  }
  double flops() const { return 2.0 * kRows * kDepth * kPanels * simd::kTileCols; }
  void run(const GemmVariant& v) {
    const int64_t out = kOut;
    for (int64_t p = 0; p < kPanels; ++p) {
      GemmPanelJob j{x.data(), kDepth, y.data() + p * simd::kTileCols, out, panels.data() + p * kDepth * simd::kTileCols,
                     bias.data() + p * simd::kTileCols, simd::kTileCols, kDepth, true, 0, kRows};
      v.panel(j);
    }
  }
};

}  // namespace

GemmCalibration calibrate_gemm() {
  int count = 0;
  const GemmVariant* variants = gemm_variants(&count);
  Problem problem;
  const VariantCalibration c = calibrate_variants(
      count, static_cast<int>(&gemm_default_variant() - variants), [&](int i) { problem.run(variants[i]); },
      problem.flops());
  return {&variants[c.best], c.rates, c.seconds, c.rounds, c.settled};
}

}  // namespace mha::kernels
