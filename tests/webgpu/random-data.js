// Reproducible test data for the WebGPU tests: the LCG of tests/js/seeded.js, as a generator.

/** A generator of uniform values in [-0.5, 0.5) from `seed`. */
export function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/** A { data, shape } tensor of `shape` filled from the generator `rand`. */
export const tensor = (rand, shape) => ({ data: Float32Array.from({ length: shape.reduce((n, d) => n * d, 1) }, rand), shape });
