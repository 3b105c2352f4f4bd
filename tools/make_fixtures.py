#!/usr/bin/env python3
"""Generates the parity fixtures in tests/fixtures/ from PyTorch (Debian's python3-torch).

Every case runs torch.nn.MultiheadAttention (batch_first, float32) where PyTorch supports the
configuration, and a float64 reference written out below for everything (grouped-query heads,
custom scale, fully masked rows). Where both apply they must agree, or the script fails.

Output: fixtures.bin (raw little-endian tensors) and index.json (names, shapes, offsets).
Run: /usr/bin/python3 tools/make_fixtures.py
"""
import json
import math
import os
import sys

import numpy as np
import torch

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def make_state_dict(gen, E, H, kdim, vdim, bias, Hkv):
    """Random weights in nn.MultiheadAttention's state-dict layout."""
    Dh = E // H
    KV = Hkv * Dh

    def w(rows, cols):
        return torch.randn(rows, cols, generator=gen) / math.sqrt(cols)

    sd = {}
    if kdim == E and vdim == E and Hkv == H:
        sd["in_proj_weight"] = w(3 * E, E)
    else:
        sd["q_proj_weight"] = w(E, E)
        sd["k_proj_weight"] = w(KV, kdim)
        sd["v_proj_weight"] = w(KV, vdim)
    if bias:
        sd["in_proj_bias"] = torch.randn(E + 2 * KV, generator=gen) * 0.5
    sd["out_proj.weight"] = w(E, E)
    if bias:
        sd["out_proj.bias"] = torch.randn(E, generator=gen) * 0.5
    return sd


def split_qkv(sd, E, KV):
    if "in_proj_weight" in sd:
        w = sd["in_proj_weight"]
        wq, wk, wv = w[:E], w[E:2 * E], w[2 * E:]
    else:
        wq, wk, wv = sd["q_proj_weight"], sd["k_proj_weight"], sd["v_proj_weight"]
    if "in_proj_bias" in sd:
        b = sd["in_proj_bias"]
        bq, bk, bv = b[:E], b[E:E + KV], b[E + KV:]
    else:
        bq = bk = bv = None
    return wq, wk, wv, bq, bk, bv


def combined_bias(B, H, L, S, causal, kpm, am):
    """All masks as one additive float64 bias [B, H, L, S] (-inf = blocked)."""
    bias = torch.zeros(B, H, L, S, dtype=torch.float64)
    ninf = float("-inf")
    if causal:
        bias = bias.masked_fill(torch.triu(torch.ones(L, S, dtype=torch.bool), 1), ninf)
    if kpm is not None:
        k = kpm.view(B, 1, 1, S)
        bias = bias.masked_fill(k, ninf) if k.dtype == torch.bool else bias + k.double()
    if am is not None:
        m = am.view(B, H, L, S) if am.dim() == 3 else am.view(1, 1, L, S)
        bias = bias.masked_fill(m, ninf) if m.dtype == torch.bool else bias + m.double()
    return bias


def reference(q, k, v, sd, E, H, Hkv, scale, causal, kpm, am, average):
    """float64 multi-head attention; a fully blocked row gives zero attention and zero weights."""
    Dh = E // H
    KV = Hkv * Dh
    batched = q.dim() == 3
    if not batched:
        q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
        kpm = kpm.unsqueeze(0) if kpm is not None else None
    B, L, _ = q.shape
    S = k.shape[1]
    wq, wk, wv, bq, bk, bv = [t.double() if t is not None else None for t in split_qkv(sd, E, KV)]
    lin = lambda x, w, b: x.double() @ w.T + (b if b is not None else 0)
    Q = lin(q, wq, bq).view(B, L, H, Dh).transpose(1, 2)
    K = lin(k, wk, bk).view(B, S, Hkv, Dh).transpose(1, 2).repeat_interleave(H // Hkv, dim=1)
    V = lin(v, wv, bv).view(B, S, Hkv, Dh).transpose(1, 2).repeat_interleave(H // Hkv, dim=1)
    scores = (Q @ K.transpose(-1, -2)) * scale + combined_bias(B, H, L, S, causal, kpm, am)
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    p = torch.softmax(scores.masked_fill(blocked, 0.0), dim=-1).masked_fill(blocked, 0.0)
    attn = (p @ V).transpose(1, 2).reshape(B, L, E)
    out = attn @ sd["out_proj.weight"].double().T
    if "out_proj.bias" in sd:
        out = out + sd["out_proj.bias"].double()
    weights = p.mean(dim=1) if average else p
    if not batched:
        out, weights = out[0], weights[0]
    return out, weights, bool(blocked.any())


def torch_mha(q, k, v, sd, E, H, kdim, vdim, bias, causal, kpm, am, need_weights, average):
    layer = torch.nn.MultiheadAttention(E, H, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    layer.load_state_dict(sd)
    # eval() takes PyTorch's fused fast path where it can; train() with dropout 0 is the same
    # math on the general path, for configurations where 1.13's fast path breaks (bias=False).
    layer.eval()
    L, S = q.shape[-2], k.shape[-2]
    mask = am
    if causal:
        c = torch.triu(torch.ones(L, S, dtype=torch.bool), 1)
        if mask is None:
            mask = c
        elif mask.dtype == torch.bool:
            mask = mask | c
        else:
            mask = mask.masked_fill(c, float("-inf"))
    with torch.no_grad():
        try:
            return layer(q, k, v, key_padding_mask=kpm, attn_mask=mask, need_weights=need_weights,
                         average_attn_weights=average)
        except (RuntimeError, TypeError):
            layer.train()
            return layer(q, k, v, key_padding_mask=kpm, attn_mask=mask, need_weights=need_weights,
                         average_attn_weights=average)


class Writer:
    def __init__(self):
        self.blob = bytearray()

    def add(self, array):
        array = np.ascontiguousarray(array)
        dtype = {np.dtype(np.float32): "float32", np.dtype(np.uint8): "uint8"}[array.dtype]
        offset = len(self.blob)
        self.blob += array.astype(array.dtype.newbyteorder("<")).tobytes()
        self.blob += b"\0" * (-len(self.blob) % 4)
        return {"dtype": dtype, "shape": list(array.shape), "offset": offset, "length": int(array.size)}


def f32(t):
    return t.detach().to(torch.float32).numpy()


def mask_array(t):
    return t.numpy().astype(np.uint8) if t.dtype == torch.bool else f32(t)


def build_case(writer, gen, spec):
    E, H = spec["E"], spec["H"]
    kdim, vdim = spec.get("kdim", E), spec.get("vdim", E)
    bias, Hkv = spec.get("bias", True), spec.get("Hkv", H)
    B, L = spec.get("B", 2), spec.get("L", 5)
    cross = spec.get("cross", False) or kdim != E or vdim != E
    S = spec.get("S", L if not cross else L + 2)
    batched = not spec.get("unbatched", False)
    Dh = E // H
    scale = spec.get("scale", 1.0 / math.sqrt(Dh))
    need_weights = spec.get("need_weights", False)
    average = spec.get("average", True)
    causal = spec.get("causal", False)

    lead = (B,) if batched else ()
    q = torch.randn(*lead, L, E, generator=gen)
    k = torch.randn(*lead, S, kdim, generator=gen) if cross else q
    v = torch.randn(*lead, S, vdim, generator=gen) if cross else q
    sd = make_state_dict(gen, E, H, kdim, vdim, bias, Hkv)
    kpm = spec["kpm"](gen, lead, S) if "kpm" in spec else None
    am = spec["am"](gen, B if batched else 1, H, L, S) if "am" in spec else None
    if am is not None and am.dim() == 3 and not batched:
        am = am.view(H, L, S)

    out, weights, has_blocked_rows = reference(q, k, v, sd, E, H, Hkv, scale, causal, kpm, am, average)
    source = "float64 reference"
    torch_ok = Hkv == H and "scale" not in spec
    if kpm is not None and am is not None and kpm.dtype != am.dtype:
        # PyTorch 1.13 reads a float key_padding_mask as bool when attn_mask is bool (2.0 adds it).
        torch_ok = False
    if torch_ok:
        try:
            t_out, t_w = torch_mha(q, k, v, sd, E, H, kdim, vdim, bias, causal, kpm, am, need_weights, average)
        except Exception as e:  # e.g. mask kinds this PyTorch version does not take
            print(f"  {spec['name']}: nn.MultiheadAttention refused ({e}); using the float64 reference")
            torch_ok = False
    if torch_ok and not has_blocked_rows:
        assert torch.allclose(t_out.double(), out, rtol=1e-4, atol=1e-5), spec["name"]
        if need_weights:
            assert torch.allclose(t_w.double(), weights, rtol=1e-4, atol=1e-5), spec["name"]
        out, weights, source = t_out, t_w, "torch.nn.MultiheadAttention"

    tensors = {"query": writer.add(f32(q))}
    if cross:
        tensors["key"] = writer.add(f32(k))
        tensors["value"] = writer.add(f32(v))
    if kpm is not None:
        tensors["keyPaddingMask"] = writer.add(mask_array(kpm))
    if am is not None:
        tensors["attnMask"] = writer.add(mask_array(am))
    state = {name: writer.add(f32(t).reshape(-1)) for name, t in sd.items()}
    tensors["output"] = writer.add(f32(out))
    if need_weights:
        tensors["weights"] = writer.add(f32(weights))
    config = {"embedDim": E, "numHeads": H, "kdim": kdim, "vdim": vdim, "bias": bias, "numKvHeads": Hkv}
    if "scale" in spec:
        config["scale"] = scale
    return {
        "name": spec["name"],
        "source": source,
        "config": config,
        "options": {"causal": causal, "needWeights": need_weights, "averageWeights": average},
        "selfAttention": not cross,
        "hasFullyMaskedRows": has_blocked_rows,
        "tensors": tensors,
        "stateDict": state,
    }


def bool_kpm(gen, lead, S):
    m = torch.zeros(*lead, S, dtype=torch.bool)
    m[..., S - 1] = True  # pad the last key of every sequence
    if lead and lead[0] > 1:
        m[1, max(1, S // 2):] = True  # and a longer tail in the second
    return m


def float_kpm(gen, lead, S):
    m = torch.randn(*lead, S, generator=gen)
    m[..., 0] = float("-inf")
    return m


def bool_am(gen, B, H, L, S, per_head=False):
    shape = (B * H, L, S) if per_head else (L, S)
    m = torch.rand(*shape, generator=gen) < 0.3
    m[..., 0] = False  # keep every row with at least one key
    return m


def float_am(gen, B, H, L, S, per_head=False):
    shape = (B * H, L, S) if per_head else (L, S)
    return torch.randn(*shape, generator=gen)


def fully_blocked_am(gen, B, H, L, S):
    m = torch.zeros(L, S, dtype=torch.bool)
    m[1, :] = True  # query 1 sees nothing
    return m


def neg_inf_float_am(gen, B, H, L, S):
    m = torch.randn(L, S, generator=gen)
    m[0, :] = float("-inf")
    m[2, ::2] = float("-inf")
    return m


def all_padded_kpm(gen, lead, S):
    m = torch.zeros(*lead, S, dtype=torch.bool)
    m[0, :] = True  # every key of batch 0 is padding
    return m


CASES = [
    dict(name="self_basic", E=8, H=2),
    dict(name="self_weights_averaged", E=8, H=2, need_weights=True),
    dict(name="self_weights_per_head", E=8, H=2, need_weights=True, average=False),
    dict(name="cross_l_ne_s", E=8, H=2, L=4, S=7, cross=True, need_weights=True),
    dict(name="kdim_vdim", E=12, H=3, kdim=5, vdim=7, L=3, S=6, need_weights=True, average=False),
    dict(name="no_bias", E=8, H=2, bias=False, need_weights=True),
    dict(name="no_bias_kdim", E=8, H=4, kdim=6, vdim=10, bias=False, L=4, S=3),
    dict(name="single_head", E=6, H=1, L=4, need_weights=True),
    dict(name="causal", E=16, H=4, L=6, causal=True, need_weights=True, average=False),
    dict(name="causal_cross", E=8, H=2, L=5, S=8, cross=True, causal=True, need_weights=True),
    dict(name="kpm_bool", E=8, H=2, B=3, L=4, S=6, cross=True, kpm=bool_kpm, need_weights=True, average=False),
    dict(name="kpm_float", E=8, H=2, B=3, L=4, S=6, cross=True, kpm=float_kpm, need_weights=True),
    dict(name="attn_bool_2d", E=8, H=2, L=5, am=bool_am, need_weights=True, average=False),
    dict(name="attn_float_2d", E=8, H=2, L=5, S=7, cross=True, am=float_am, need_weights=True),
    dict(name="attn_bool_3d", E=12, H=3, B=2, L=4, S=5, cross=True,
         am=lambda g, B, H, L, S: bool_am(g, B, H, L, S, True), need_weights=True, average=False),
    dict(name="attn_float_3d", E=8, H=2, B=2, L=4, am=lambda g, B, H, L, S: float_am(g, B, H, L, S, True),
         need_weights=True),
    dict(name="masks_combined", E=16, H=4, B=3, L=6, causal=True, kpm=bool_kpm, am=float_am,
         need_weights=True, average=False),
    dict(name="masks_combined_3d", E=8, H=2, B=2, L=5, S=5, cross=True, kpm=float_kpm,
         am=lambda g, B, H, L, S: bool_am(g, B, H, L, S, True), need_weights=True),
    dict(name="unbatched", E=8, H=2, L=5, unbatched=True, need_weights=True),
    dict(name="unbatched_cross_masks", E=8, H=2, L=3, S=6, cross=True, unbatched=True, kpm=bool_kpm,
         am=lambda g, B, H, L, S: float_am(g, B, H, L, S, True), need_weights=True, average=False),
    dict(name="batch_4", E=16, H=2, B=4, L=7, need_weights=True),
    dict(name="query_len_1", E=8, H=2, B=2, L=1, S=5, cross=True, need_weights=True, average=False),
    dict(name="key_len_1", E=8, H=2, B=2, L=4, S=1, cross=True, need_weights=True),
    dict(name="odd_sizes", E=12, H=3, B=2, L=37, need_weights=True, average=False),
    dict(name="odd_sizes_causal_cross", E=12, H=3, B=1, L=37, S=23, cross=True, kdim=9, vdim=11, causal=True),
    dict(name="large", E=256, H=8, B=1, L=129, need_weights=True),
    dict(name="large_no_weights_causal", E=256, H=8, B=2, L=129, causal=True),
    dict(name="gqa", E=16, H=4, Hkv=2, B=2, L=5, S=7, cross=True, need_weights=True, average=False),
    dict(name="mqa_kdim", E=16, H=4, Hkv=1, kdim=6, vdim=10, B=2, L=4, S=6, causal=True, need_weights=True),
    dict(name="gqa_self_masks", E=24, H=6, Hkv=3, B=2, L=6, kpm=bool_kpm, am=bool_am, need_weights=True),
    dict(name="custom_scale", E=8, H=2, L=5, scale=0.9, need_weights=True),
    dict(name="fully_masked_attn_row", E=8, H=2, L=4, am=fully_blocked_am, need_weights=True, average=False),
    dict(name="fully_masked_float_neg_inf", E=8, H=2, L=4, S=6, cross=True, am=neg_inf_float_am, need_weights=True),
    dict(name="fully_padded_batch", E=8, H=2, B=2, L=3, S=4, cross=True, kpm=all_padded_kpm, need_weights=True),
]


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)
    writer = Writer()
    cases = []
    for spec in CASES:
        case = build_case(writer, gen, spec)
        print(f"{case['name']:30s} {case['source']}")
        cases.append(case)
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, "fixtures.bin"), "wb") as f:
        f.write(writer.blob)
    index = {
        "generator": "tools/make_fixtures.py",
        "torch": torch.__version__,
        "tolerance": {"absolute": 1e-5, "relative": 1e-4},
        "binary": "fixtures.bin",
        "cases": cases,
    }
    with open(os.path.join(OUT_DIR, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases, {len(writer.blob)} bytes")


if __name__ == "__main__":
    sys.exit(main())
