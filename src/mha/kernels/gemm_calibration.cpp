#include "gemm_calibration.hpp"

#include <algorithm>
#include <vector>

#include "simd.hpp"
#include "variant_calibration.hpp"

namespace mha::kernels {
namespace {

// 120 rows (a multiple of every tile's rows: 1 to 6 and 8) x 256 depth x two panels:
// the x rows (120 KB) in L2, the panels (16 KB wasm) in L1, like one task of the layer's GEMM.
struct Problem {
  static constexpr int64_t kRows = 120, kDepth = 256, kPanels = 2;
  std::vector<float> x, panels, bias, y;
  Problem() : x(kRows * kDepth), panels(kPanels * kDepth * simd::kTileCols), bias(kPanels * simd::kTileCols, 0.5f),
              y(kRows * kPanels * simd::kTileCols) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.01f - 0.06f;
    for (size_t i = 0; i < panels.size(); ++i) panels[i] = static_cast<float>(i % 7) * 0.02f - 0.06f;
  }
  double flops() const { return 2.0 * kRows * kDepth * kPanels * simd::kTileCols; }
  void run(const GemmVariant& v) {
    const int64_t out = kPanels * simd::kTileCols;
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
