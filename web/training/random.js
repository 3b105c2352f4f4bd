// A small seeded random number generator (sfc32 seeded through splitmix32): the same seed gives the
// same numbers in the page's worker and in Node, which makes a training run reproducible.

function splitmix32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Random {
  #a; #b; #c; #d;

  /** @param {number} seed an integer (any sign; only its low 32 bits count) */
  constructor(seed) {
    if (!Number.isInteger(seed)) throw new TypeError(`Random: seed must be an integer, got ${seed}`);
    const next = splitmix32(seed);
    [this.#a, this.#b, this.#c, this.#d] = [next(), next(), next(), next()];
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** A uniform 32-bit unsigned integer. */
  uint32() {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1). */
  random() {
    return this.uint32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  below(n) {
    return Math.floor(this.random() * n);
  }

  /** Uniform integer in [low, high], both included (Python's randint). */
  int(low, high) {
    return low + this.below(high - low + 1);
  }

  /** One element of an array or a string. */
  choice(items) {
    return items[this.below(items.length)];
  }

  /** Uniform in [low, high). */
  uniform(low, high) {
    return low + (high - low) * this.random();
  }

  /** Standard normal (Box-Muller). */
  normal() {
    const u = 1 - this.random();  // (0, 1]: log(u) is finite
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.random());
  }
}
