// Keras' MultiHeadAttention argument and shape rules, written once for both Keras surfaces: the
// plain-array layer (keras/keras.js) and the tfjs-layers one (tfjs/layer.js). Each surface names
// its own errors, so every check takes the `prefix` (or `caller`) its messages start with, and
// `dims`, how it writes a list of sizes or axes: '1, 3' (the default) or tfjs' String(list), '1,3'
// (the wording its messages have had, which tests assert). What only one surface has (tfjs'
// symbolic calls, the plain layer's mask refusals) stays there.

const list = (dims) => dims.join(', ');

/**
 * Keras' output_shape given as a tuple (the output's last axes: [B, T, ...outputShape]): its axes,
 * checked; null when it is not a list (an integer or absent: each surface checks its integers).
 */
export function readOutputDims(outputShape, prefix = '', dims = list) {
  if (!Array.isArray(outputShape)) return null;
  if (outputShape.length === 0 || !outputShape.every((d) => Number.isInteger(d) && d > 0)) {
    throw new RangeError(`${prefix}outputShape must be a positive integer or a non-empty list of them, got [${dims(outputShape)}]`);
  }
  return outputShape;
}

/** attentionAxes: undefined/null (all inner axes: null), an integer or a non-empty list of integers (a list). */
export function readAttentionAxes(axes, prefix = '') {
  if (axes === undefined || axes === null) return null;
  const axesList = [axes].flat();
  if (axesList.length === 0 || axesList.some((a) => !Number.isInteger(a))) {
    throw new TypeError(`${prefix}attentionAxes must be an integer or a non-empty list of integers, got ${JSON.stringify(axes)}`);
  }
  return axesList;
}

/** Keras' check of key against value: every axis but the last equal (`caller` names the call). */
export function checkKeyValue(valueShape, keyShape, caller) {
  if (valueShape.slice(1, -1).join(',') !== keyShape.slice(1, -1).join(',')) {
    throw new RangeError(`${caller}: all dimensions of value and key, except the last one, must be equal; `
      + `got value [${list(valueShape)}] and key [${list(keyShape)}]`);
  }
}

/** The output's shape (Keras' compute_output_shape): the query's, its last axis outputShape's (an integer, a tuple, or absent: the query's features). */
export function outputShapeOf(queryShape, outputShape) {
  return [...queryShape.slice(0, -1), ...[outputShape ?? queryShape[queryShape.length - 1]].flat()];
}

/** The scores' shape over attention axes (`layout`, attention-axes.js): [query's other axes..., H, query's attended..., value's attended...]. */
export function scoresShapeOf(queryShape, valueShape, { batch, attended }, numHeads) {
  return [...batch.map((a) => queryShape[a]), numHeads, ...attended.map((a) => queryShape[a]), ...attended.map((a) => valueShape[a])];
}

/** value or key (`name`) of the query's rank. */
export function checkSameRank(name, shape, rank, caller, dims = list) {
  if (shape.length !== rank) throw new RangeError(`${caller}: ${name} must have the query's rank ${rank}, got shape [${dims(shape)}]`);
}

/** value or key (`name`) with the query's sizes on the axes that are not attended (`layout.batch`). */
export function checkBatchAxes(name, shape, queryShape, { batch }, caller, dims = list) {
  if (batch.some((a) => shape[a] !== queryShape[a])) {
    throw new RangeError(`${caller}: ${name}'s non-attended axes [${dims(batch.map((a) => shape[a]))}] must equal the query's [${dims(batch.map((a) => queryShape[a]))}]`);
  }
}

/**
 * useCausalMask on an input of rank > 3. Keras' causal mask is [1, T, S] from axis 1 of query and
 * value, broadcast over the scores' last axes: a causal mask over one attended axis when that axis
 * is axis 1 (or as long).
 */
export function checkCausalOverAxes(queryShape, valueShape, { attended }, caller, dims = list) {
  const a = attended[0];
  if (attended.length !== 1 || queryShape[1] !== queryShape[a] || valueShape[1] !== valueShape[a]) {
    throw new RangeError(`${caller}: useCausalMask on a rank-${queryShape.length} input needs one attention axis as long as axis 1 `
      + `(Keras' causal mask is [1, T, S] from axis 1, broadcast over the attended axes), got attentionAxes [${dims(attended)}]`);
  }
}

/** coreMasksFromKeras' error (layout.js) as both surfaces word it: a shape rule of attentionMask names it. */
export const maskErrorMessage = (error) => (error.startsWith('expected') ? `attentionMask: ${error}` : error);
