#include "variant_calibration.hpp"

#include <algorithm>
#include <chrono>

namespace mha::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The clock's step: browsers coarsen performance.now() (5 us on cross-origin-isolated pages, 100 us
// or 1 ms elsewhere), so a timed batch must span many steps.
double clock_step() {
  double step = 1.0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    double d = 0;
    while ((d = seconds_since(t0)) == 0) {}
    step = std::min(step, d);
  }
  return step;
}

// Seconds per run of variant i: the best of `batches` batches of `reps` problems.
// A batch read as no time at all (under one step of a coarse clock) counts as one step: a time is
// never 0, so a rate is never infinite (a page's 100 us clock read 0 for a small GEMV's batch).
double measure(const std::function<void(int)>& run, int i, int reps, int batches, double step) {
  double best = 1e30;
  for (int batch = 0; batch < batches; ++batch) {
    const auto t0 = Clock::now();
    for (int r = 0; r < reps; ++r) run(i);
    best = std::min(best, std::max(seconds_since(t0), step) / reps);
  }
  return best;
}

// The best seconds per run of an incumbent and a challenger timed in alternation (ABBA order,
// kPairs times), so the machine's load slows both alike.
struct HeadToHead {
  double incumbent = 1e30, challenger = 1e30;
};

HeadToHead confirm(const std::function<void(int)>& run, int incumbent, int challenger, double batch_seconds,
                   double step) {
  constexpr int kPairs = 6;
  HeadToHead h;
  // Batches of the same length for both, sized from the incumbent's time.
  const auto once = Clock::now();
  run(incumbent);
  const int reps = static_cast<int>(std::clamp(batch_seconds / std::max(seconds_since(once), 1e-7), 1.0, 1e7));
  for (int pair = 0; pair < kPairs; ++pair) {
    const bool incumbent_first = pair % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool is_incumbent = (k == 0) == incumbent_first;
      double& best = is_incumbent ? h.incumbent : h.challenger;
      best = std::min(best, measure(run, is_incumbent ? incumbent : challenger, reps, 1, step));
    }
  }
  return h;
}

}  // namespace

VariantCalibration calibrate_variants(int count, int former, const std::function<void(int)>& run, double work) {
  const auto t0 = Clock::now();
  // A batch spans at least 20 clock steps and 40 us (sized anew each round from the fastest time
  // so far: the first calls may run unoptimized code).
  const double step = clock_step();
  const double batch_seconds = std::max(20 * step, 40e-6);
  // Rounds over every variant, each variant's best kept, until two rounds in a row improve none by
  // more than 5%. In wasm also not before kSettleSeconds, and not before the former kernel (the
  // default variant) has run optimized: an engine runs new wasm from a baseline compile first and
  // swaps in optimized code, compiled in the background, some time after a function gets hot (V8
  // on the loaded 2-core machine: 10 ms to 0.5 s), so early rounds time variants unoptimized, and
  // a variant optimized before the default could win wrongly. The default's optimized code is at
  // least 1.5x its first call's (3-5x measured), unless it was optimized from the start (V8 with
  // --no-liftoff): then the wait ends at kWaitSeconds. Natively the code is optimized at once.
#ifdef __EMSCRIPTEN__
  constexpr double kSettleSeconds = 0.03, kWaitSeconds = 0.15, kMaxSeconds = 0.3;
#else
  constexpr double kSettleSeconds = 0, kWaitSeconds = 0, kMaxSeconds = 0.3;
#endif
  const int def = former;
  std::vector<double> first(count);
  double fastest = 1e30;
  for (int i = 0; i < count; ++i) {
    const auto once = Clock::now();
    run(i);
    first[i] = std::max(seconds_since(once), 1e-7);
    fastest = std::min(fastest, first[i]);
  }
  std::vector<double> seconds(count, 1e30);
  VariantCalibration c;
  const auto settled = [&](int quiet) {
    const double t = seconds_since(t0);
    const bool default_optimized = seconds[def] < first[def] / 1.5 || t >= kWaitSeconds;
    return quiet >= 2 && t >= kSettleSeconds && default_optimized;
  };
  for (int round = 0, quiet = 0; !settled(quiet); ++round) {
    if (seconds_since(t0) > kMaxSeconds) break;  // (c.settled stays false: not worth keeping)
    const int reps = static_cast<int>(std::clamp(batch_seconds / fastest, 1.0, 1e7));
    bool improved = false;
    for (int i = 0; i < count; ++i) {
      const double s = measure(run, i, reps, 3, step);
      improved = improved || s < 0.95 * seconds[i];
      seconds[i] = std::min(seconds[i], s);
      fastest = std::min(fastest, s);
    }
    quiet = improved ? 0 : quiet + 1;
    c.rounds = round + 1;
    c.settled = settled(quiet);
  }
  // A variant replaces the default only when it is 5% faster (closer calls are noise), and only
  // after a head-to-head with the variant it would replace: the two alternate, batch by batch
  // (confirm), so a burst of another tenant's load slows both. The rounds alone were fooled by
  // such bursts: a variant timed during a quiet moment won by 5-20% and then ran 25-45% slower in
  // the layer (4x8-k4 and 3x8-shuffle against 4x8, relaxed SIMD on the Intel Xeon, 2026-12-03).
  int best = def;
  std::vector<char> confirmed(count, 0);
  confirmed[def] = 1;
  // The time a challenger must beat: 5% under the default's while it is kept, then the best's.
  const auto bar = [&] { return best == def ? 0.95 * seconds[def] : seconds[best]; };
  for (;;) {
    int challenger = -1;
    for (int i = 0; i < count; ++i)
      if (!confirmed[i] && seconds[i] < bar() && (challenger < 0 || seconds[i] < seconds[challenger])) challenger = i;
    if (challenger < 0) break;
    confirmed[challenger] = 1;
    const HeadToHead h = confirm(run, best, challenger, batch_seconds, step);
    seconds[best] = std::min(seconds[best], h.incumbent);  // the incumbent keeps its best time,
    seconds[challenger] = h.challenger;                    // the challenger gets the fair one
    c.confirmations += 1;
    if (seconds[challenger] < bar()) best = challenger;
  }
  for (int i = 0; i < count; ++i) c.rates.push_back(work / seconds[i] * 1e-9);
  c.best = best;
  c.seconds = seconds_since(t0);
  return c;
}

}  // namespace mha::kernels
