// A Keras model converted by tensorflowjs_converter records `mha(x, x)` as the node
// [["conv1d", 0, 0, {"value": ["conv1d", 0, 0]}]]: only the first argument is the node's input, the
// others are kwargs holding references [layer name, node index, tensor index] (keras v2.15.0
// engine/node.py Node.serialize). tfjs-layers (4.22, engine/container.ts processNode) hands those
// kwargs to apply() verbatim, as plain arrays, after camelCasing every string in them
// (utils/serialization_utils.ts convertPythonicToTs: 'conv1d_1' arrives as 'conv1d1').
// These helpers find the tensor such a reference names among the query's own ancestors: the only
// tensors a layer can reach while tfjs deserializes a model.

/** Whether `x` is a converter's node reference: [layer name, node index, tensor index]. */
export function isNodeReference(x) {
  return Array.isArray(x) && x.length === 3 && typeof x[0] === 'string' && Number.isInteger(x[1]) && Number.isInteger(x[2]);
}

// tfjs-layers' toCamelCase (utils/generic_utils.ts), which its loader applied to the reference's name.
const camelCase = (name) => (name.length <= 1 || !name.includes('_') ? name : name.replace(/[_]+(\w|$)/g, (m, c) => c.toUpperCase()));

/**
 * The SymbolicTensor `reference` names, searched from `query` up through the layers that produced it
 * (query itself first), or null when it is not among them.
 */
export function resolveNodeReference(reference, query) {
  const [layerName, nodeIndex, tensorIndex] = reference;
  const seen = new Set();
  const pending = [query];
  while (pending.length > 0) {
    const tensor = pending.shift();
    if (seen.has(tensor)) continue;
    seen.add(tensor);
    const layer = tensor.sourceLayer;
    if (!layer) continue;
    if ((layer.name === layerName || camelCase(layer.name) === layerName)
      && tensor.nodeIndex === nodeIndex && tensor.tensorIndex === tensorIndex) return tensor;
    const node = layer.inboundNodes?.[tensor.nodeIndex];
    if (node) pending.push(...node.inputTensors);
  }
  return null;
}
