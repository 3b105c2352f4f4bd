// Google Benchmark of one fp32 forward pass of the layer (projections included, no weights),
// per shape and thread count. bench/run.mjs runs it once per shape (so peak RSS is per shape)
// with --benchmark_format=json; by hand:
//   build/native/mha_bench --benchmark_filter='forward/1/128/128/512/8/1'
// Args: B, L, S, E, H, threads. GFLOPS counts 8*B*L*E^2 + 4*B*L*S*E (self: 4BLE^2 + 4BSE^2 ...
// written for the general case: q/out projections over L rows, k/v over S rows).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <memory>
#include <random>
#include <vector>

#include "mha/multihead_attention.hpp"

namespace {

double forward_flops(int64_t B, int64_t L, int64_t S, int64_t E) {
  return 4.0 * B * L * E * E + 4.0 * B * S * E * E + 4.0 * B * L * S * E;
}

std::vector<float> random_vector(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void forward(benchmark::State& state) {
  const int64_t B = state.range(0), L = state.range(1), S = state.range(2), E = state.range(3), H = state.range(4);
  const int threads = static_cast<int>(state.range(5));
  mha::AttentionConfig config;
  config.embed_dim = E;
  config.num_heads = H;
  mha::MultiheadAttention layer(config);
  const auto in_w = random_vector(3 * E * E, 1), in_b = random_vector(3 * E, 2);
  const auto out_w = random_vector(E * E, 3), out_b = random_vector(E, 4);
  layer.load_state_dict({{"in_proj_weight", {in_w.data(), 3 * E * E}},
                         {"in_proj_bias", {in_b.data(), 3 * E}},
                         {"out_proj.weight", {out_w.data(), E * E}},
                         {"out_proj.bias", {out_b.data(), E}}});
  if (threads > 1) layer.set_thread_pool(std::make_shared<mha::ThreadPool>(threads));
  const auto query = random_vector(B * L * E, 5), key = random_vector(B * S * E, 6);
  const mha::TensorRef q{query.data(), {B, L, E}};
  const mha::TensorRef k = S == L ? mha::TensorRef{} : mha::TensorRef{key.data(), {B, S, E}};
  for (auto _ : state) {
    mha::ForwardResult r = layer.forward(q, k, k);
    benchmark::DoNotOptimize(r.output.data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(forward_flops(B, L, S, E) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void shapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::vector<int64_t>> list = {
      {1, 128, 128, 512, 8}, {1, 512, 512, 768, 12}, {1, 2048, 2048, 512, 8},
      {8, 64, 64, 256, 4},   {1, 4096, 4096, 256, 4}, {1, 256, 1024, 512, 8}};
  for (int threads : {1, 2})
    for (auto s : list) {
      s.push_back(threads);
      b->Args(s);
    }
}

}  // namespace

BENCHMARK(forward)->Apply(shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
