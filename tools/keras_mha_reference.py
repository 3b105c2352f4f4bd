"""Keras 3.15's MultiHeadAttention in float64 NumPy, written from its source
(keras/src/layers/attention/multi_head_attention.py, v3.15.0), for the expected values of the
ported Keras tests (tools/make_keras_port_fixtures.py -> tests/fixtures/keras-mha-port.json).
Keras itself is not installable here; this follows the layer line by line:

  build:    _build_proj_equation for the query / key / gate / value EinsumDense (kernels
            [in, N, H], biases [N, H]) and the output one (kernel [N, H, *output_shape]),
            _build_attention (negative attention_axes counted from the projected rank - 1),
            _build_attention_equation (dot-product and combine einsums)
  call:     _compute_attention_mask (query mask [B, T, 1], value and key masks [B, 1, S],
            causal and sliding-window masks [1, T, S], all and-ed with attention_mask),
            gate = sigmoid(gate dense(query)), query * 1/sqrt(key_dim), the scores' einsum,
            _masked_softmax (mask expanded at -2 * len(attention_axes) - 1 until it has the
            scores' rank; Softmax: where(mask, x, -1e9), softmax over the attention axes,
            where(mask, p, 0)), the combine einsum, times the gate, the output dense.
  Dropout is left out (the ported tests that use it call with training=False).
"""
import math
import string

import numpy as np


def _letter(i):
    return string.ascii_lowercase[i]


def build_proj_equation(free_dims, bound_dims, output_dims):
    input_str = kernel_str = output_str = bias_axes = ""
    for i in range(free_dims):
        input_str += _letter(i)
        output_str += _letter(i)
    offset = free_dims
    for i in range(bound_dims):
        input_str += _letter(i + offset)
        kernel_str += _letter(i + offset)
    offset += bound_dims
    for i in range(output_dims):
        char = _letter(i + offset)
        kernel_str += char
        output_str += char
        bias_axes += char
    return f"{input_str},{kernel_str}->{output_str}", bias_axes, len(output_str)


def build_attention_equation(rank, attn_axes):
    target = "".join(_letter(i) for i in range(rank))
    batch_dims = tuple(np.delete(range(rank), attn_axes + (rank - 1,)))
    offset = rank
    source = ""
    for i in range(rank):
        if i in batch_dims or i == rank - 1:
            source += target[i]
        else:
            source += _letter(offset)
            offset += 1
    product = "".join([target[i] for i in batch_dims] + [target[i] for i in attn_axes] + [source[i] for i in attn_axes])
    return f"{source},{target}->{product}", f"{product},{source}->{target}", len(product)


class KerasMHA:
    """The layer's shapes and math. Weights: the list get_weights() returns, in its order
    (query kernel, bias, key kernel, bias, [gate kernel, bias,] value kernel, bias, output kernel, bias;
    no biases without use_bias)."""

    def __init__(self, num_heads, key_dim, value_dim=None, use_bias=True, output_shape=None, attention_axes=None,
                 sliding_window=None, use_gate=False):
        self.num_heads, self.key_dim = num_heads, key_dim
        self.value_dim = value_dim if value_dim else key_dim
        self.use_bias, self.use_gate, self.sliding_window = use_bias, use_gate, sliding_window
        if isinstance(output_shape, int):
            output_shape = (output_shape,)
        self.output_shape = tuple(output_shape) if output_shape else None
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        self.attention_axes = attention_axes

    def weight_shapes(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        N, H, V = self.num_heads, self.key_dim, self.value_dim
        out = self.output_shape or (query_shape[-1],)
        shapes = [("query/kernel", (query_shape[-1], N, H)), ("query/bias", (N, H)),
                  ("key/kernel", (key_shape[-1], N, H)), ("key/bias", (N, H))]
        if self.use_gate:
            shapes += [("gate/kernel", (query_shape[-1], N, V)), ("gate/bias", (N, V))]
        shapes += [("value/kernel", (value_shape[-1], N, V)), ("value/bias", (N, V)),
                   ("attention_output/kernel", (N, V) + tuple(out)), ("attention_output/bias", tuple(out))]
        return [(n, s) for n, s in shapes if self.use_bias or not n.endswith("/bias")]

    def _dense(self, x, kernel, bias, bound_dims, output_dims):
        equation, _, _ = build_proj_equation(x.ndim - bound_dims, bound_dims, output_dims)
        y = np.einsum(equation, x, kernel)
        return y + bias if bias is not None else y

    def call(self, weights, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, use_causal_mask=False):
        """-> (output, scores): float64 arrays; scores [B, N, T, S] (or the attention axes' shape)."""
        key = value if key is None else key
        w = dict(zip([n for n, _ in self.weight_shapes(query.shape, value.shape, key.shape)], weights))
        b = lambda name: w.get(name)  # noqa: E731 (None without use_bias)
        mask = self.compute_attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask, use_causal_mask)
        gate = None
        if self.use_gate:
            gate = 1.0 / (1.0 + np.exp(-self._dense(query, w["gate/kernel"], b("gate/bias"), 1, 2)))
        q = self._dense(query, w["query/kernel"], b("query/bias"), 1, 2)
        k = self._dense(key, w["key/kernel"], b("key/bias"), 1, 2)
        v = self._dense(value, w["value/kernel"], b("value/bias"), 1, 2)
        rank = q.ndim
        axes = tuple(range(1, rank - 2)) if self.attention_axes is None else tuple(
            a if a >= 0 else (rank - 1) + a for a in self.attention_axes)
        dot_eq, combine_eq, scores_rank = build_attention_equation(rank, axes)
        q = q * (1.0 / math.sqrt(float(self.key_dim)))
        scores = np.einsum(dot_eq, k, q)
        norm_axes = tuple(range(scores_rank - len(axes), scores_rank))
        if mask is not None:
            mask = mask.astype(bool)
            while mask.ndim < scores.ndim:
                mask = np.expand_dims(mask, axis=-len(axes) * 2 - 1)
            scores = np.where(mask, scores, -1e9)
        scores = np.exp(scores - scores.max(axis=norm_axes, keepdims=True))
        scores = scores / scores.sum(axis=norm_axes, keepdims=True)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        attended = np.einsum(combine_eq, scores, v)
        if gate is not None:
            attended = attended * gate
        out_dims = len(self.output_shape) if self.output_shape else 1
        output = self._dense(attended, w["attention_output/kernel"], b("attention_output/bias"), 2, out_dims)
        return output, scores

    def compute_attention_mask(self, query, value, query_mask=None, value_mask=None, key_mask=None,
                               attention_mask=None, use_causal_mask=False):
        auto = None
        if query_mask is not None:
            auto = np.expand_dims(query_mask.astype(bool), -1)
        if value_mask is not None:
            m = np.expand_dims(value_mask.astype(bool), -2)
            auto = m if auto is None else auto & m
        if key_mask is not None:
            m = np.expand_dims(key_mask.astype(bool), -2)
            auto = m if auto is None else auto & m
        T, S = query.shape[1], value.shape[1]
        if use_causal_mask:
            ones = np.ones((1, T, S), dtype=np.int32)
            m = np.cumsum(ones, axis=-2) >= np.cumsum(ones, axis=-1)
            auto = m if auto is None else auto & m
        if self.sliding_window is not None:
            rows = np.arange(T).reshape(1, T, 1)
            cols = np.arange(S).reshape(1, 1, S)
            m = np.abs(rows - cols) < self.sliding_window
            auto = m if auto is None else auto & m
        if attention_mask is not None:
            attention_mask = attention_mask.astype(bool)
        if auto is not None:
            attention_mask = auto if attention_mask is None else attention_mask & auto
        return attention_mask

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
            raise ValueError("All dimensions of `value` and `key`, except the last one, must be equal.")
        if self.output_shape:
            return tuple(query_shape[:-1]) + self.output_shape
        return tuple(query_shape)
