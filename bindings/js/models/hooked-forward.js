// One forward of a CheckpointModel through TransformerLens' hook points (a HookRun says which the
// run must produce). A point nobody asked for costs nothing: its block takes the model's plain
// path. The attention's inner points are the layer's own captured steps (docs/steps.md), turned
// into TransformerLens' layout; a replacement there goes back into the layer as a patch, so the
// attention that follows is the package's, never a copy in JavaScript. The run may start inside
// the model (`from`): the sweeps of patching.js recompute only what lies after a patch.
import { activate, activation, addInto, rmsNorm } from './elementwise.js';
import { rotaryOf } from './families/common.js';
import { swapLeading } from './layout.js';
import { rotateHalf } from './rotary.js';

/** Softmax of each row of `cols` (a -Infinity is a blocked key; a row with none open, or NaN, is 0). */
function softmaxRows(scores, cols) {
  const out = new Float32Array(scores.length);
  for (let r = 0; r < scores.length / cols; r++) {
    const row = scores.subarray(r * cols, (r + 1) * cols);
    const max = row.reduce((m, v) => Math.max(m, v), -Infinity);
    if (!Number.isFinite(max)) continue;
    let total = 0;
    for (let c = 0; c < cols; c++) total += (out[r * cols + c] = Math.exp(row[c] - max));
    if (!(total > 0) || Number.isNaN(total)) { out.fill(0, r * cols, (r + 1) * cols); continue; }
    for (let c = 0; c < cols; c++) out[r * cols + c] /= total;
  }
  return out;
}

// The attention's inner points in the order TransformerLens fires them, each with the layer's
// step it reads ('logits' is the layer's name for the scaled, masked scores).
const ATTENTION_POINTS = [
  ['attn.hook_q', 'q'], ['attn.hook_k', 'k'], ['attn.hook_v', 'v'],
  ['attn.hook_rot_q', 'q'], ['attn.hook_rot_k', 'k'],
  ['attn.hook_attn_scores', 'logits'], ['attn.hook_pattern', 'pattern'],
  ['attn.hook_z', 'z'], ['attn.hook_result', 'result'],
];
// A patch of one step recomputes what follows it from the layer's input, so it keeps an earlier
// patch only if it comes after everything that patch changed: which steps each patch carries.
const CARRIES = { q: ['q'], k: ['k'], v: ['v'], pattern: ['q', 'k', 'pattern'], z: ['q', 'k', 'v', 'pattern', 'z'] };

export class HookedForward {
  #model;
  #a;
  #batch = 1;   // the run's sequences side by side (run()'s `batch`)
  #padding = null;  // an encoder run's key padding mask (Uint8Array [L], 1 = padding) or null

  constructor(model) {
    this.#model = model;
    this.#a = model.architecture;
  }

  /**
   * Runs ids [L] through the model, passing every point `run` wants. `from` starts inside the
   * model: { layer, stage: 'pre' | 'mid', resid: Float32Array [L, E] } (the residual before layer's
   * block, or after its attention: in an attention-only model, the block's output; a parallel
   * block's 'mid' also takes `residPre`, the resid_pre rows its MLP reads). `output`: 'logits'
   * ([L, V]), 'residual' (the final resid_post [L, E], before the final norm) or 'both'. Resolves to
   * { logits?, residual? }.
   * `batch` > 1 (with `from`, and a run that wants no point): `from.resid` holds that many
   * sequences [batch, L, E] of the same length, run side by side (the sweeps' patches, whose
   * products are faster on more rows); the results then hold every sequence's rows.
   */
  async run(ids, run, { from = null, output = 'logits', batch = 1, padding = null, tokenTypes = null } = {}) {
    const { numLayers } = this.#a;
    this.#padding = null;
    if (this.#a.encoder) return this.#runEncoder(ids, run, { output, padding, tokenTypes });
    const L = ids.length;
    this.#batch = batch;
    let x = from ? Float32Array.from(from.resid) : await this.#embed(ids, run);
    const parallel = this.#a.parallelResidual;
    for (let l = from ? from.layer : 0; l < numLayers; l++) {
      const p = `blocks.${l}.`;
      const layer = this.#model.layer(l);
      let residPre;  // what a parallel block's MLP reads
      if (!(from && from.layer === l && from.stage === 'mid')) {
        x = await run.at(p + 'hook_resid_pre', x);
        residPre = x;
        const input = await this.#norm(x, layer.norm1, p + 'ln1', run);
        let attnOut = await this.#attention(l, layer, input, L, run);
        if (layer.postAttnNorm) attnOut = await this.#norm(attnOut, layer.postAttnNorm, p + 'ln1_post', run);
        attnOut = await run.at(p + 'hook_attn_out', attnOut);
        // x is this run's own array (the cache and the hooks got copies); a parallel block's MLP
        // still reads it as resid_pre, so only then the sum goes to a new one.
        if (parallel) x = Float32Array.from(x);
        addInto(x, attnOut);
      } else {
        residPre = from.residPre;
      }
      if (layer.up) {  // (an attention-only block ends with its attention)
        if (!parallel) x = await run.at(p + 'hook_resid_mid', x);
        const mlpIn = await this.#norm(parallel ? residPre : x, layer.norm2, p + 'ln2', run);
        let mlpOut = await this.#mlp(layer, mlpIn, L, p, run);
        if (layer.postMlpNorm) mlpOut = await this.#norm(mlpOut, layer.postMlpNorm, p + 'ln2_post', run);
        mlpOut = await run.at(p + 'hook_mlp_out', mlpOut);
        addInto(x, mlpOut);
      }
      x = await run.at(p + 'hook_resid_post', x);
    }
    const result = {};
    if (output !== 'logits') result.residual = x;
    if (output !== 'residual') {
      const normalized = await this.#norm(x, this.#model.finalNorm, 'ln_final', run);
      result.logits = this.#model.unembedNormalized(normalized, batch * L);
    }
    return result;
  }

  /**
   * An encoder (BERT, RoBERTa) on ids [L]: embeddings (word + position + token type) and their
   * LayerNorm, post-LN blocks (resid_mid = resid_pre + attn; ln1; resid_post = ln1's output + mlp;
   * ln2), every key attending to every key but the padding ones, then the masked-LM head where the
   * model has one. Resolves to { logits [L, V] } or, without a head, { residual: the last hidden state [L, E] }.
   */
  async #runEncoder(ids, run, { output, padding, tokenTypes }) {
    const m = this.#model, a = this.#a, L = ids.length;
    this.#batch = 1;
    this.#padding = padding;
    const x = Float32Array.from(await run.at('embed.hook_embed', m.embed(ids, 0, { positions: false })));
    addInto(x, await run.at('embed.hook_pos_embed', m.encoderPositionRows(ids)));
    if (a.typeVocabSize > 0) addInto(x, await run.at('embed.hook_token_type_embed', m.tokenTypeRows(tokenTypes, L)));
    let resid = await run.at('hook_full_embed', await this.#norm(x, m.embedNorm, 'embed.ln', run));
    for (let l = 0; l < a.numLayers; l++) {
      const p = `blocks.${l}.`;
      const layer = m.layer(l);
      resid = await run.at(p + 'hook_resid_pre', resid);
      const attnOut = await run.at(p + 'hook_attn_out', await this.#attention(l, layer, resid, L, run));
      const mid = Float32Array.from(resid);
      addInto(mid, attnOut);
      const normalized = await this.#norm(await run.at(p + 'hook_resid_mid', mid), layer.norm1, p + 'ln1', run);
      const mlpOut = await run.at(p + 'hook_mlp_out', await this.#mlp(layer, normalized, L, p, run));
      const post = Float32Array.from(normalized);
      addInto(post, mlpOut);
      const residPost = await run.at(p + 'hook_resid_post', post);
      resid = await run.at(p + 'hook_normalized_resid_post', await this.#norm(residPost, layer.norm2, p + 'ln2', run));
    }
    this.#padding = null;
    const result = {};
    if (output !== 'logits' || !m.mlmHead) result.residual = resid;
    if (output !== 'residual' && m.mlmHead) {
      const h = activate(m.product(resid, L, m.mlmHead.dense), 'gelu');
      const normalized = await this.#norm(h, m.mlmHead.norm, 'mlm_head.ln', run);
      result.logits = m.unembedNormalized(normalized, L);
    }
    return result;
  }

  async #embed(ids, run) {
    const { positions } = this.#model;
    if (!run.wants('hook_embed') && !run.wants('hook_pos_embed')) return this.#model.embed(ids);
    const embed = await run.at('hook_embed', this.#model.embed(ids, 0, { positions: false }));
    const x = Float32Array.from(embed);
    if (positions) addInto(x, await run.at('hook_pos_embed', this.#model.positionRows(0, ids.length)));
    return x;
  }

  /** A norm through its two points: scale [L, 1] and normalized [L, E], then weight (and bias). */
  async #norm(x, norm, prefix, run) {
    const scaleName = `${prefix}.hook_scale`, normalizedName = `${prefix}.hook_normalized`;
    if (!run.wants(scaleName) && !run.wants(normalizedName)) return this.#model.normalize(x, norm);
    const { embedDim: E, normEps } = this.#a;
    const rows = x.length / E;
    const centred = Float32Array.from(x);
    if (norm.bias) {
      for (let r = 0; r < rows; r++) {
        let mean = 0;
        for (let i = 0; i < E; i++) mean += x[r * E + i];
        mean /= E;
        for (let i = 0; i < E; i++) centred[r * E + i] -= mean;
      }
    }
    const scale = new Float32Array(rows);
    for (let r = 0; r < rows; r++) {
      let squares = 0;
      for (let i = 0; i < E; i++) squares += centred[r * E + i] ** 2;
      scale[r] = Math.sqrt(squares / E + normEps);
    }
    const scaled = await run.at(scaleName, scale);
    let normalized = new Float32Array(x.length);
    for (let r = 0; r < rows; r++) {
      for (let i = 0; i < E; i++) normalized[r * E + i] = centred[r * E + i] / scaled[r];
    }
    normalized = await run.at(normalizedName, normalized);
    const y = new Float32Array(x.length);
    for (let r = 0; r < rows; r++) {
      for (let i = 0; i < E; i++) y[r * E + i] = normalized[r * E + i] * norm.weight[i] + (norm.bias ? norm.bias[i] : 0);
    }
    return y;
  }

  /**
   * hook_q or hook_k (`step` 'q' or 'k') of layer l, [L, heads, D], from the layer's captured step
   * (rotated: rotated back here). With q/k norms the captured step is after them, and TransformerLens'
   * hook_q before: the projection is then run again on the attention's input rows.
   */
  async #beforeRotary(l, layer, step, captured, input, L) {
    const { numHeads: H, numKvHeads: K, headDim: D } = this.#a;
    const heads = step === 'q' ? H : K;
    if (layer.qkNorm) return this.#model.product(input, L, await this.#model.preNormProjection(l, step));
    const rotary = rotaryOf(this.#a, l);
    const value = swapLeading(captured, heads, L, D);
    return rotary ? rotateHalf(value, L, heads, D, rotary.base, -1, rotary.dim) : value;
  }

  /** A hook_q / hook_k replacement [L, heads, D] as the layer's step takes it: normed (qkNorm), rotated, head-first. */
  #asStep(l, layer, step, rows, L) {
    const { numHeads: H, numKvHeads: K, headDim: D, qkNorm } = this.#a;
    const heads = step === 'q' ? H : K;
    let value = rows;
    if (layer.qkNorm) value = rmsNorm(value, qkNorm.over === 'head' ? D : heads * D, layer.qkNorm[step], qkNorm.eps);
    const rotary = rotaryOf(this.#a, l);
    if (rotary) value = rotateHalf(value, L, heads, D, rotary.base, 1, rotary.dim);
    return swapLeading(value, L, heads, D);
  }

  /** The attention's output [L, E] for its input rows, through its inner points. */
  async #attention(l, layer, input, L, run) {
    const p = `blocks.${l}.`;
    const { numHeads: H, numKvHeads: K, headDim: D, embedDim: E } = this.#a;
    const points = ATTENTION_POINTS.filter(([name]) => run.wants(p + name));
    const shape = this.#batch > 1 ? [this.#batch, L, E] : [L, E];
    const call = (patch) => layer.attention.forwardAsync({ data: input, shape }, null, null, {
      ...(this.#a.encoder ? {} : { causal: true }),
      ...(this.#padding ? { keyPaddingMask: { data: this.#padding, shape: [L] } } : {}),
      ...(points.length ? { capture: [...new Set(points.map(([, step]) => step))] } : {}),
      ...(patch ? { patch } : {}),
    });
    let result = await call(null);
    let patched = null;        // the step the last rerun patched
    let resultRows = null;     // hook_result's replacement: the output is then its sum plus b_O
    const heads = { q: H, k: K };
    for (const [name, step] of points) {
      const full = p + name;
      const captured = result.captured[step].data;
      let value;
      if (name === 'attn.hook_q' || name === 'attn.hook_k') {
        value = await this.#beforeRotary(l, layer, step, captured, input, L);
      } else if (step === 'q' || step === 'k' || step === 'v') {
        value = swapLeading(captured, heads[step] ?? K, L, D);
      } else {
        value = captured;
      }
      const replaced = await run.at(full, value);
      if (replaced === value) continue;
      if (step === 'result') { resultRows = replaced; continue; }
      let patchStep = step, patchData;
      if (step === 'logits') {
        patchStep = 'pattern';
        patchData = softmaxRows(replaced, L);
      } else if (name === 'attn.hook_q' || name === 'attn.hook_k') {
        patchData = this.#asStep(l, layer, step, replaced, L);
      } else if (step === 'q' || step === 'k' || step === 'v') {
        patchData = swapLeading(replaced, L, heads[step] ?? K, D);
      } else {
        patchData = replaced;
      }
      if (patched && !CARRIES[patchStep].includes(patched)) {
        throw new TypeError(`runWithHooks: ${full} replaces a value after a hook in ${p}attn replaced its ${patched}, and the attention takes one patched step a call (a later one carries an earlier one only if it follows it: q or k into pattern, anything into z); replace one of them, or ${p}attn.hook_z`);
      }
      patched = patchStep;
      // (the pattern has the scores' shape: a scores hook captured no pattern)
      result = await call({ [patchStep]: { data: patchData, shape: result.captured[step].shape } });
    }
    if (!resultRows) return result.output.data;
    // output = Σ_h result[:, h] + out_proj.bias (docs/steps.md).
    const out = new Float32Array(L * E);
    const bias = layer.outBias;
    for (let i = 0; i < L; i++) {
      for (let h = 0; h < H; h++) {
        for (let e = 0; e < E; e++) out[i * E + e] += resultRows[(i * H + h) * E + e];
      }
      if (bias) for (let e = 0; e < E; e++) out[i * E + e] += bias[e];
    }
    return out;
  }

  /** The MLP's output [L, E] for its input rows, through hook_pre (hook_pre_linear) and hook_post. */
  async #mlp(layer, h, L, p, run) {
    const names = ['mlp.hook_pre', 'mlp.hook_pre_linear', 'mlp.hook_post'].map((n) => p + n);
    if (!names.some((n) => run.wants(n))) return this.#model.mlp(layer, h, h.length / this.#a.embedDim);
    const { hiddenDim: I, mlp } = this.#a;
    const up = this.#model.product(h, L, layer.up);
    let post;
    if (!mlp.gated) {
      const pre = await run.at(names[0], up);
      post = activate(Float32Array.from(pre), mlp.act);
    } else {
      // The stacked product's rows are [gate (I), up (I)].
      const gate = new Float32Array(L * I), linear = new Float32Array(L * I);
      for (let r = 0; r < L; r++) {
        gate.set(up.subarray(r * 2 * I, r * 2 * I + I), r * I);
        linear.set(up.subarray(r * 2 * I + I, (r + 1) * 2 * I), r * I);
      }
      const pre = await run.at(names[0], gate);
      const preLinear = await run.at(names[1], linear);
      const f = activation(mlp.act);
      post = new Float32Array(L * I);
      for (let i = 0; i < post.length; i++) post[i] = f(pre[i]) * preLinear[i];
    }
    post = await run.at(names[2], post);
    return this.#model.product(post, L, layer.down);
  }
}
