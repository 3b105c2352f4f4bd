// Keras' weight initializers for the plain Keras layer (keras.js), so a layer is usable once built,
// as Keras' is: glorot_uniform kernels and zero biases by default, or the kernelInitializer /
// biasInitializer given (Keras' names, camelCased, or their { className, config } form). Fans as
// Keras' compute_fans: for a kernel of rank >= 3 (EinsumDense's [in, H, D], [H, Dv, out]) the
// receptive field is the product of all but the last two axes. Drawn from a seeded generator, in
// get_weights() order, so each sublayer gets its own values (as Keras clones the initializer).
import { uniformSource } from '../core/initialize.js';
import { describe } from '../api/validate.js';

/** Keras' compute_fans. */
function fans(shape) {
  if (shape.length === 1) return [shape[0], shape[0]];
  const receptive = shape.slice(0, -2).reduce((a, b) => a * b, 1);
  return [shape[shape.length - 2] * receptive, shape[shape.length - 1] * receptive];
}

// Each initializer: (shape, config, uniform, normal) -> one value generator.
const INITIALIZERS = {
  Zeros: () => () => 0,
  Ones: () => () => 1,
  Constant: (shape, { value = 0 }) => () => value,
  GlorotUniform: (shape, c, uniform) => { const [i, o] = fans(shape); const b = Math.sqrt(6 / (i + o)); return () => (2 * uniform() - 1) * b; },
  GlorotNormal: (shape, c, uniform, normal) => { const [i, o] = fans(shape); return truncated(Math.sqrt(2 / (i + o)) / 0.87962566103423978, 0, normal); },
  HeUniform: (shape, c, uniform) => { const b = Math.sqrt(6 / fans(shape)[0]); return () => (2 * uniform() - 1) * b; },
  HeNormal: (shape, c, uniform, normal) => truncated(Math.sqrt(2 / fans(shape)[0]) / 0.87962566103423978, 0, normal),
  LecunUniform: (shape, c, uniform) => { const b = Math.sqrt(3 / fans(shape)[0]); return () => (2 * uniform() - 1) * b; },
  RandomUniform: (shape, { minval = -0.05, maxval = 0.05 }, uniform) => () => minval + (maxval - minval) * uniform(),
  RandomNormal: (shape, { mean = 0, stddev = 0.05 }, uniform, normal) => () => mean + stddev * normal(),
  TruncatedNormal: (shape, { mean = 0, stddev = 0.05 }, uniform, normal) => truncated(stddev, mean, normal),
};

/** Keras' truncated normal: values beyond two standard deviations drawn again. */
function truncated(stddev, mean, normal) {
  return () => {
    let x;
    do x = normal(); while (Math.abs(x) > 2);
    return mean + stddev * x;
  };
}

/** An initializer argument (`name`: 'kernelInitializer' or 'biasInitializer') as { className, config }. */
export function readInitializer(name, spec, fallback) {
  if (spec === undefined || spec === null) return { className: fallback, config: {} };
  const asClass = (s) => s.split(/[_\s]/).map((w) => w[0].toUpperCase() + w.slice(1)).join('');
  const className = typeof spec === 'string' ? asClass(spec) : spec?.className;
  if (!INITIALIZERS[className]) {
    throw new TypeError(`${name} must be one of ${Object.keys(INITIALIZERS).join(', ')} (a name, camelCase or snake_case, or `
      + `{ className, config }), got ${typeof spec === 'string' ? spec : describe(spec)}`);
  }
  return { className, config: (typeof spec === 'object' && spec.config) || {} };
}

/**
 * Fresh weights for Keras' weight `shapes` (by name, in get_weights() order), as Float32Arrays by
 * name: kernels from `kernel`, biases from `bias` ({ className, config }), drawn from `seed`.
 */
export function initialKerasWeights(shapes, kernel, bias, seed) {
  const uniform = uniformSource(seed);
  let spare = null;
  const normal = () => {  // Box-Muller, two values per pair of uniforms
    if (spare !== null) { const x = spare; spare = null; return x; }
    const r = Math.sqrt(-2 * Math.log(1 - uniform())), t = 2 * Math.PI * uniform();
    spare = r * Math.sin(t);
    return r * Math.cos(t);
  };
  const weights = {};
  for (const [name, shape] of Object.entries(shapes)) {
    const { className, config } = name.endsWith('/kernel') ? kernel : bias;
    const next = INITIALIZERS[className](shape, config, uniform, normal);
    weights[name] = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, next);
  }
  return weights;
}
