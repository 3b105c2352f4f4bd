// What runWithCache returns: the activations one forward recorded, by hook name, and the token
// ids it ran on (headScores reads them). Each is a { data: Float32Array, shape } the cache owns:
// a copy taken when the forward passed the point, so later steps cannot change it.

export class ActivationCache {
  #activations;

  /**
   * @param activations Map name -> { data, shape }, in forward order
   * @param ids the token ids of the run (an Int32Array)
   */
  constructor(activations, ids) {
    this.#activations = activations;
    this.ids = ids;
    Object.freeze(this);
  }

  /** The hook names held, in the order the forward reached them. */
  get names() { return [...this.#activations.keys()]; }

  has(name) { return this.#activations.has(name); }

  /** The activation recorded at `name` as { data, shape }; a TypeError when the cache lacks it. */
  get(name) {
    const activation = this.#activations.get(name);
    if (!activation) {
      const held = this.#activations.size ? `it holds ${this.#activations.size} (cache.names)` : 'it holds none';
      throw new TypeError(`cache.get: no activation ${JSON.stringify(name)}: ${held}; runWithCache(ids, { names }) keeps only the names asked for`);
    }
    return activation;
  }
}
