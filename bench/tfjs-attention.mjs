// The peer of the training table: one self-attention layer's training step as a tfjs user must
// write it today. tfjs 4.22 has no usable MultiHeadAttention (its Keras port is not exported,
// and its einsum has no gradient: tfjs issue #8277), so attention is built from differentiable
// ops (tf.matMul, tf.softmax), with the layer's q/k/v and output projections:
//   loss = sum(output * G), gradients of the input and of all eight weights (tf.grads).
// The input goes in and every gradient comes out as a Float32Array, as our API returns them.

/**
 * @param tf @tensorflow/tfjs-core with a backend set
 * @param shape { B, L, E, H, Dh }
 * @param weights trainingWeights(shape) of bench/shapes.mjs
 * @returns { forward(x): Float32Array, step(x, g): { dx, dWo, ... } }
 */
export function tfjsAttention(tf, { B, L, E, H, Dh }, weights) {
  const qd = H * Dh;
  const bias = weights.in_proj_bias;
  // Parameters live in the backend, as a tfjs model's would.
  const params = [
    tf.tensor2d(weights.q_proj_weight, [qd, E]), tf.tensor1d(bias.subarray(0, qd)),
    tf.tensor2d(weights.k_proj_weight, [qd, E]), tf.tensor1d(bias.subarray(qd, 2 * qd)),
    tf.tensor2d(weights.v_proj_weight, [qd, E]), tf.tensor1d(bias.subarray(2 * qd)),
    tf.tensor2d(weights['out_proj.weight'], [E, qd]), tf.tensor1d(weights['out_proj.bias']),
  ];
  const scale = tf.scalar(1 / Math.sqrt(Dh));

  // x: [B*L, E] -> output [B*L, E]
  function attention(x, wq, bq, wk, bk, wv, bv, wo, bo) {
    const heads = (w, b) => tf.transpose(tf.reshape(tf.add(tf.matMul(x, w, false, true), b), [B, L, H, Dh]), [0, 2, 1, 3]);
    const q = heads(wq, bq), k = heads(wk, bk), v = heads(wv, bv);  // [B, H, L, Dh]
    const p = tf.softmax(tf.mul(tf.matMul(q, k, false, true), scale));  // [B, H, L, L]
    const o = tf.reshape(tf.transpose(tf.matMul(p, v), [0, 2, 1, 3]), [B * L, qd]);
    return tf.add(tf.matMul(o, wo, false, true), bo);
  }

  return {
    forward(xData) {
      return tf.tidy(() => attention(tf.tensor2d(xData, [B * L, E]), ...params).dataSync());
    },
    step(xData, gData) {
      return tf.tidy(() => {
        const x = tf.tensor2d(xData, [B * L, E]), g = tf.tensor2d(gData, [B * L, E]);
        const [dx, ...dw] = tf.grads((xs, ...w) => tf.sum(tf.mul(attention(xs, ...w), g)))([x, ...params]);
        return { dx: dx.dataSync(), dw: dw.map((d) => d.dataSync()) };
      });
    },
  };
}
