// A float64 reference of the attention's steps (docs/steps.md), written from the formulas, for
// tests/js/steps.test.js: q, k, v (projection, bias, q/k norms, rotary), scores, logits (softcap, ALiBi,
// masks, causal and sliding-window blocks), pattern (softmax with an optional sink), z, gate
// (config.gate: sigmoid of the query's gate projection, multiplying z), result and output, with an optional patch applied where its step is made, so everything after it
// reads the patched values. Its output and per-head pattern are checked against PyTorch's
// output and weights in the fixtures (tests/fixtures), which pins it to a trusted implementation.

/** Element (i0, i1, ...) of a row-major array of shape `shape`. */
const at = (shape, ...index) => index.reduce((offset, i, d) => offset * shape[d] + i, 0);

/**
 * config: the layer's resolved config (layer.config); sd: its state dict; inputs: { query, key?,
 * value?, causal, keyPaddingMask?, attnMask?, positions? } as forward takes them (unbatched
 * allowed); patch: { step, data (the step's shape), heads (indices; null = all) }.
 * Returns { q, k, v, scores, logits, pattern, z, gate (with config.gate), result, output } as
 * { data: Float64Array, shape }.
 */
export function attentionSteps(config, sd, inputs, patch = null) {
  const { embedDim: E, numHeads: H, numKvHeads: Hkv, headDim: Dh, valueHeadDim: Dv, outputDim: OD, scale } = config;
  const batched = inputs.query.shape.length === 3;
  const B = batched ? inputs.query.shape[0] : 1, L = inputs.query.shape.at(-2);
  const self = !inputs.key;
  const key = inputs.key ?? inputs.query, value = inputs.value ?? inputs.query;
  const S = key.shape.at(-2), kdim = key.shape.at(-1), vdim = value.shape.at(-1);
  const QD = H * Dh, KV = Hkv * Dh, VKV = Hkv * Dv, AD = H * Dv;
  const fused = sd.in_proj_weight;
  const weight = (name, offset, rows, cols) => (fused ? fused.subarray(offset * cols, (offset + rows) * cols) : sd[name]);
  const Wq = weight('q_proj_weight', 0, QD, E), Wk = weight('k_proj_weight', QD, KV, kdim), Wv = weight('v_proj_weight', QD + KV, VKV, vdim);
  const bias = (offset, n) => (sd.in_proj_bias ? sd.in_proj_bias.subarray(offset, offset + n) : new Float32Array(n));
  const patchStep = (step, tensor, headAxis) => {
    if (!patch || patch.step !== step) return;
    const patched = (h) => patch.heads === null || patch.heads.includes(h);
    for (let i = 0; i < tensor.data.length; i++) {
      // The head index of element i: its coordinate along headAxis.
      const inner = tensor.shape.slice(headAxis + 1).reduce((a, b) => a * b, 1);
      const h = Math.floor(i / inner) % tensor.shape[headAxis];
      if (patched(h)) tensor.data[i] = patch.data[i];
    }
  };

  // q, k, v: [B, heads, rows, D], projected with bias, then rotated (positions of each row).
  const project = (x, W, b, heads, rows, D, positionOf, norm = null) => {
    const t = { data: new Float64Array(B * heads * rows * D), shape: [B, heads, rows, D] };
    const width = x.shape.at(-1);
    for (let bi = 0; bi < B; bi++) {
      for (let r = 0; r < rows; r++) {
        for (let h = 0; h < heads; h++) {
          for (let d = 0; d < D; d++) {
            let acc = b[h * D + d];
            for (let e = 0; e < width; e++) acc += x.data[(bi * rows + r) * width + e] * W[(h * D + d) * width + e];
            t.data[at(t.shape, bi, h, r, d)] = acc;
          }
        }
        if (norm) normalize(t, bi, r, heads, D, norm);
        for (let h = 0; h < heads; h++) {
          if (positionOf && config.rotary) rotate(t.data.subarray(at(t.shape, bi, h, r, 0), at(t.shape, bi, h, r, 0) + D), positionOf(bi, r));
        }
      }
    }
    return t;
  };
  // config.qkNorm: x / sqrt(mean(x^2) + eps) * w over each head, or over the row's heads together.
  const normalize = (t, bi, r, heads, D, weight) => {
    const perHead = config.qkNorm.over === 'head';
    const groups = perHead ? heads : 1, size = perHead ? D : heads * D;
    const index = (f) => at(t.shape, bi, Math.floor(f / D), r, f % D);  // feature f of the row's heads
    for (let g = 0; g < groups; g++) {
      let squares = 0;
      for (let f = g * size; f < (g + 1) * size; f++) squares += t.data[index(f)] ** 2;
      const inverseRms = 1 / Math.sqrt(squares / size + config.qkNorm.eps);
      for (let f = g * size; f < (g + 1) * size; f++) t.data[index(f)] *= inverseRms * weight[f - g * size];
    }
  };
  const rotate = (head, position) => {
    const { dim, base, interleaved } = config.rotary;
    for (let t = 0; t < dim / 2; t++) {
      const angle = position / base ** ((2 * t) / dim);
      const a = interleaved ? 2 * t : t, b = interleaved ? 2 * t + 1 : t + dim / 2;
      const xa = head[a], xb = head[b];
      head[a] = xa * Math.cos(angle) - xb * Math.sin(angle);
      head[b] = xb * Math.cos(angle) + xa * Math.sin(angle);
    }
  };
  const queryPosition = (b, i) => (inputs.positions ? inputs.positions.data[b * L + i] : i);
  const qNorm = config.qkNorm ? sd['q_norm.weight'] : null, kNorm = config.qkNorm ? sd['k_norm.weight'] : null;
  const q = project(inputs.query, Wq, bias(0, QD), H, L, Dh, queryPosition, qNorm);
  const k = project(key, Wk, bias(QD, KV), Hkv, S, Dh, self ? queryPosition : (b, j) => j, kNorm);
  const v = project(value, Wv, bias(QD + KV, VKV), Hkv, S, Dv, null);
  patchStep('q', q, 1);
  patchStep('k', k, 1);
  patchStep('v', v, 1);

  // scores, logits, pattern: [B, H, L, S].
  const square = () => ({ data: new Float64Array(B * H * L * S), shape: [B, H, L, S] });
  const scores = square(), logits = square(), pattern = square();
  const kpm = inputs.keyPaddingMask, am = inputs.attnMask;
  const maskValue = (mask, index) => (mask.data instanceof Uint8Array ? (mask.data[index] ? -Infinity : 0) : mask.data[index]);
  const perHeadMask = am && am.shape.length === 3;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const kvh = Math.floor(h / (H / Hkv));
      for (let i = 0; i < L; i++) {
        for (let j = 0; j < S; j++) {
          let dot = 0;
          for (let d = 0; d < Dh; d++) dot += q.data[at(q.shape, b, h, i, d)] * k.data[at(k.shape, b, kvh, j, d)];
          const s = scale * dot;
          scores.data[at(scores.shape, b, h, i, j)] = s;
          let blocked = (inputs.causal && j > i) || false;
          const W = config.slidingWindow ?? 0;
          if (W > 0) blocked ||= inputs.causal ? j <= i - W : Math.abs(i - j) >= W;
          let add = 0;
          if (kpm) add += maskValue(kpm, b * S + j);
          if (am) add += maskValue(am, perHeadMask ? ((b * H + h) * L + i) * S + j : i * S + j);
          let logit = -Infinity;
          if (!blocked && add !== -Infinity) {
            logit = s;
            if (config.softcap) logit = config.softcap * Math.tanh(logit / config.softcap);
            if (config.alibiSlopes) logit -= config.alibiSlopes[h] * Math.abs(i - j);
            logit += add;
          }
          logits.data[at(logits.shape, b, h, i, j)] = logit;
        }
        const row = logits.data.subarray(at(logits.shape, b, h, i, 0), at(logits.shape, b, h, i, 0) + S);
        const out = pattern.data.subarray(at(pattern.shape, b, h, i, 0), at(pattern.shape, b, h, i, 0) + S);
        if (row.every((x) => x === -Infinity)) continue;  // a fully blocked row: zeros
        const sink = config.sinks ? sd.sinks[h] : -Infinity;
        const max = Math.max(sink, ...row);
        let sum = Math.exp(sink - max);
        for (let j = 0; j < S; j++) sum += (out[j] = Math.exp(row[j] - max));
        for (let j = 0; j < S; j++) out[j] /= sum;
      }
    }
  }
  patchStep('pattern', pattern, 1);

  // z [B, L, H, Dv], result [B, L, H, OD], output [B, L, OD].
  const z = { data: new Float64Array(B * L * H * Dv), shape: [B, L, H, Dv] };
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const kvh = Math.floor(h / (H / Hkv));
      for (let i = 0; i < L; i++) {
        for (let d = 0; d < Dv; d++) {
          let acc = 0;
          for (let j = 0; j < S; j++) acc += pattern.data[at(pattern.shape, b, h, i, j)] * v.data[at(v.shape, b, kvh, j, d)];
          z.data[at(z.shape, b, i, h, d)] = acc;
        }
      }
    }
  }
  patchStep('z', z, 2);
  // gate [B, L, H, Dv]: sigmoid(query W_gate^T + b_gate); out_proj then reads z * gate.
  let gate = null;
  const combined = z.data.slice();
  if (config.gate) {
    gate = { data: new Float64Array(B * L * H * Dv), shape: [B, L, H, Dv] };
    const Wg = sd['gate_proj.weight'], bg = sd['gate_proj.bias'];
    for (let row = 0; row < B * L; row++) {
      for (let c = 0; c < H * Dv; c++) {
        let acc = bg ? bg[c] : 0;
        for (let e = 0; e < E; e++) acc += inputs.query.data[row * E + e] * Wg[c * E + e];
        gate.data[row * H * Dv + c] = 1 / (1 + Math.exp(-acc));
      }
    }
    patchStep('gate', gate, 2);
    for (let i = 0; i < combined.length; i++) combined[i] *= gate.data[i];
  }
  const Wo = sd['out_proj.weight'], bo = sd['out_proj.bias'];
  const result = { data: new Float64Array(B * L * H * OD), shape: [B, L, H, OD] };
  const output = { data: new Float64Array(B * L * OD), shape: [B, L, OD] };
  for (let b = 0; b < B; b++) {
    for (let i = 0; i < L; i++) {
      for (let o = 0; o < OD; o++) {
        let total = bo ? bo[o] : 0;
        for (let h = 0; h < H; h++) {
          let acc = 0;
          for (let d = 0; d < Dv; d++) acc += Wo[o * AD + h * Dv + d] * combined[at(z.shape, b, i, h, d)];
          result.data[at(result.shape, b, i, h, o)] = acc;
          total += acc;
        }
        output.data[at(output.shape, b, i, o)] = total;
      }
    }
  }
  const steps = { q, k, v, scores, logits, pattern, z, ...(gate ? { gate } : {}), result, output };
  if (!batched) for (const t of Object.values(steps)) t.shape = t.shape.slice(1);
  return steps;
}
