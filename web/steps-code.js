// The Steps view's code panel: the computation the page ran, written as a short NumPy, PyTorch and
// Keras program in the tutorials' words (split_heads, scaled_attention_logits, attention_weights,
// concat_attention, ...). Each line names the step it computes, so hovering a step in the chain
// highlights its line (docs/steps.md maps the names to the API's steps).

/**
 * The programs for one layer: { numpy, pytorch, keras }, each a list of { step, text } lines
 * (step: the chain's step id, or null for a line that computes none).
 * sizes: { L, S, E, H, Hkv, Dh, Dv, scale, causal, padding }.
 */
export function stepsPrograms({ L, S, E, H, Hkv, Dh, Dv, scale, causal, padding }) {
  const defaultScale = Math.abs(scale - 1 / Math.sqrt(Dh)) < 1e-7;
  const scaleText = defaultScale ? `np.sqrt(${Dh})` : `${(1 / scale).toPrecision(4)}`;
  const maskLine = causal && padding ? 'blocked = np.triu(np.ones((L, S), bool), k=1) | padding[None, :]'
    : causal ? 'blocked = np.triu(np.ones((L, S), bool), k=1)  # causal: no key after the query'
      : padding ? 'blocked = np.broadcast_to(padding[None, :], (L, S))  # padded keys' : null;
  const gqa = Hkv < H ? `  # ${Hkv} key/value heads, each read by ${H / Hkv} query heads` : '';
  const numpy = [
    [null, `# one layer, L = ${L} tokens, E = ${E}, H = ${H} heads of Dh = ${Dh}`],
    ['x', 'x = layer_input                                   # [L, E]'],
    ['q', 'q = x @ W_q.T + b_q                               # [L, H * Dh]'],
    ['k', 'k = x @ W_k.T + b_k                               # [S, Hkv * Dh]'],
    ['v', 'v = x @ W_v.T + b_v                               # [S, Hkv * Dv]'],
    [null, 'def split_heads(t, heads):                       # [T, heads * D] -> [heads, T, D]'],
    [null, '    return t.reshape(t.shape[0], heads, -1).transpose(1, 0, 2)'],
    ['q', `q, k, v = split_heads(q, ${H}), split_heads(k, ${Hkv}), split_heads(v, ${Hkv})${gqa}`],
    ['qk', 'matmul_qk = q @ k.transpose(0, 2, 1)              # [H, L, S]'],
    ['scores', `scaled_attention_logits = matmul_qk / ${scaleText}`],
    ...(maskLine ? [['logits', maskLine], ['logits', 'scaled_attention_logits[:, blocked] = -np.inf']] : []),
    ['pattern', 'e = np.exp(scaled_attention_logits - scaled_attention_logits.max(-1, keepdims=True))'],
    ['pattern', 'attention_weights = e / e.sum(-1, keepdims=True)  # softmax over the keys'],
    ['zhead', 'attention_output = attention_weights @ v       # [H, L, Dv]'],
    ['concat', 'concat_attention = attention_output.transpose(1, 0, 2).reshape(L, H * Dv)'],
    ['result', 'result_h = concat_attention[:, h*Dv:(h+1)*Dv] @ W_o[:, h*Dv:(h+1)*Dv].T  # head h\'s share'],
    ['output', 'output = concat_attention @ W_o.T + b_o          # = sum of result_h + b_o'],
  ];
  const torchMask = causal && padding ? 'blocked = torch.ones(L, S, dtype=torch.bool).triu(1) | padding'
    : causal ? 'blocked = torch.ones(L, S, dtype=torch.bool).triu(1)' : padding ? 'blocked = padding.expand(L, S)' : null;
  const pytorch = [
    [null, `# nn.MultiheadAttention(${E}, ${H}) written out, one sequence of L = ${L}`],
    ['x', 'x = layer_input                                    # [L, E]'],
    ['q', `q = F.linear(x, W_q, b_q).view(L, ${H}, ${Dh}).transpose(0, 1)   # split heads: [H, L, Dh]`],
    ['k', `k = F.linear(x, W_k, b_k).view(S, ${Hkv}, ${Dh}).transpose(0, 1)`],
    ['v', `v = F.linear(x, W_v, b_v).view(S, ${Hkv}, ${Dv}).transpose(0, 1)`],
    ['qk', 'scores = q @ k.transpose(-2, -1)                   # [H, L, S]'],
    ['scores', `scores = scores * ${defaultScale ? `(1 / math.sqrt(${Dh}))` : scale.toPrecision(4)}`],
    ...(torchMask ? [['logits', torchMask], ['logits', "scores = scores.masked_fill(blocked, float('-inf'))"]] : []),
    ['pattern', 'attention_weights = torch.softmax(scores, dim=-1)'],
    ['zhead', 'attention_output = attention_weights @ v          # [H, L, Dv]'],
    ['concat', 'concat = attention_output.transpose(0, 1).reshape(L, H * Dv)'],
    ['result', 'result_h = concat[:, h*Dv:(h+1)*Dv] @ W_o[:, h*Dv:(h+1)*Dv].T'],
    ['output', 'output = F.linear(concat, W_o, b_o)'],
  ];
  const keras = [
    [null, `# keras.layers.MultiHeadAttention(num_heads=${H}, key_dim=${Dh}): its call(), unrolled`],
    ['x', 'query = value = key = layer_input                # [B, T, features]'],
    ['q', 'query = self._query_dense(query)                 # EinsumDense: [B, T, H, Dh]'],
    ['k', 'key = self._key_dense(key)                       # [B, S, H, Dh]'],
    ['v', 'value = self._value_dense(value)                 # [B, S, H, Dv]'],
    ['scores', `query = ops.multiply(query, 1.0 / math.sqrt(${Dh}))`],
    ['qk', 'attention_scores = ops.einsum("aecd,abcd->acbe", key, query)   # [B, H, T, S]'],
    ...(causal || padding ? [['logits', 'attention_scores = where(attention_mask, attention_scores, -inf)']] : []),
    ['pattern', 'attention_scores = self._softmax(attention_scores)   # _masked_softmax'],
    ['zhead', 'attention_output = ops.einsum("acbe,aecd->abcd", attention_scores, value)  # [B, T, H, Dv]'],
    ['concat', '# (EinsumDense reads [B, T, H, Dv] as the concatenated heads)'],
    ['result', '# head h\'s share: attention_output[:, :, h] through its slice of the kernel'],
    ['output', 'attention_output = self._output_dense(attention_output)   # [B, T, outputShape]'],
  ];
  const lines = (list) => list.map(([step, text]) => ({ step, text }));
  return { numpy: lines(numpy), pytorch: lines(pytorch), keras: lines(keras) };
}
