// The two micro-kernels on their own, one thread: the projection GEMM (PackedLinear) and the
// flash-attention kernel of one head. Built for wasm and natively by bench/kernels/run.sh
// (`npm run bench:kernels`); prints one row per kernel: shape, ms (best of 15 after warm-up), GFLOPS.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/packed_linear.hpp"

namespace {

std::vector<float> uniform(size_t n, unsigned seed, float limit) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-limit, limit);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void report(const char* kernel, const char* shape, double flops, const std::function<void()>& run) {
  for (int i = 0; i < 3; ++i) run();
  double best = 1e30;
  for (int i = 0; i < 15; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("| %s | %s | %.2f | %.1f |\n", kernel, shape, best * 1e3, flops / best * 1e-9);
}

}  // namespace

int main() {
  std::printf("| kernel | shape | ms | GFLOPS |\n|---|---|---:|---:|\n");
  {
    const int64_t M = 512, K = 512, N = 512;
    const auto w = uniform(N * K, 1, 0.05f), b = uniform(N, 2, 0.1f), x = uniform(M * K, 3, 0.5f);
    std::vector<float> y(M * N);
    const mha::kernels::PackedLinear linear(w.data(), b.data(), N, K);
    report("projection GEMM (PackedLinear::apply)", "512 x 512 x 512", 2.0 * M * K * N,
           [&] { linear.apply(x.data(), y.data(), 0, M); });
  }
  {
    const int64_t L = 2048, S = 2048, Dh = 64;
    const auto q = uniform(L * Dh, 4, 1.0f), k = uniform(S * Dh, 5, 1.0f), v = uniform(S * Dh, 6, 1.0f);
    std::vector<float> out(L * Dh);
    mha::kernels::AttentionHeadArgs a{};
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.out = out.data();
    a.q_stride = a.k_stride = a.v_stride = a.out_stride = Dh;
    a.query_len = L;
    a.key_len = S;
    a.head_dim = Dh;
    a.scale = 0.125f;
    std::vector<float> scratch(mha::kernels::attention_scratch_floats(a));
    a.scratch = scratch.data();
    report("flash attention, one head (attention_head_flash)", "L = S = 2048, head dim 64", 4.0 * L * S * Dh,
           [&] { mha::kernels::attention_head_flash(a); });
  }
}
