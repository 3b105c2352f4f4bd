// Which f16 and which q4 decode GEMV variant (gemv_variants.hpp) is fastest on this machine: each
// on one row against 64 x 512 weights (8 panels of the wasm build; natively 8 panels of its wider
// vectors), in cache, a few milliseconds for all (variant_calibration.hpp). Rates in GFLOPS (two
// per weight). kernel_choice.hpp runs each once per process, at its kernel's first use.
#pragma once

#include "variant_calibration.hpp"

namespace mha::kernels {

VariantCalibration calibrate_gemv_f16();
VariantCalibration calibrate_gemv_q4();

}  // namespace mha::kernels
