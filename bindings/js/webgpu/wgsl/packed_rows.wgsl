// The attention backward's packed query rows (attention_backward_prepare.wgsl writes them; the
// dQ, dK / dV and sinks kernels read them): per head h of batch row b and query row i, row
// (b * H + h) * L + i holds RS vec4s: q (DH4), dO (DV4), then (lse, D, 0, 0).

#include "head_sizes.wgsl"

const RS: u32 = DH4 + DV4 + 1u;
