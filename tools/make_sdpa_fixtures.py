#!/usr/bin/env python3
"""Float64 fixtures of PyTorch's scaled_dot_product_attention semantics for
tests/js/attention-function-sdpa.test.js, written to tests/fixtures/sdpa-float64.json.

Debian's torch 1.13 predates F.scaled_dot_product_attention, so the expected values come from the
formula PyTorch's documentation gives for it (the "equivalent" reference implementation of
torch.nn.functional.scaled_dot_product_attention, 2.5), in float64 NumPy:

    attn_bias = -inf where is_causal's tril(L, S) is False, or where a bool mask is False;
                + a float mask
    keys, values repeat_interleave'd over the query heads when enable_gqa
    weights = softmax(q @ k^T * scale + attn_bias);  output = weights @ v

plus torch.nn.attention.bias.causal_lower_right (bottom-right: j <= i + S - L). A row with
every key blocked is NaN in PyTorch's math path; ONNX and this package give zeros, and so do these
fixtures (the test says which rows those are). Inputs are rounded to float32 first, so the
package sees exactly the values the expected outputs were computed from.

Usage: /usr/bin/python3 tools/make_sdpa_fixtures.py (Debian's python3-numpy)
"""
import json
import math
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sdpa-float64.json"


def sdpa(q, k, v, attn_mask=None, is_causal=None, scale=None, enable_gqa=False):
    L, S = q.shape[-2], k.shape[-2]
    scale_factor = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    bias = np.zeros((L, S))
    if is_causal == "top-left":
        bias[~np.tril(np.ones((L, S), dtype=bool))] = -np.inf
    elif is_causal == "bottom-right":
        bias[~np.tril(np.ones((L, S), dtype=bool), k=S - L)] = -np.inf
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            bias = np.where(attn_mask, bias, -np.inf)
        else:
            bias = attn_mask + bias
    if enable_gqa:
        reps = q.shape[-3] // k.shape[-3]
        k = np.repeat(k, reps, axis=-3)
        v = np.repeat(v, reps, axis=-3)
    logits = q @ np.swapaxes(k, -1, -2) * scale_factor + bias
    row_max = np.max(logits, axis=-1, keepdims=True)
    blocked = np.isneginf(row_max)
    e = np.exp(logits - np.where(blocked, 0, row_max))
    weights = np.where(blocked, 0, e / np.where(blocked, 1, e.sum(axis=-1, keepdims=True)))
    return weights @ v, weights


def tensor(x):
    return {"shape": list(x.shape), "data": [float(t) for t in x.reshape(-1)]}


def main():
    rng = np.random.default_rng(20261127)

    def inputs(q_shape, k_shape, v_shape):
        f32 = lambda s: rng.standard_normal(s).astype(np.float32).astype(np.float64)
        return f32(q_shape), f32(k_shape), f32(v_shape)

    cases = []

    def add(name, q, k, v, options, **kwargs):
        out, weights = sdpa(q, k, v, **kwargs)
        mask = kwargs.get("attn_mask")
        entry = {"name": name, "query": tensor(q), "key": tensor(k), "value": tensor(v), "options": options,
                 "output": tensor(out), "weights": tensor(weights)}
        if mask is not None:
            entry["attnMask"] = {"shape": list(mask.shape), "bool": mask.dtype == np.bool_,
                                 "data": [float(t) for t in mask.reshape(-1)]}
        cases.append(entry)

    q, k, v = inputs((2, 8, 5, 16), (2, 2, 7, 16), (2, 2, 7, 12))
    add("GQA 8:2 (enable_gqa), L 5, S 7, Ev 12", q, k, v, {}, enable_gqa=True)
    q, k, v = inputs((1, 4, 4, 8), (1, 4, 9, 8), (1, 4, 9, 8))
    add("is_causal (top-left) with L 4 < S 9", q, k, v, {"causal": True}, is_causal="top-left")
    add("causal_lower_right with L 4 < S 9", q, k, v, {"causal": "bottom-right"}, is_causal="bottom-right")
    q, k, v = inputs((1, 2, 9, 8), (1, 2, 4, 8), (1, 2, 4, 8))
    add("is_causal (top-left) with L 9 > S 4", q, k, v, {"causal": True}, is_causal="top-left")
    add("causal_lower_right with L 9 > S 4: the first 5 rows see no key (zeros; PyTorch: NaN)", q, k, v,
        {"causal": "bottom-right"}, is_causal="bottom-right")
    q, k, v = inputs((2, 3, 6, 32), (2, 3, 6, 32), (2, 3, 6, 32))
    add("scale 0.3", q, k, v, {"scale": 0.3}, scale=0.3)
    q, k, v = inputs((2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 8))
    mask = rng.random((5, 6)) > 0.3
    mask[:, 0] = True
    add("bool mask [L, S] (True = attend) with GQA and is_causal", q, k, v, {"causal": True}, attn_mask=mask,
        is_causal="top-left", enable_gqa=True)
    float_mask = (rng.standard_normal((2, 1, 5, 6)) * 2).astype(np.float32).astype(np.float64)
    add("float mask [B, 1, L, S] added to the scores, scale 0.5", q, k, v, {"scale": 0.5}, attn_mask=float_mask,
        scale=0.5, enable_gqa=True)
    q, k, v = inputs((3, 4, 8), (3, 6, 8), (3, 6, 5))
    add("unbatched [H, L, E]", q, k, v, {})

    OUT.write_text(json.dumps({"generator": "tools/make_sdpa_fixtures.py", "cases": cases}) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
