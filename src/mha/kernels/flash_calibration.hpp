// Which flash-attention variant (flash_variants.hpp) and which exp scheme (exp_variants.hpp) are
// fastest on this machine, measured on small problems that stay in cache: one query block of one
// head against 256 keys of head dim 64 (the flash variants, each with the default exp), and the
// softmax's row step on 8 rows of 128 scores (the exps). kernel_choice.hpp runs them once per
// process, at the first attention call.
#pragma once

#include "variant_calibration.hpp"

namespace mha::kernels {

VariantCalibration calibrate_flash();  // gflops: the head's 4 L S Dh flops per second
VariantCalibration calibrate_exp();    // "gflops": billions of exps per second

}  // namespace mha::kernels
