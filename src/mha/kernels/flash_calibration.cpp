#include "flash_calibration.hpp"

#include <vector>

#include "attention_kernel.hpp"
#include "exp_variants.hpp"
#include "flash_variants.hpp"

namespace mha::kernels {
namespace {

std::vector<float> filler(size_t n, int mod, float step, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i % mod)) * step + offset;
  return v;
}

// One query block (the rows a thread takes at a time) of one head against 256 keys, head dim 64,
// no masks: q, k, v and the packed keys (~200 KB) in L2.
struct FlashProblem {
  static constexpr int64_t kKeys = 256, kDh = 64;
  const int64_t rows = attention_query_block();
  std::vector<float> q = filler(rows * kDh, 13, 0.05f, -0.3f), k = filler(kKeys * kDh, 11, 0.04f, -0.2f),
                     v = filler(kKeys * kDh, 7, 0.1f, -0.3f), out = std::vector<float>(rows * kDh), scratch;
  AttentionHeadArgs a{};
  FlashProblem() {
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.out = out.data();
    a.q_stride = a.k_stride = a.v_stride = a.out_stride = kDh;
    a.query_len = rows;
    a.key_len = kKeys;
    a.head_dim = kDh;
    a.scale = 0.125f;
    scratch.resize(static_cast<size_t>(attention_scratch_floats(a)));
    a.scratch = scratch.data();
  }
  double flops() const { return 4.0 * rows * kKeys * kDh; }
};

}  // namespace

VariantCalibration calibrate_flash() {
  int count = 0;
  const FlashVariant* variants = flash_variants(&count);
  FlashProblem problem;
  const int def = static_cast<int>(&flash_default_variant() - variants);
  const ExpScheme exp = exp_default_variant().scheme;
  return calibrate_variants(count, def, [&](int i) { variants[i].run(problem.a, exp); }, problem.flops());
}

VariantCalibration calibrate_exp() {
  int count = 0;
  const ExpVariant* variants = exp_variants(&count);
  constexpr int64_t kRows = 8, kKeys = 128;
  const std::vector<float> s = filler(kRows * kKeys, 97, -0.1f, 0.0f);  // 0 down to -9.6
  std::vector<float> p(kRows * kKeys);
  float sink = 0;
  const int def = static_cast<int>(&exp_default_variant() - variants);
  VariantCalibration c = calibrate_variants(count, def, [&](int i) {
    for (int64_t r = 0; r < kRows; ++r) sink += variants[i].row(s.data() + r * kKeys, 0.0f, p.data() + r * kKeys, kKeys);
  }, 1.0 * kRows * kKeys);
  if (sink == -1.0f) c.rounds = -1;  // (keeps the sums live)
  return c;
}

}  // namespace mha::kernels
