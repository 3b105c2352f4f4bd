// Timing for the benchmarks that compare two forms of one call in one process, alternating
// (bench/sequence-first.mjs, bench/ragged.mjs).

/** Median ms of `call` over at least 5 calls and ~1 s, after one warm-up call. */
export function time(call) {
  call();
  const times = [];
  const started = performance.now();
  do {
    const t0 = performance.now();
    call();
    times.push(performance.now() - t0);
  } while (times.length < 5 || (performance.now() - started < 1000 && times.length < 50));
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** The median of a list (the lower middle one of an even count). */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
