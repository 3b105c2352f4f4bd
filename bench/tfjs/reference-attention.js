// The attention layers a tfjs user has without mha-wasm, for the training benchmark's baseline rows:
// Keras' MultiHeadAttention written from tf.matMul and tf.softmax (every op differentiable in tfjs),
// and an identity (the rest of the model's cost alone). Self-attention only: apply(x, { value: x }).

/** Makes the two layer classes for a tfjs namespace. */
export function referenceAttentionLayers(tf) {
  class OpsAttention extends tf.layers.Layer {
    static className = 'BenchOpsAttention';

    constructor({ numHeads, keyDim, ...rest }) {
      super(rest);
      Object.assign(this, { numHeads, keyDim });
    }

    apply(inputs) { return super.apply(inputs); }  // self-attention: { value } is the query

    build(inputShape) {
      const features = inputShape[inputShape.length - 1], inner = this.numHeads * this.keyDim;
      const glorot = tf.initializers.glorotUniform({}), zeros = tf.initializers.zeros();
      this.wq = this.addWeight('query/kernel', [features, inner], 'float32', glorot);
      this.bq = this.addWeight('query/bias', [inner], 'float32', zeros);
      this.wk = this.addWeight('key/kernel', [features, inner], 'float32', glorot);
      this.bk = this.addWeight('key/bias', [inner], 'float32', zeros);
      this.wv = this.addWeight('value/kernel', [features, inner], 'float32', glorot);
      this.bv = this.addWeight('value/bias', [inner], 'float32', zeros);
      this.wo = this.addWeight('attention_output/kernel', [inner, features], 'float32', glorot);
      this.bo = this.addWeight('attention_output/bias', [features], 'float32', zeros);
      this.built = true;
    }

    call(inputs) {
      return tf.tidy(() => {
        const x = Array.isArray(inputs) ? inputs[0] : inputs;
        const [B, T, F] = x.shape, H = this.numHeads, D = this.keyDim;
        const rows = tf.reshape(x, [B * T, F]);
        const heads = (w, b) => tf.transpose(tf.reshape(tf.add(tf.matMul(rows, w.read()), b.read()), [B, T, H, D]), [0, 2, 1, 3]);
        const q = tf.mul(heads(this.wq, this.bq), 1 / Math.sqrt(D)), k = heads(this.wk, this.bk), v = heads(this.wv, this.bv);
        const attended = tf.matMul(tf.softmax(tf.matMul(q, k, false, true)), v);  // [B, H, T, D]
        const merged = tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [B * T, H * D]);
        return tf.reshape(tf.add(tf.matMul(merged, this.wo.read()), this.bo.read()), [B, T, F]);
      });
    }

    computeOutputShape(inputShape) { return inputShape; }
  }

  class IdentityAttention extends tf.layers.Layer {
    static className = 'BenchIdentityAttention';

    apply(inputs) { return super.apply(inputs); }

    call(inputs) { return tf.clone(Array.isArray(inputs) ? inputs[0] : inputs); }

    computeOutputShape(inputShape) { return inputShape; }
  }

  return { OpsAttention, IdentityAttention };
}
