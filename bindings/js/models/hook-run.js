// One forward's hook points at work: which points the run must produce (those the cache keeps and
// those a hook is on), the cache's copies, and the hooks' calls with their replacements checked.
// A hook gets a copy of the activation as { data, shape } and may return a replacement of the same
// shape, or change the copy in place (as a TransformerLens hook that edits `act` and returns None).
import { unknownHookError } from './hook-points.js';

const sameShape = (a, b) => a.length === b.length && a.every((n, i) => n === b[i]);
const shapeText = (shape) => `[${shape.join(', ')}]`;

export class HookRun {
  #points;
  #L;
  #keep;      // Set of names the cache keeps, or 'all'
  #hooks;     // Map name -> function
  #what;
  #kept = new Map();

  /**
   * @param points hookPoints(architecture)
   * @param L the run's number of tokens
   * @param keep the names to record (a Set), 'all', or null for none
   * @param hooks name -> hook function, or null
   * @param what the caller's name for errors ('runWithHooks', 'runWithCache')
   */
  constructor(points, L, { keep = null, hooks = null, what }) {
    this.#points = points;
    this.#L = L;
    this.#keep = keep;
    this.#hooks = hooks ?? new Map();
    this.#what = what;
    for (const name of [...(keep instanceof Set ? keep : []), ...this.#hooks.keys()]) {
      if (!points.has(name)) throw unknownHookError(what, name, points);
    }
  }

  /** Whether the forward must produce `name` (the cache keeps it or a hook is on it). */
  wants(name) {
    if (this.#keep === 'all') return this.#points.has(name);
    return (this.#keep?.has(name) ?? false) || this.#hooks.has(name);
  }

  /** The point's shape for this run. */
  shape(name) { return this.#points.get(name)(this.#L); }

  /**
   * The forward passes `name` with `data` (its values in TransformerLens' layout): records it and
   * runs its hook. Resolves to the values the rest of the forward uses: `data` itself when nothing
   * replaced it (compare by identity), else a new Float32Array.
   */
  async at(name, data) {
    if (!this.wants(name)) return data;
    let value = data;
    const hook = this.#hooks.get(name);
    if (hook) {
      const shape = this.shape(name);
      const given = { data: Float32Array.from(data), shape: [...shape] };
      const returned = await hook(given, { name });
      if (returned === undefined || returned === null) {
        if (given.data.some((v, i) => !Object.is(v, data[i]))) value = given.data;
      } else {
        value = this.#replacement(name, returned, shape);
      }
    }
    if (this.#keep === 'all' || this.#keep?.has(name)) {  // (wants() checked it is a point)
      this.#kept.set(name, { data: Float32Array.from(value), shape: this.shape(name) });
    }
    return value;
  }

  #replacement(name, returned, shape) {
    const where = `${this.#what}: hook '${name}'`;
    if (typeof returned !== 'object' || !Array.isArray(returned.shape) || returned.data?.length === undefined) {
      throw new TypeError(`${where} must return nothing or { data, shape } with shape ${shapeText(shape)}, got ${typeof returned === 'object' ? 'an object without data and shape' : typeof returned}`);
    }
    if (!sameShape(returned.shape, shape)) {
      throw new RangeError(`${where} returned shape ${shapeText(returned.shape)}; expected ${shapeText(shape)} (the activation's shape)`);
    }
    const size = shape.reduce((n, d) => n * d, 1);
    if (returned.data.length !== size) {
      throw new RangeError(`${where} returned ${returned.data.length} values for shape ${shapeText(shape)}; expected ${size}`);
    }
    return Float32Array.from(returned.data);
  }

  /** The recorded activations, in forward order. */
  get kept() { return this.#kept; }
}
