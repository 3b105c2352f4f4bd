// Reproducible pseudo-random test data (a small LCG): the same seed gives the same numbers.

/** n floats, uniform in [-scale, scale). */
export function seededFloats(n, seed, scale = 0.5) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 * scale;
  });
}
