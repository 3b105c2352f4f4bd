// Google Benchmark of one fp32 forward pass of the layer (projections included, no weights),
// per shape and thread count. bench/run.mjs runs it once per shape (so peak RSS is per shape)
// with --benchmark_format=json; by hand:
//   build/native/mha_bench --benchmark_filter='forward/1/128/128/512/8/1'
// The training rows (bench/training.mjs): training_forward and training_step (forward with
// what backward needs, then backward), args B, L, E, H, head size, threads:
//   build/native/mha_bench --benchmark_filter='training_step/64/32/100/4/128/1'
// Args: B, L, S, E, H, threads. GFLOPS counts 8*B*L*E^2 + 4*B*L*S*E (self: 4BLE^2 + 4BSE^2 ...
// written for the general case: q/out projections over L rows, k/v over S rows).
#include <Eigen/Dense>
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "mha/layer/multihead_attention.hpp"
#include "mha/layer/saved_forward.hpp"

namespace {

double forward_flops(int64_t B, int64_t L, int64_t S, int64_t E) {
  return 4.0 * B * L * E * E + 4.0 * B * S * E * E + 4.0 * B * L * S * E;
}

// bench/shapes.mjs's randomArray: uniform in [-0.5, 0.5) from a Park-Miller sequence, times
// `scale`, rounded to float as the JS does. The native rows compute on the very numbers the
// peers (and the wasm rows) get.
std::vector<float> bench_array(size_t n, int64_t seed, double scale = 1.0) {
  std::vector<float> v(n);
  int64_t s = seed;
  for (float& x : v) {
    s = s * 48271 % 2147483647;
    x = static_cast<float>(static_cast<double>(static_cast<float>(static_cast<double>(s) / 2147483647 - 0.5)) * scale);
  }
  return v;
}

void report_memory(benchmark::State& state) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void forward(benchmark::State& state) {
  const int64_t B = state.range(0), L = state.range(1), S = state.range(2), E = state.range(3), H = state.range(4);
  const int threads = static_cast<int>(state.range(5));
  mha::AttentionConfig config;
  config.embed_dim = E;
  config.num_heads = H;
  mha::MultiheadAttention layer(config);
  // benchWeights(E) of bench/shapes.mjs: PyTorch-like scale, so the softmax stays spread.
  const double w_scale = 2 / std::sqrt(static_cast<double>(E));
  const auto in_w = bench_array(3 * E * E, 1, w_scale), in_b = bench_array(3 * E, 2, 0.1);
  const auto out_w = bench_array(E * E, 3, w_scale), out_b = bench_array(E, 4, 0.1);
  layer.load_state_dict({{"in_proj_weight", {in_w.data(), 3 * E * E}},
                         {"in_proj_bias", {in_b.data(), 3 * E}},
                         {"out_proj.weight", {out_w.data(), E * E}},
                         {"out_proj.bias", {out_b.data(), E}}});
  if (threads > 1) layer.set_thread_pool(std::make_shared<mha::ThreadPool>(threads));
  const auto query = bench_array(B * L * E, 11), key = bench_array(B * S * E, 12);
  const mha::TensorRef q{query.data(), {B, L, E}};
  const mha::TensorRef k = S == L ? mha::TensorRef{} : mha::TensorRef{key.data(), {B, S, E}};
  // Warm-up, as the JS peers get: the first call allocates (and page-faults) the layer's buffers.
  for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(layer.forward(q, k, k).output.data());
  double checksum = 0;
  for (auto _ : state) {
    mha::ForwardResult r = layer.forward(q, k, k);
    benchmark::DoNotOptimize(r.output.data());
    checksum = static_cast<double>(r.output.front()) + r.output.back();
  }
  state.counters["checksum"] = checksum;  // out[0] + out[last], as bench/worker.mjs prints
  state.counters["GFLOPS"] = benchmark::Counter(forward_flops(B, L, S, E) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  report_memory(state);
}

// The same forward pass as a C++ developer would write it with Eigen (float32): Eigen GEMMs for
// the projections and, per head, Q·Kᵀ and P·V; a row softmax with Eigen arrays; Eigen's own
// threads (OpenMP) for the products. The peer column "Eigen" of bench/run.mjs.
void eigen_forward(benchmark::State& state) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t B = state.range(0), L = state.range(1), S = state.range(2), E = state.range(3), H = state.range(4);
  const int threads = static_cast<int>(state.range(5)), Dh = static_cast<int>(E / H);
  Eigen::setNbThreads(threads);
  const double w_scale = 2 / std::sqrt(static_cast<double>(E));
  const auto in_w = bench_array(3 * E * E, 1, w_scale), in_b = bench_array(3 * E, 2, 0.1);
  const auto out_w = bench_array(E * E, 3, w_scale), out_b = bench_array(E, 4, 0.1);
  const auto map = [](const std::vector<float>& v, int64_t rows, int64_t cols, int64_t offset = 0) {
    return Eigen::Map<const Matrix>(v.data() + offset, rows, cols);
  };
  const Matrix wq = map(in_w, E, E), wk = map(in_w, E, E, E * E), wv = map(in_w, E, E, 2 * E * E), wo = map(out_w, E, E);
  const Eigen::RowVectorXf bq = map(in_b, 1, E), bk = map(in_b, 1, E, E), bv = map(in_b, 1, E, 2 * E), bo = map(out_b, 1, E);
  const auto query = bench_array(B * L * E, 11), key = bench_array(B * S * E, 12);
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  Matrix out(B * L, E), p(L, S);  // p reused: a fresh L x S matrix per head would page-fault (VM: ~12 us/page)
  const auto run = [&] {
    for (int64_t b = 0; b < B; ++b) {
      const auto xq = map(query, L, E, b * L * E);
      const auto xk = S == L ? map(query, L, E, b * L * E) : map(key, S, E, b * S * E);
      const Matrix q = (xq * wq.transpose()).rowwise() + bq;
      const Matrix k = (xk * wk.transpose()).rowwise() + bk;
      const Matrix v = (xk * wv.transpose()).rowwise() + bv;
      Matrix attended(L, E);
      for (int64_t h = 0; h < H; ++h) {
        p.noalias() = q.middleCols(h * Dh, Dh) * k.middleCols(h * Dh, Dh).transpose() * scale;
        const Eigen::VectorXf row_max = p.rowwise().maxCoeff();  // evaluated once, not per element
        p.array() = (p.colwise() - row_max).array().exp();
        const Eigen::VectorXf row_sum = p.rowwise().sum();
        p.array().colwise() /= row_sum.array();
        attended.middleCols(h * Dh, Dh).noalias() = p * v.middleCols(h * Dh, Dh);
      }
      out.middleRows(b * L, L) = (attended * wo.transpose()).rowwise() + bo;
    }
  };
  for (int i = 0; i < 2; ++i) run();
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["checksum"] = static_cast<double>(out(0, 0)) + out(B * L - 1, E - 1);
  state.counters["GFLOPS"] = benchmark::Counter(forward_flops(B, L, S, E) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The machine's fused multiply-add peak: independent accumulators that stay in registers, on
// `threads` threads at once. bench/run.mjs prints each native row's share of it.
void fma_peak(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr int kAccumulators = 12, kSteps = 1 << 20;
  using Vec = float __attribute__((vector_size(64)));  // 16 lanes (AVX-512); narrower ISAs split it
  const auto work = [] {
    Vec acc[kAccumulators];
    for (int a = 0; a < kAccumulators; ++a) acc[a] = Vec{} + static_cast<float>(a);
    const Vec m = Vec{} + 0.999999f, c = Vec{} + 1e-7f;
    for (int i = 0; i < kSteps; ++i)
      for (int a = 0; a < kAccumulators; ++a) acc[a] = acc[a] * m + c;
    float sum = 0;
    for (int a = 0; a < kAccumulators; ++a) sum += acc[a][0];
    benchmark::DoNotOptimize(sum);
  };
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  const double flops = 2.0 * 16 * kAccumulators * static_cast<double>(kSteps) * threads;
  state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The training table's layer (bench/shapes.mjs trainingWeights): self-attention with H heads of
// size Dh, weights in the separate q/k/v form from one [3·H·Dh, E] block, scaled as benchWeights.
struct TrainingSetup {
  int64_t B, L, E, H, Dh;
  std::vector<float> in_w, in_b, out_w, out_b, x, d_output;
  std::unique_ptr<mha::MultiheadAttention> layer;

  explicit TrainingSetup(const benchmark::State& state)
      : B(state.range(0)), L(state.range(1)), E(state.range(2)), H(state.range(3)), Dh(state.range(4)) {
    const int64_t qd = H * Dh;
    mha::AttentionConfig config;
    config.embed_dim = E;
    config.num_heads = H;
    if (qd != E) config.head_dim = Dh;
    layer = std::make_unique<mha::MultiheadAttention>(config);
    in_w = bench_array(3 * qd * E, 1, 2 / std::sqrt(static_cast<double>(E)));
    in_b = bench_array(3 * qd, 2, 0.1);
    out_w = bench_array(E * qd, 3, 2 / std::sqrt(static_cast<double>(qd)));
    out_b = bench_array(E, 4, 0.1);
    layer->load_state_dict({{"q_proj_weight", {in_w.data(), qd * E}},
                            {"k_proj_weight", {in_w.data() + qd * E, qd * E}},
                            {"v_proj_weight", {in_w.data() + 2 * qd * E, qd * E}},
                            {"in_proj_bias", {in_b.data(), 3 * qd}},
                            {"out_proj.weight", {out_w.data(), E * qd}},
                            {"out_proj.bias", {out_b.data(), E}}});
    const int threads = static_cast<int>(state.range(5));
    if (threads > 1) layer->set_thread_pool(std::make_shared<mha::ThreadPool>(threads));
    x = bench_array(B * L * E, 11);
    d_output = bench_array(B * L * E, 13);  // G of loss = sum(output * G)
  }
  mha::TensorRef input() const { return {x.data(), {B, L, E}}; }

  // Forward FLOPs: the four projections and 4·L·S·Dh per head; backward: twice the projections
  // and 10·L·S·Dh per head (issue 22's count, the scores recomputed).
  double projection_flops() const { return 8.0 * B * L * E * H * Dh; }
  double attention_flops() const { return static_cast<double>(B) * H * L * L * Dh; }
  double forward_flops() const { return projection_flops() + 4 * attention_flops(); }
  double backward_flops() const { return 2 * projection_flops() + 10 * attention_flops(); }
};

// The training table's "forward alone": the same layer's plain forward pass.
void training_forward(benchmark::State& state) {
  TrainingSetup t(state);
  for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(t.layer->forward(t.input(), {}, {}).output.data());
  for (auto _ : state) {
    mha::ForwardResult r = t.layer->forward(t.input(), {}, {});
    benchmark::DoNotOptimize(r.output.data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(t.forward_flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  report_memory(state);
}

// One training step of the layer: forward with what backward needs, then the gradients of the
// input and of every parameter for dLoss/dOutput = G.
void training_step(benchmark::State& state) {
  TrainingSetup t(state);
  const mha::ForwardOptions options;
  const auto step = [&] {
    mha::MultiheadAttention::TrainingForward f = t.layer->forward_for_training(t.input(), {}, {}, options);
    return t.layer->backward(*f.saved, t.d_output.data());
  };
  for (int i = 0; i < 2; ++i) benchmark::DoNotOptimize(step().query.data());
  double d_x_sum = 0, d_out_weight_sum = 0;
  for (auto _ : state) {
    mha::Gradients g = step();
    benchmark::DoNotOptimize(g.query.data());
    d_x_sum = 0;
    for (float v : g.query) d_x_sum += v;
    d_out_weight_sum = 0;
    for (float v : g.params.out_weight) d_out_weight_sum += v;
  }
  // bench/training.mjs compares these with the other implementations' (sum(dx), sum(d out_proj.weight)).
  state.counters["check_dx"] = d_x_sum;
  state.counters["check_dwo"] = d_out_weight_sum;
  state.counters["GFLOPS"] = benchmark::Counter((t.forward_flops() + t.backward_flops()) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  report_memory(state);
}

// Each shape once per thread count (the last argument).
void with_threads(benchmark::internal::Benchmark* b, const std::vector<std::vector<int64_t>>& list) {
  for (int threads : {1, 2})
    for (auto s : list) {
      s.push_back(threads);
      b->Args(s);
    }
}

void training_shapes(benchmark::internal::Benchmark* b) {
  // bench/shapes.mjs TRAINING_SHAPES: the self-attention shapes, then the Keras tutorial's layer.
  with_threads(b, {{1, 128, 512, 8, 64}, {1, 512, 768, 12, 64}, {1, 2048, 512, 8, 64},
                   {8, 64, 256, 4, 64},  {1, 4096, 256, 4, 64}, {64, 32, 100, 4, 128}});
}

void shapes(benchmark::internal::Benchmark* b) {
  with_threads(b, {{1, 128, 128, 512, 8}, {1, 512, 512, 768, 12}, {1, 2048, 2048, 512, 8},
                   {8, 64, 64, 256, 4},   {1, 4096, 4096, 256, 4}, {1, 256, 1024, 512, 8}});
}

}  // namespace

BENCHMARK(forward)->Apply(shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(eigen_forward)->Apply(shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(training_forward)->Apply(training_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(training_step)->Apply(training_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(fma_peak)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
