// The micro-kernels on their own, one thread: the mul + add chain limit, every GEMM variant (and
// which one this process's calibration picked), the projection GEMM (PackedLinear) and the
// flash-attention kernel of one head, forward and backward. Built for wasm and natively by bench/kernels/run.sh
// (`npm run bench:kernels`); prints one row per kernel: shape, ms (the best wall time of 15 calls
// after warm-up), GFLOPS, and the same from the best CPU time of this process (CPU ms), which
// other jobs on a shared machine inflate far less than the wall time.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#else
#include <ctime>
#endif

#include "mha/kernels/attention_kernel.hpp"
#include "mha/kernels/exp_variants.hpp"
#include "mha/kernels/flash_variants.hpp"
#include "mha/kernels/gemm_variants.hpp"
#include "mha/kernels/gemv_variants.hpp"
#include "mha/kernels/kernel_choice.hpp"
#include "mha/kernels/packed_linear.hpp"
#include "mha/kernels/simd.hpp"
#include "mha/kernels/weight_formats.hpp"

namespace {

std::vector<float> uniform(size_t n, unsigned seed, float limit) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-limit, limit);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// This process's CPU seconds (user + system): Node's process.cpuUsage() in wasm (the benchmark
// runs in Node only), the process CPU clock natively.
double cpu_seconds() {
#ifdef __EMSCRIPTEN__
  return EM_ASM_DOUBLE({ const u = process.cpuUsage(); return (u.user + u.system) * 1e-6; });
#else
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
#endif
}

double last_best_cpu = 0;  // the best CPU seconds of the last report()

// Prints the row and returns the best wall time in seconds.
double report(const char* kernel, const char* shape, double flops, const std::function<void()>& run) {
  for (int i = 0; i < 3; ++i) run();
  double best = 1e30, best_cpu = 1e30;
  for (int i = 0; i < 15; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    run();
    best_cpu = std::min(best_cpu, cpu_seconds() - c0);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("| %s | %s | %.3f | %.1f | %.3f | %.1f |\n", kernel, shape, best * 1e3, flops / best * 1e-9,
              best_cpu * 1e3, flops / std::max(best_cpu, 1e-9) * 1e-9);
  last_best_cpu = best_cpu;
  return best;
}

// One row through PackedLinear::apply_few_rows against K x N weights, and the rate it reads them.
void report_gemv(const char* kernel, int64_t K, int64_t N, unsigned seed, const char* what) {
  const auto w = uniform(N * K, seed, 0.05f), b = uniform(N, seed + 1, 0.1f), x = uniform(K, seed + 2, 0.5f);
  std::vector<float> y(N);
  const mha::kernels::PackedLinear linear(w.data(), b.data(), N, K);
  const std::string shape = "1 x " + std::to_string(K) + " x " + std::to_string(N);
  const double s = report(kernel, shape.c_str(), 2.0 * K * N,
                          [&] { linear.apply_few_rows(x.data(), y.data(), 1, 0, linear.num_panels()); });
  std::printf("| (GEMV %s) | %.1f GB/s | | | | |\n", what, 4.0 * K * N / s * 1e-9);
}

// This process's streaming read of a 256 MiB buffer (far beyond the last-level cache), GB/s: the
// limit a GEMV that reads its weights once can reach.
double stream_read_rate() {
  namespace simd = mha::kernels::simd;
  const size_t n = (size_t{256} << 20) / sizeof(float);
  std::vector<float> buffer(n, 1.0f);
  float sink = 0;
  const double s = report("stream read (4 vector sums)", "256 MiB", static_cast<double>(n), [&] {
    simd::Vec a(0.0f), b(0.0f), c(0.0f), d(0.0f);
    for (size_t i = 0; i + 4 * simd::kWidth <= n; i += 4 * simd::kWidth) {
      a += simd::load(buffer.data() + i);
      b += simd::load(buffer.data() + i + simd::kWidth);
      c += simd::load(buffer.data() + i + 2 * simd::kWidth);
      d += simd::load(buffer.data() + i + 3 * simd::kWidth);
    }
    sink += simd::hsum(a + b + c + d);
  });
  (void)s;
  const double rate = n * sizeof(float) / last_best_cpu * 1e-9;  // CPU time: other jobs inflate it least
  std::printf("| (stream read, CPU time) | %.1f GB/s | | | | |%s\n", rate, sink == 0 ? " " : "");
  return rate;
}

// What the quantized GEMV's arithmetic allows: the same kernel on 64 x 1024 weights that stay in
// L1/L2 (nothing waits on memory), over and over, its activation row quantized once. Weights/s.
double in_cache_rate(mha::WeightDtype dtype) {
  const int64_t K = 1024, N = 64, calls = 2000;
  const auto w = uniform(N * K, 51, 0.05f), b = uniform(N, 52, 0.1f), x = uniform(K, 53, 0.5f);
  std::vector<float> y(N);
  const mha::kernels::PackedLinear linear(mha::kernels::quantize_matrix(dtype, w.data(), N, K), b.data());
  mha::kernels::QuantizedInput xq;
  xq.prepare(x.data(), 1, K);
  const std::string kernel = std::string("projection GEMV, one row, ") + mha::weight_dtype_name(dtype) + ", weights in cache";
  report(kernel.c_str(), "1 x 1024 x 64", 2.0 * K * N * calls, [&] {
    for (int64_t i = 0; i < calls; ++i) linear.apply_few_rows(x.data(), y.data(), 1, 0, linear.num_panels(), &xq);
  });
  return 1.0 * K * N * calls / last_best_cpu;
}

// The quantized GEMV's SIMD operations per weight, counted in quantized_gemv.cpp for 4-lane
// vectors (wasm); wider vectors cover proportionally more weights per operation.
double ops_per_weight(mha::WeightDtype dtype) {
  const double per_4_lanes = dtype == mha::WeightDtype::kInt8 ? 7.0 / 16 : dtype == mha::WeightDtype::kQ4 ? 17.0 / 32 : 0;
  return per_4_lanes * 4.0 / mha::kernels::simd::kWidth;
}

// Decoding's projection with quantized weights: one row against K x N weights of `dtype`, over
// enough distinct copies (>= 128 MiB of float32 weights' worth, >= 48 MiB of the dtype's) that
// they stream from memory, as a model's layers do. Prints the time per GEMV, the rate it reads
// the dtype's bytes, and its speed against the float32 row (same shape, same streaming).
double report_quantized_gemv(mha::WeightDtype dtype, int64_t K, int64_t N, double stream_rate, double f32_seconds,
                             double arithmetic_rate = 0) {
  const auto w = uniform(N * K, 31, 0.05f), b = uniform(N, 32, 0.1f), x = uniform(K, 33, 0.5f);
  std::vector<float> y(N);
  const double bytes = dtype == mha::WeightDtype::kF32 ? 4.0 * K * N
                       : dtype == mha::WeightDtype::kF16 ? 2.0 * K * N
                       : dtype == mha::WeightDtype::kInt8 ? 1.0 * K * N + 4.0 * N
                                                          : (16.0 + 4.0) * N * mha::kernels::q4_blocks(K);
  const int64_t copies = std::max<int64_t>(8, static_cast<int64_t>((48 << 20) / bytes) + 1);
  std::vector<mha::kernels::PackedLinear> layers;
  if (dtype == mha::WeightDtype::kF32) {
    for (int64_t i = 0; i < copies; ++i) layers.emplace_back(w.data(), b.data(), N, K);
  } else {
    const auto m = mha::kernels::quantize_matrix(dtype, w.data(), N, K);
    for (int64_t i = 0; i < copies; ++i) layers.emplace_back(m, b.data());
  }
  const std::string kernel = std::string("projection GEMV, one row, ") + mha::weight_dtype_name(dtype) + " (" +
                             std::to_string(copies) + " copies streamed)";
  const std::string shape = "1 x " + std::to_string(K) + " x " + std::to_string(N);
  report(kernel.c_str(), shape.c_str(), 2.0 * K * N * copies, [&] {
    for (const auto& layer : layers) layer.apply_few_rows(x.data(), y.data(), 1, 0, layer.num_panels());
  });
  const double s = last_best_cpu / copies;  // CPU time, as the stream read's
  std::printf("| (GEMV %s, CPU time) | %.1f GB/s of its bytes (%.0f%% of the stream read), %.1f G weights/s, %.2fx float32's time | | | | |\n",
              mha::weight_dtype_name(dtype), bytes / s * 1e-9, 100.0 * bytes / s * 1e-9 / stream_rate,
              1.0 * K * N / s * 1e-9, f32_seconds > 0 ? f32_seconds / s : 1.0);
  if (arithmetic_rate > 0) {
    // The two limits: its bytes at the streaming rate, and its operations at the in-cache rate.
    const double by_bytes = stream_rate * 1e9 / (bytes / (1.0 * K * N));
    std::printf("| (GEMV %s: limits) | bytes %.1f G weights/s; arithmetic %.1f G weights/s (in cache: %.2f SIMD ops per "
                "weight at %.1f G ops/s); ours %.0f%% of the lower |  |  |  |  |\n",
                mha::weight_dtype_name(dtype), by_bytes * 1e-9, arithmetic_rate * 1e-9, ops_per_weight(dtype),
                arithmetic_rate * ops_per_weight(dtype) * 1e-9, 100.0 * (1.0 * K * N / s) / std::min(by_bytes, arithmetic_rate));
  }
  return s;
}

// Every f16 and q4 decode GEMV variant (gemv_variants.hpp), forced one at a time, on the decode
// GEMV streamed from memory (2048 x 2048, and 896 x 896 as Qwen2.5-0.5B's attention), each line
// its GB/s of the dtype's bytes beside the stream read; then the calibration's figures (GFLOPS,
// 2 per weight, in cache) and what it picked for this process.
void report_gemv_variants(double stream, double f32_large, double f32_small) {
  auto& choice = mha::kernels::KernelChoice::process();
  choice.recalibrate();
  const std::string described = choice.describe();  // (calibrates)
  const std::string picked[] = {choice.gemv_f16().name, choice.gemv_q4().name};
  const char* kernels[] = {"gemv_f16", "gemv_q4"};
  const mha::WeightDtype dtypes[] = {mha::WeightDtype::kF16, mha::WeightDtype::kQ4};
  const mha::kernels::GemvVariant* (*lists[])(int*) = {mha::kernels::gemv_f16_variants, mha::kernels::gemv_q4_variants};
  for (int k = 0; k < 2; ++k) {
    int count = 0;
    const mha::kernels::GemvVariant* v = lists[k](&count);
    for (int i = 0; i < count; ++i) {
      choice.force(std::string(kernels[k]) + "=" + v[i].name);
      std::printf("| **%s variant %s**%s | | | | | |\n", kernels[k], v[i].name, picked[k] == v[i].name ? " (calibration's pick)" : "");
      report_quantized_gemv(dtypes[k], 2048, 2048, stream, f32_large);
      report_quantized_gemv(dtypes[k], 896, 896, stream, f32_small);
    }
    choice.force(std::string(kernels[k]) + "=" + picked[k]);
  }
  std::printf("\ncalibration: %s\n\n", described.c_str());
}

// The limit of the GEMM's instructions: 12 independent chains of a vector multiply and add (a
// fused multiply-add natively) in registers, 2 flops per lane each: the "mul + add chain limit"
// the GEMM variants are read against (12 chains + 2 operands fit V8's 16 vector registers).
double chain_limit() {
  namespace simd = mha::kernels::simd;
  constexpr int kChains = 12;
  const int64_t steps = 200000;
  volatile float seed = 1.0f;
  const simd::Vec m(0.999f * seed), c(0.001f * seed);
  float sink = 0;
  report("mul + add chains (12 in registers: the instruction limit)", "200k steps", 2.0 * kChains * simd::kWidth * steps, [&] {
    simd::Vec a[kChains];
    for (int i = 0; i < kChains; ++i) a[i] = simd::Vec(seed + static_cast<float>(i));
    for (int64_t k = 0; k < steps; ++k)
      for (int i = 0; i < kChains; ++i) a[i] = simd::fmadd(a[i], m, c);
    simd::Vec t = a[0];
    for (int i = 1; i < kChains; ++i) t += a[i];
    sink += simd::hsum(t);
  });
  if (sink == 12345.0f) std::printf(" ");
  return 2.0 * kChains * simd::kWidth * steps / last_best_cpu * 1e-9;
}

// describe()'s "gflops":[...] of one kernel ("gemm", "flash", "exp"), in its variants' order.
std::vector<double> calibrated_rates(const std::string& described, const std::string& kernel) {
  std::vector<double> rates;
  const size_t k = described.find("\"" + kernel + "\":{");
  const size_t at = k == std::string::npos ? k : described.find("\"gflops\":[", k);
  if (at == std::string::npos) return rates;
  const char* p = described.c_str() + at + 10;
  while (*p && *p != ']') {
    char* end = nullptr;
    rates.push_back(std::strtod(p, &end));
    p = *end == ',' ? end + 1 : end;
  }
  return rates;
}

// Every GEMM variant (gemm_variants.hpp) on the same 512 x 512 x 512 product, in the layer's
// one-thread tasks (PackedLinear::rows_per_task), beside the chain limit and the calibration's
// own figure for it; then which variant the calibration picked for this process.
void report_gemm_variants(double limit) {
  const int64_t M = 512, K = 512, N = 512;
  const auto w = uniform(N * K, 1, 0.05f), b = uniform(N, 2, 0.1f), x = uniform(M * K, 3, 0.5f);
  std::vector<float> y(M * N);
  const mha::kernels::PackedLinear linear(w.data(), b.data(), N, K);
  auto& choice = mha::kernels::KernelChoice::process();
  const std::string chosen = choice.gemm().name, described = choice.describe();
  int count = 0;
  const mha::kernels::GemmVariant* variants = mha::kernels::gemm_variants(&count);
  const std::vector<double> calibrated = calibrated_rates(described, "gemm");
  const int64_t step = mha::kernels::PackedLinear::rows_per_task(M, 1);
  double best = 0;
  std::string best_name;
  for (int i = 0; i < count; ++i) {
    const std::string kernel = std::string("GEMM variant ") + variants[i].name + (chosen == variants[i].name ? " (chosen)" : "");
    report(kernel.c_str(), "512 x 512 x 512", 2.0 * M * K * N, [&] {
      for (int64_t r = 0; r < M; r += step) linear.apply(x.data(), y.data(), r, std::min(M, r + step), variants[i]);
    });
    const double gflops = 2.0 * M * K * N / last_best_cpu * 1e-9;
    if (gflops > best) best = gflops, best_name = variants[i].name;
    std::printf("| (%s) | %.0f%% of the chain limit (CPU time); calibration %.1f GFLOPS | | | | |\n", variants[i].name,
                100.0 * gflops / limit, i < static_cast<int>(calibrated.size()) ? calibrated[i] : 0.0);
  }
  std::printf("\ncalibration: %s\nfastest here (CPU time): %s, %.1f GFLOPS, %.0f%% of the chain limit %.1f\n\n",
              described.c_str(), best_name.c_str(), best, 100.0 * best / limit, limit);
}

// One head of L = S keys and head dim Dh, contiguous rows, with its own scratch.
struct Head {
  std::vector<float> q, k, v, out, scratch;
  mha::kernels::AttentionHeadArgs a{};
  Head(int64_t L, int64_t Dh) : q(uniform(L * Dh, 4, 1.0f)), k(uniform(L * Dh, 5, 1.0f)), v(uniform(L * Dh, 6, 1.0f)),
                                out(L * Dh) {
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.out = out.data();
    a.q_stride = a.k_stride = a.v_stride = a.out_stride = Dh;
    a.query_len = a.key_len = L;
    a.head_dim = Dh;
    a.scale = 0.125f;
    scratch.resize(mha::kernels::attention_scratch_floats(a));
    a.scratch = scratch.data();
  }
};

// Every flash-attention variant (flash_variants.hpp) on one head, L = S = 2048, head dim 64, with
// the exp the calibration chose; then every exp scheme with the flash variant it chose; each beside
// the calibration's own figure (its small in-cache problem: one query block against 256 keys; the
// exp's in billions of exps per second), and which ones the calibration picked.
void report_flash_variants() {
  const int64_t L = 2048, Dh = 64;
  Head head(L, Dh);
  auto& choice = mha::kernels::KernelChoice::process();
  const mha::kernels::FlashVariant& chosen = choice.flash();
  const mha::kernels::ExpVariant& chosen_exp = choice.exp();
  const std::string described = choice.describe();
  const std::vector<double> flash_rates = calibrated_rates(described, "flash"), exp_rates = calibrated_rates(described, "exp");
  int count = 0, exp_count = 0;
  const mha::kernels::FlashVariant* variants = mha::kernels::flash_variants(&count);
  const mha::kernels::ExpVariant* exps = mha::kernels::exp_variants(&exp_count);
  const double flops = 4.0 * L * L * Dh;
  const auto row = [&](const std::string& kernel, const mha::kernels::FlashVariant& f, const mha::kernels::ExpVariant& e,
                       double calibration, const char* unit) {
    report(kernel.c_str(), "L = S = 2048, head dim 64", flops, [&] { f.run(head.a, e.scheme); });
    std::printf("| (%s, %s) | calibration %.2f %s | | | | |\n", f.name, e.name, calibration, unit);
    return flops / last_best_cpu * 1e-9;
  };
  double best = 0;
  std::string best_name;
  for (int i = 0; i < count; ++i) {
    const std::string kernel = std::string("flash variant ") + variants[i].name + (&variants[i] == &chosen ? " (chosen)" : "");
    const double g = row(kernel, variants[i], chosen_exp, i < static_cast<int>(flash_rates.size()) ? flash_rates[i] : 0.0, "GFLOPS");
    if (g > best) best = g, best_name = variants[i].name;
  }
  for (int i = 0; i < exp_count; ++i) {
    const std::string kernel = std::string("exp variant ") + exps[i].name + (&exps[i] == &chosen_exp ? " (chosen)" : "");
    row(kernel, chosen, exps[i], i < static_cast<int>(exp_rates.size()) ? exp_rates[i] : 0.0, "G exps/s");
  }
  std::printf("\ncalibration: flash %s, exp %s\nfastest flash variant here (CPU time): %s, %.1f GFLOPS\n\n", chosen.name,
              chosen_exp.name, best_name.c_str(), best);
}

// The backward pass of one head (attention_head_backward_flash): the forward's output and lse,
// a gradient dO, and dQ, dK, dV (zeroed before each run, as the layer does).
struct HeadBackward {
  Head head;
  std::vector<float> lse, d_out, d_q, d_k, d_v, scratch;
  mha::kernels::AttentionBackwardArgs b{};
  HeadBackward(int64_t L, int64_t Dh, bool causal) : head(L, Dh), lse(L), d_out(uniform(L * Dh, 7, 1.0f)),
                                                      d_q(L * Dh), d_k(L * Dh), d_v(L * Dh) {
    head.a.causal = causal;
    head.a.lse = lse.data();
    mha::kernels::attention_head_flash(head.a);
    b.forward = head.a;
    b.lse = lse.data();
    b.d_out = d_out.data();
    b.d_q = d_q.data();
    b.d_k = d_k.data();
    b.d_v = d_v.data();
    b.d_out_stride = b.d_q_stride = b.d_k_stride = b.d_v_stride = Dh;
    scratch.resize(mha::kernels::attention_backward_scratch_floats(b));
    b.scratch = scratch.data();
  }
  void run() {
    std::fill(d_q.begin(), d_q.end(), 0.0f);
    std::fill(d_k.begin(), d_k.end(), 0.0f);
    std::fill(d_v.begin(), d_v.end(), 0.0f);
    mha::kernels::attention_head_backward_flash(b);
  }
};

}  // namespace

int main(int argc, char** argv) {
  // MHA_KERNELS forces variants (natively KernelChoice reads it itself; in wasm from Node's env).
#ifdef __EMSCRIPTEN__
  char spec[256] = "";
  EM_ASM({ stringToUTF8(process.env.MHA_KERNELS || "", $0, 256); }, spec);
  if (spec[0]) {
    const std::string error = mha::kernels::KernelChoice::process().force(spec);
    if (!error.empty()) std::printf("MHA_KERNELS: %s\n", error.c_str());
  }
#endif
  std::printf("| kernel | shape | ms | GFLOPS | CPU ms | GFLOPS (CPU) |\n|---|---|---:|---:|---:|---:|\n");
  if (argc > 1 && std::string(argv[1]) == "gemv") {  // (`bash bench/kernels/run.sh gemv`: the GEMV variants only)
    const double stream = stream_read_rate();
    report_gemv_variants(stream, report_quantized_gemv(mha::WeightDtype::kF32, 2048, 2048, stream, 0),
                         report_quantized_gemv(mha::WeightDtype::kF32, 896, 896, stream, 0));
    return 0;
  }
  report_gemm_variants(chain_limit());
  if (argc > 1 && std::string(argv[1]) == "gemm") return 0;  // (`bash bench/kernels/run.sh gemm`: the GEMM variants only)
  {
    const int64_t M = 512, K = 512, N = 512;
    const auto w = uniform(N * K, 1, 0.05f), b = uniform(N, 2, 0.1f), x = uniform(M * K, 3, 0.5f);
    std::vector<float> y(M * N);
    const mha::kernels::PackedLinear linear(w.data(), b.data(), N, K);
    report("projection GEMM (PackedLinear::apply)", "512 x 512 x 512", 2.0 * M * K * N,
           [&] { linear.apply(x.data(), y.data(), 0, M); });
  }
  // Decoding's projection: one row against 2048 x 2048 weights (16 MiB, streamed from memory).
  report_gemv("projection GEMV, one row (PackedLinear::apply_few_rows)", 2048, 2048, 7, "weights streamed");
  // Quantized weights (weight_formats.hpp): the decode GEMV of each dtype against float32's, all
  // streamed from memory, and the streaming read that bounds them.
  {
    const double stream = stream_read_rate();
    const double int8_limit = in_cache_rate(mha::WeightDtype::kInt8), q4_limit = in_cache_rate(mha::WeightDtype::kQ4);
    const auto limit = [&](mha::WeightDtype d) { return d == mha::WeightDtype::kInt8 ? int8_limit : d == mha::WeightDtype::kQ4 ? q4_limit : 0; };
    const double f32 = report_quantized_gemv(mha::WeightDtype::kF32, 2048, 2048, stream, 0);
    for (mha::WeightDtype dtype : {mha::WeightDtype::kInt8, mha::WeightDtype::kQ4, mha::WeightDtype::kF16})
      report_quantized_gemv(dtype, 2048, 2048, stream, f32, limit(dtype));
    // The small layers' projection (Qwen2.5-0.5B-like, 896 x 896), streamed the same way.
    const double f32_small = report_quantized_gemv(mha::WeightDtype::kF32, 896, 896, stream, 0);
    for (mha::WeightDtype dtype : {mha::WeightDtype::kInt8, mha::WeightDtype::kQ4})
      report_quantized_gemv(dtype, 896, 896, stream, f32_small, limit(dtype));
    report_gemv_variants(stream, f32, f32_small);
    // Prefill with quantized weights: the GEMM on slices dequantized per call, against float32's.
    const int64_t M = 512, K = 768, N = 768;
    const auto w = uniform(N * K, 41, 0.05f), b = uniform(N, 42, 0.1f), x = uniform(M * K, 43, 0.5f);
    std::vector<float> y(M * N);
    for (mha::WeightDtype dtype : {mha::WeightDtype::kF32, mha::WeightDtype::kInt8, mha::WeightDtype::kQ4, mha::WeightDtype::kF16}) {
      const mha::kernels::PackedLinear linear = dtype == mha::WeightDtype::kF32
          ? mha::kernels::PackedLinear(w.data(), b.data(), N, K)
          : mha::kernels::PackedLinear(mha::kernels::quantize_matrix(dtype, w.data(), N, K), b.data());
      // In the layer's tasks (rows_per_task): each dequantizes the slices it uses once.
      const int64_t step = mha::kernels::PackedLinear::rows_per_task(M, 1);
      const std::string kernel = std::string("projection GEMM, ") + mha::weight_dtype_name(dtype) + " weights (tasks of " +
                                 std::to_string(step) + " rows)";
      report(kernel.c_str(), "512 x 768 x 768", 2.0 * M * K * N, [&] {
        for (int64_t r = 0; r < M; r += step) linear.apply(x.data(), y.data(), r, std::min(M, r + step));
      });
    }
  }
  // A Qwen-like key projection (896 -> 128, from cache): in wasm 16 panels of 8 columns, five
  // threes and one alone (apply_few_rows' remainder loop).
  report_gemv("projection GEMV, one row, a key projection", 896, 128, 10, "weights read");
  {
    const int64_t L = 2048, S = 2048, Dh = 64;
    Head head(L, Dh);
    report("flash attention, one head (attention_head_flash)", "L = S = 2048, head dim 64", 4.0 * L * S * Dh,
           [&] { mha::kernels::attention_head_flash(head.a); });
  }
  report_flash_variants();
  {
    // The backward pass: 10 L S Dh flops (S = Q K^T and dP = dO V^T recomputed, then dV, dK, dQ).
    const int64_t L = 2048, Dh = 64;
    HeadBackward full(L, Dh, false);
    report("flash attention backward, one head (attention_head_backward_flash)", "L = S = 2048, head dim 64",
           10.0 * L * L * Dh, [&] { full.run(); });
    HeadBackward causal(L, Dh, true);
    report("flash attention backward, one head, causal", "L = S = 2048, head dim 64", 10.0 * Dh * L * (L + 1) / 2,
           [&] { causal.run(); });
  }
  {
    // The sliding window skips whole key tiles: causal L = 4096 against a window of 512 keys.
    const int64_t L = 4096, W = 512, Dh = 64;
    Head head(L, Dh);
    head.a.causal = true;
    const double causal = report("flash attention, one head, causal", "L = S = 4096, head dim 64",
                                 4.0 * Dh * L * (L + 1) / 2, [&] { mha::kernels::attention_head_flash(head.a); });
    head.a.epilogue.window = W;
    const double window = report("flash attention, one head, causal, sliding window 512", "L = S = 4096, head dim 64",
                                 4.0 * Dh * (W * (W + 1) / 2 + (L - W) * W),
                                 [&] { mha::kernels::attention_head_flash(head.a); });
    std::printf("\nsliding window 512 vs full causal, one head, L = 4096: %.2fx faster\n", causal / window);
  }
  {
    // Decoding's attention: one query row of each of the 7 query heads that share one kv head
    // (Qwen2.5-0.5B's GQA group) against 4096 cached keys and values (2 MiB, read once for the group).
    const int64_t G = 7, S = 4096, Dh = 64;
    const auto q = uniform(G * Dh, 10, 1.0f), k = uniform(S * Dh, 11, 1.0f), v = uniform(S * Dh, 12, 1.0f);
    std::vector<float> out(G * Dh);
    std::vector<mha::kernels::AttentionHeadArgs> group(G);
    std::vector<std::vector<float>> scratch(G);
    for (int64_t g = 0; g < G; ++g) {
      mha::kernels::AttentionHeadArgs& a = group[g];
      a.q = q.data() + g * Dh;
      a.k = k.data();
      a.v = v.data();
      a.out = out.data() + g * Dh;
      a.q_stride = a.out_stride = G * Dh;
      a.k_stride = a.v_stride = Dh;
      a.query_len = 1;
      a.key_len = S;
      a.head_dim = Dh;
      a.scale = 0.125f;
      a.causal = true;
      a.first_query = S - 1;
      scratch[g].resize(mha::kernels::attention_decode_scratch_floats(a, G));
      a.scratch = scratch[g].data();
    }
    const double s = report("decode attention, one GQA group (attention_heads_decode)", "7 heads x 1 row, 4096 keys, head dim 64",
                            4.0 * G * S * Dh, [&] { mha::kernels::attention_heads_decode(group.data(), G); });
    std::printf("| (keys and values read) | %.1f GB/s | | | | |\n", 2.0 * 4 * S * Dh / s * 1e-9);
  }
}
