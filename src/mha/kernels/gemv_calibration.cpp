#include "gemv_calibration.hpp"

#include <vector>

#include "gemv_variants.hpp"
#include "quantized_simd.hpp"
#include "simd.hpp"

namespace mha::kernels {
namespace {

// One decode row against 8 panels x 512 depth: above the even-odd kernels' 4-panel minimum,
// 64 KB of f16 weights in wasm (in L2), quantized from a fixed pattern.
struct Problem {
  static constexpr int64_t kIn = 512, kPanels = 8, kOut = kPanels * simd::kTileCols;
  QuantizedPanels w;
  std::vector<float> x, bias, y;
  QuantizedRow row;
  explicit Problem(WeightDtype dtype) : x(kIn), bias(kOut, 0.5f), y(kOut) {
    std::vector<float> weights(kOut * kIn);
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 7) * 0.02f - 0.06f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.01f - 0.06f;
    w = QuantizedPanels(quantize_matrix(dtype, weights.data(), kOut, kIn));
    quantize_activation_row(x.data(), kIn, row);
  }
  double flops() const { return 2.0 * kIn * kOut; }
};

VariantCalibration calibrate(WeightDtype dtype, const GemvVariant* variants, int count, const GemvVariant& former) {
#if !MHA_QGEMV  // (the scalar build: every name runs the twin, nothing to choose)
  (void)dtype, (void)count;
  VariantCalibration none;
  none.best = static_cast<int>(&former - variants);
  none.settled = true;
  return none;
#endif
  Problem p(dtype);
  return calibrate_variants(
      count, static_cast<int>(&former - variants),
      [&](int i) { variants[i].run(p.w, p.x.data(), p.row, p.bias.data(), p.y.data(), 0, Problem::kPanels); }, p.flops());
}

}  // namespace

VariantCalibration calibrate_gemv_f16() {
  int count = 0;
  const GemvVariant* v = gemv_f16_variants(&count);
  return calibrate(WeightDtype::kF16, v, count, gemv_f16_default_variant());
}

VariantCalibration calibrate_gemv_q4() {
  int count = 0;
  const GemvVariant* v = gemv_q4_variants(&count);
  return calibrate(WeightDtype::kQ4, v, count, gemv_q4_default_variant());
}

}  // namespace mha::kernels
