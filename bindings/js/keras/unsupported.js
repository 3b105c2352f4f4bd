// Keras 3.15 options that neither Keras layer (keras/keras.js, tfjs/layer.js) implements yet,
// refused by name: a config setting one would otherwise be answered as if it had not. Each
// option's default (what the layers do) passes, so a config that writes it out still loads.
const NOT_YET = [
  { name: 'useGate', keras: 'use_gate', off: false, what: "Keras 3.15's gated attention, a sigmoid gate computed from the query on each head's output" },
  { name: 'slidingWindow', keras: 'sliding_window', off: null, what: "Keras 3.15's sliding-window attention" },
];

/** The camelCase names of the options refused unless at their default. */
export const NOT_YET_OPTIONS = Object.freeze(NOT_YET.map((option) => option.name));

/**
 * Throws an Error naming the first of `config`'s keys that asks for an option `layer` (its name in
 * the message) does not implement yet: useGate / use_gate, slidingWindow / sliding_window.
 * `prefix`: what the message starts with (the caller's name).
 */
export function refuseNotYetImplemented(config, layer, prefix = '') {
  for (const { name, keras, off, what } of NOT_YET) {
    for (const key of [name, keras]) {
      if (config[key] !== undefined && config[key] !== off) {
        throw new Error(`${prefix}${key}: not supported yet by ${layer} (${what}); leave it out (or ${JSON.stringify(off)}), got ${JSON.stringify(config[key]) ?? String(config[key])}`);
      }
    }
  }
}
