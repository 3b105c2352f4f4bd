// The decode GEMV's variants for f16 and q4 weights (quantized_gemv.hpp states the arithmetic):
// instances of gemv_f16_tile.hpp's and gemv_q4_tile.hpp's templates, each a function over a range
// of panels. All give the reference twin's results (within its tolerance: the f16 variants of
// other depth steps sum in another order; q4's integer sums are exact in every order); which is
// fastest depends on the CPU, so kernel_choice.hpp picks one per machine.
#pragma once

#include <cstdint>

#include "quantized_gemv.hpp"

namespace mha::kernels {

struct GemvVariant {
  // f16: "<widen>[-<panels>p][-k<depths>]": the widening (widen: qsimd::widen_f16, a 16-bit
  // shuffle in wasm and the F16C conversion natively; even-odd: the halves in place, the rebias
  // out of the loop), panels sharing each broadcast of x (1 unless -2p) and depth steps per
  // iteration (2 unless -kN). q4: "<panels>p[-zp-first]": panels sharing each broadcast pair, and
  // the zero-point term starting the block's sums. The names are the same in every build.
  const char* name;
  // y[o] for the columns of panels [panel_begin, panel_end), as quantized_gemv (which calls it);
  // f16 reads x, q4 reads row. Inf/NaN inputs take the twin's float path, as quantized_gemv does.
  void (*run)(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
              int64_t panel_begin, int64_t panel_end);
};

// Every variant of this build, in a fixed order (in the scalar build each runs the twin).
const GemvVariant* gemv_f16_variants(int* count);
const GemvVariant* gemv_q4_variants(int* count);
// The kernels before the variants existed: "widen" and "1p".
const GemvVariant& gemv_f16_default_variant();
const GemvVariant& gemv_q4_default_variant();

}  // namespace mha::kernels
