#!/usr/bin/env python3
"""Generates the parity fixtures in tests/fixtures/ from PyTorch (Debian's python3-torch).

Every case runs torch.nn.MultiheadAttention (batch_first, float32) where PyTorch supports the
configuration, and a float64 reference written out below for everything (grouped-query heads,
custom scale, fully masked rows). Where both apply they must agree, or the script fails.
The gradient cases (index.json's gradientCases, after the others in fixtures.bin) add
dLoss/d(inputs, parameters) for loss = sum(output * G): see "Gradient fixtures" below.

Output: fixtures.bin (raw little-endian tensors) and index.json (names, shapes, offsets).
Run: /usr/bin/python3 tools/make_fixtures.py
"""
import json
import math
import os
import sys

# Byte-identical float32 results need the BLAS the committed fixtures came from: Debian's reference
# BLAS. OpenBLAS (libopenblas0-pthread, installed for the benchmarks) takes over libblas.so.3 and sums
# in another order, which changes the last bits of PyTorch's float32 outputs; so run on the reference.
REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
if os.path.isdir(REFERENCE_BLAS) and REFERENCE_BLAS not in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
    os.environ["LD_LIBRARY_PATH"] = ":".join(filter(None, [REFERENCE_BLAS, os.environ.get("LD_LIBRARY_PATH")]))
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fixture_variants

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


def torch_attn_mask(am, causal, L, S):
    """attn_mask for nn.MultiheadAttention: `am` with the causal mask merged in."""
    if not causal:
        return am
    c = torch.triu(torch.ones(L, S, dtype=torch.bool), 1)
    if am is None:
        return c
    if am.dtype == torch.bool:
        return am | c
    return am.masked_fill(c, float("-inf"))


def torch_mha(q, k, v, sd, E, H, kdim, vdim, bias, causal, kpm, am, need_weights, average):
    layer = torch.nn.MultiheadAttention(E, H, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    layer.load_state_dict(sd)
    # eval() takes PyTorch's fused fast path where it can; train() with dropout 0 is the same
    # math on the general path, for configurations where 1.13's fast path breaks (bias=False).
    layer.eval()
    mask = torch_attn_mask(am, causal, q.shape[-2], k.shape[-2])
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
        dtype = {np.dtype(np.float32): "float32", np.dtype(np.uint8): "uint8", np.dtype(np.int32): "int32"}[array.dtype]
        offset = len(self.blob)
        self.blob += array.astype(array.dtype.newbyteorder("<")).tobytes()
        self.blob += b"\0" * (-len(self.blob) % 4)
        return {"dtype": dtype, "shape": list(array.shape), "offset": offset, "length": int(array.size)}


def f32(t):
    return t.detach().to(torch.float32).numpy()


def mask_array(t):
    return t.numpy().astype(np.uint8) if t.dtype == torch.bool else f32(t)


def write_tensors(writer, q, k, v, kpm, am, positions, sd, out, weights):
    """Writes one case's tensors (key/value, masks, positions, weights only when given)."""
    tensors = {"query": writer.add(f32(q))}
    if k is not None:
        tensors["key"] = writer.add(f32(k))
        tensors["value"] = writer.add(f32(v))
    if kpm is not None:
        tensors["keyPaddingMask"] = writer.add(mask_array(kpm))
    if am is not None:
        tensors["attnMask"] = writer.add(mask_array(am))
    if positions is not None:
        tensors["positions"] = writer.add(positions.numpy().astype(np.int32))
    state = {name: writer.add(f32(t).reshape(-1)) for name, t in sd.items()}
    tensors["output"] = writer.add(f32(out))
    if weights is not None:
        tensors["weights"] = writer.add(f32(weights))
    return tensors, state


def case_record(spec, source, config, causal, need_weights, average, cross, has_blocked_rows, tensors, state):
    """One case's entry in index.json."""
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

    tensors, state = write_tensors(writer, q, k if cross else None, v if cross else None, kpm, am, None, sd, out,
                                   weights if need_weights else None)
    config = {"embedDim": E, "numHeads": H, "kdim": kdim, "vdim": vdim, "bias": bias, "numKvHeads": Hkv}
    if "scale" in spec:
        config["scale"] = scale
    return case_record(spec, source, config, causal, need_weights, average, cross, has_blocked_rows, tensors, state)


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


def variant_sizes(spec, default_L, extra_keys):
    """A case's sizes and options with their defaults (cross attention: S = L + extra_keys)."""
    E, H = spec["E"], spec["H"]
    Hkv = spec.get("Hkv", H)
    Dh = spec.get("headDim", E // H)
    Dv = spec.get("valueHeadDim", Dh)
    out_dim = spec.get("outputDim", E)
    kdim, vdim = spec.get("kdim", E), spec.get("vdim", E)
    bias, sinks = spec.get("bias", True), spec.get("sinks", False)
    B, L = spec.get("B", 2), spec.get("L", default_L)
    cross = spec.get("cross", False) or kdim != E or vdim != E
    S = spec.get("S", L if not cross else L + extra_keys)
    causal = spec.get("causal", False)
    need_weights, average = spec.get("need_weights", False), spec.get("average", True)
    scale = spec.get("scale", 1.0 / math.sqrt(Dh))
    return E, H, Hkv, Dh, Dv, out_dim, kdim, vdim, bias, sinks, B, L, S, cross, causal, need_weights, average, scale


def variant_config(spec, E, H, Hkv, Dh, Dv, kdim, vdim, bias, scale):
    """The JS API's config of a variant case, and the options fixture_variants.reference() reads."""
    config = {"embedDim": E, "numHeads": H, "kdim": kdim, "vdim": vdim, "bias": bias, "numKvHeads": Hkv}
    ref = {"E": E, "H": H, "Hkv": Hkv, "Dh": Dh, "Dv": Dv, "scale": scale}
    for key in ("headDim", "valueHeadDim", "outputDim", "scale"):
        if key in spec:
            config[key] = spec[key]
    if "rotary" in spec:
        config["rotary"] = ref["rotary"] = spec["rotary"]
    if "slidingWindow" in spec:
        config["slidingWindow"] = ref["window"] = spec["slidingWindow"]
    if spec.get("alibi"):
        config["alibi"] = True
        ref["alibi"] = fixture_variants.bloom_alibi_slopes(H)
    if "alibiSlopes" in spec:
        config["alibiSlopes"] = spec["alibiSlopes"]
        ref["alibi"] = torch.tensor(spec["alibiSlopes"], dtype=torch.float32).double()
    if "softcap" in spec:
        config["softcap"] = ref["softcap"] = spec["softcap"]
    if spec.get("sinks", False):
        config["sinks"] = True
    return config, ref


def build_variant_case(writer, gen, spec):
    """A case with the options of today's models: float64 reference only (tools/fixture_variants.py)."""
    (E, H, Hkv, Dh, Dv, out_dim, kdim, vdim, bias, sinks, B, L, S, cross, causal, need_weights, average,
     scale) = variant_sizes(spec, default_L=6, extra_keys=3)

    q = torch.randn(B, L, E, generator=gen) * spec.get("input_scale", 1.0)
    k = torch.randn(B, S, kdim, generator=gen) * spec.get("input_scale", 1.0) if cross else q
    v = torch.randn(B, S, vdim, generator=gen) if cross else q
    sd = fixture_variants.state_dict(gen, E, H, Hkv, Dh, Dv, out_dim, kdim, vdim, bias, sinks)
    kpm = spec["kpm"](gen, (B,), S) if "kpm" in spec else None
    am = spec["am"](gen, B, H, L, S) if "am" in spec else None
    positions = spec["positions"](B, L) if "positions" in spec else None

    config, ref = variant_config(spec, E, H, Hkv, Dh, Dv, kdim, vdim, bias, scale)
    out, weights, has_blocked_rows = fixture_variants.reference(
        q, k, v, sd, ref, causal, kpm, am, positions, average, combined_bias)
    tensors, state = write_tensors(writer, q, k if cross else None, v if cross else None, kpm, am, positions, sd, out,
                                   weights if need_weights else None)
    return case_record(spec, "float64 reference (tools/fixture_variants.py)", config, causal, need_weights, average, cross, has_blocked_rows, tensors, state)


def left_padded_positions(B, L):
    """Batch b has b + 1 padding tokens in front; positions count from the first real token."""
    return torch.stack([torch.clamp(torch.arange(L) - (b + 1), min=0) for b in range(B)]).to(torch.int32)


def left_padding_kpm(gen, lead, S):
    m = torch.zeros(*lead, S, dtype=torch.bool)
    for b in range(lead[0]):
        m[b, : b + 1] = True
    return m


ROPE = {"dim": 8}
VARIANT_CASES = [
    # Each variant alone.
    dict(name="rotary_halves", E=16, H=2, L=7, rotary=ROPE, causal=True, need_weights=True, average=False),
    dict(name="rotary_interleaved", E=16, H=2, L=7, rotary={"dim": 8, "interleaved": True}, causal=True,
         need_weights=True),
    dict(name="rotary_partial_base", E=24, H=2, L=6, rotary={"dim": 4, "base": 500.0}, need_weights=True,
         average=False),
    dict(name="rotary_cross", E=16, H=2, L=5, S=9, cross=True, rotary={"dim": 6}, need_weights=True),
    dict(name="rotary_left_padded_positions", E=16, H=2, B=3, L=7, rotary=ROPE, causal=True,
         kpm=left_padding_kpm, positions=left_padded_positions, need_weights=True, average=False),
    dict(name="window_causal_small", E=8, H=2, L=9, slidingWindow=3, causal=True, need_weights=True, average=False),
    dict(name="window_causal_larger_than_l", E=8, H=2, L=6, slidingWindow=20, causal=True, need_weights=True),
    dict(name="window_bidirectional", E=8, H=2, L=9, slidingWindow=2, need_weights=True, average=False),
    dict(name="window_cross_masks", E=12, H=3, L=6, S=10, cross=True, slidingWindow=4, causal=True,
         kpm=bool_kpm, am=float_am, need_weights=True),
    dict(name="window_long_skips_tiles", E=16, H=2, B=1, L=300, slidingWindow=40, causal=True),
    dict(name="alibi_power_of_two", E=16, H=4, L=7, alibi=True, causal=True, need_weights=True, average=False),
    dict(name="alibi_six_heads", E=24, H=6, L=6, alibi=True, need_weights=True, average=False),
    dict(name="alibi_twelve_heads_cross", E=48, H=12, L=4, S=7, cross=True, alibi=True, kpm=bool_kpm,
         need_weights=True),
    dict(name="alibi_explicit_slopes", E=8, H=2, L=6, alibiSlopes=[0.75, 0.125], causal=True, need_weights=True),
    dict(name="softcap_bites", E=16, H=2, L=6, softcap=2.0, input_scale=4.0, need_weights=True, average=False),
    dict(name="softcap_masks", E=8, H=2, L=6, softcap=5.0, input_scale=3.0, causal=True, am=bool_am,
         need_weights=True),
    dict(name="sinks", E=16, H=4, L=6, sinks=True, need_weights=True, average=False),
    dict(name="sinks_fully_masked_row", E=8, H=2, L=4, sinks=True, am=fully_blocked_am, need_weights=True,
         average=False),
    dict(name="free_head_sizes", E=10, H=4, headDim=6, valueHeadDim=3, outputDim=7, L=5, need_weights=True,
         average=False),
    dict(name="free_head_sizes_cross_gqa", E=12, H=4, Hkv=2, headDim=5, valueHeadDim=7, outputDim=9, kdim=6,
         vdim=11, L=4, S=6, causal=True, need_weights=True),
    dict(name="free_head_sizes_no_bias", E=6, H=3, headDim=4, valueHeadDim=2, bias=False, L=5, kpm=float_kpm,
         need_weights=True),
    # Combined, as the models combine them.
    dict(name="llama_rotary_gqa", E=32, H=4, Hkv=2, L=9, rotary={"dim": 8}, causal=True, need_weights=True,
         average=False),
    dict(name="mistral_rotary_gqa_window", E=32, H=4, Hkv=1, L=12, rotary={"dim": 8}, slidingWindow=5,
         causal=True, kpm=bool_kpm, need_weights=True),
    dict(name="gemma2_rotary_softcap_head_size", E=16, H=4, Hkv=2, headDim=8, L=8, rotary={"dim": 8},
         softcap=2.5, scale=0.3, input_scale=2.0, causal=True, need_weights=True, average=False),
    dict(name="bloom_alibi_causal", E=24, H=6, L=8, alibi=True, causal=True, kpm=bool_kpm, need_weights=True),
    dict(name="gpt_oss_sinks_window_rotary_gqa", E=32, H=4, Hkv=2, L=10, rotary={"dim": 8}, slidingWindow=4,
         sinks=True, causal=True, need_weights=True, average=False),
    dict(name="phi_partial_rotary_interleaved_alibi_softcap", E=24, H=3, L=7, rotary={"dim": 4, "interleaved": True},
         alibi=True, softcap=3.0, causal=True, need_weights=True),
]


# ---- Gradient fixtures (issue 22) ----------------------------------------------------------------
# loss = sum(output * G) for a fixed random G, so dLoss/dOutput = G. Each case stores G, the
# gradients of the inputs (query; key and value when given) and of every state-dict entry, keyed as
# the layer's stateDictShapes(). PyTorch's autograd on nn.MultiheadAttention (float32) where it
# applies; elsewhere autograd through the float64 references above (reference() and
# fixture_variants.reference(): the same cited formulas as the forward fixtures). Where both apply
# they must agree (check_torch_agreement), or the script fails.

VARIANT_KEYS = ("headDim", "valueHeadDim", "outputDim", "rotary", "slidingWindow", "alibi", "alibiSlopes",
                "softcap", "sinks", "positions")
# The tests' bound on each gradient element: |got - want| <= relative |want| + floor, with
# floor = floorUlps * 2^-23 * sqrt(K) * max|want| over the tensor, K the case's reductionLength
# (its longest sum: B * max(L, S) tokens for the weights' gradients, or a feature count). Float32
# rounding grows with the length of the sums; the floor covers elements that cancel to near zero.
GRADIENT_TOLERANCE = {"relative": 1e-5, "floorUlps": 8}


def fused_in_proj(E, H, Hkv, Dh, Dv, out_dim, kdim, vdim):
    """The layer's rule (src/mha/layer/parameters.cpp, fused_in_proj): PyTorch's own shapes keep one in_proj_weight."""
    return kdim == E and vdim == E and Hkv == H and H * Dh == E and Dv == Dh and out_dim == E


def as_layer_keys(sd, fused):
    """sd keyed as the layer's stateDictShapes(): q/k/v fused into in_proj_weight where the layer fuses them."""
    if not fused or "in_proj_weight" in sd:
        return sd
    out = {"in_proj_weight": torch.cat((sd["q_proj_weight"], sd["k_proj_weight"], sd["v_proj_weight"]))}
    out.update({key: t for key, t in sd.items() if not key.endswith("_proj_weight")})
    return out


def split_in_proj(sd, E):
    """q/k/v weights as views of in_proj_weight (gradients flow back to it), for fixture_variants."""
    if "in_proj_weight" not in sd:
        return sd
    w = sd["in_proj_weight"]
    out = {"q_proj_weight": w[:E], "k_proj_weight": w[E:2 * E], "v_proj_weight": w[2 * E:]}
    out.update({key: t for key, t in sd.items() if key != "in_proj_weight"})
    return out


def reference_gradients(forward, q, k, v, sd, G, cross):
    """Autograd through a float64 reference forward(q, k, v, sd) -> (out, weights, blocked)."""
    q64 = q.double().requires_grad_()
    k64 = k.double().requires_grad_() if cross else q64  # self-attention: one tensor, three uses
    v64 = v.double().requires_grad_() if cross else q64
    sd64 = {key: t.double().requires_grad_() for key, t in sd.items()}
    out, weights, blocked = forward(q64, k64, v64, sd64)
    inputs = [q64, k64, v64] if cross else [q64]
    grads = torch.autograd.grad((out * G.double()).sum(), inputs + list(sd64.values()))
    return (out.detach(), weights.detach(), blocked, dict(zip(("query", "key", "value"), grads[:len(inputs)])),
            dict(zip(sd64, grads[len(inputs):])))


def torch_gradients(q, k, v, sd, E, H, kdim, vdim, bias, causal, kpm, am, need_weights, average, G, cross):
    """Autograd on torch.nn.MultiheadAttention in float32."""
    layer = torch.nn.MultiheadAttention(E, H, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    layer.load_state_dict(sd)
    layer.train()  # dropout is 0: eval()'s math, on the general path that autograd records
    q32 = q.clone().requires_grad_()
    k32 = k.clone().requires_grad_() if cross else q32
    v32 = v.clone().requires_grad_() if cross else q32
    out, weights = layer(q32, k32, v32, key_padding_mask=kpm, attn_mask=torch_attn_mask(am, causal, q.shape[-2], k.shape[-2]),
                         need_weights=need_weights, average_attn_weights=average)
    params = dict(layer.named_parameters())
    assert set(params) == set(sd), (sorted(params), sorted(sd))
    inputs = [q32, k32, v32] if cross else [q32]
    grads = torch.autograd.grad((out * G).sum(), inputs + [params[key] for key in sd])
    return (out.detach(), weights.detach() if weights is not None else None,
            dict(zip(("query", "key", "value"), grads[:len(inputs)])), dict(zip(sd, grads[len(inputs):])))


def gradient_bound(want, reduction_length):
    """GRADIENT_TOLERANCE's bound for each element of `want` (float64)."""
    floor = GRADIENT_TOLERANCE["floorUlps"] * 2.0 ** -23 * math.sqrt(reduction_length) * float(want.abs().max())
    return GRADIENT_TOLERANCE["relative"] * want.abs() + floor


def check_torch_agreement(name, torch_grads, ref_grads, reduction_length):
    """PyTorch's float32 gradients within half the tests' bound of the float64 ones: a float32
    implementation as accurate as PyTorch's passes the tests with room to spare."""
    worst = 0.0
    for key, want in ref_grads.items():
        ratio = float(((torch_grads[key].double() - want).abs() / gradient_bound(want, reduction_length)).max())
        assert ratio <= 0.5, f"{name}: PyTorch's float32 d{key} is {ratio:.2f} of the bound from the float64 reference"
        worst = max(worst, ratio)
    return worst


def build_gradient_case(writer, gen, spec):
    (E, H, Hkv, Dh, Dv, out_dim, kdim, vdim, bias, sinks, B, L, S, cross, causal, need_weights, average,
     scale) = variant_sizes(spec, default_L=5, extra_keys=2)
    batched = not spec.get("unbatched", False)
    variant = any(key in spec for key in VARIANT_KEYS)
    assert batched or not variant, "fixture_variants.reference takes batched inputs"

    lead = (B,) if batched else ()
    q = torch.randn(*lead, L, E, generator=gen) * spec.get("input_scale", 1.0)
    k = torch.randn(*lead, S, kdim, generator=gen) * spec.get("input_scale", 1.0) if cross else q
    v = torch.randn(*lead, S, vdim, generator=gen) if cross else q
    if variant:
        sd = fixture_variants.state_dict(gen, E, H, Hkv, Dh, Dv, out_dim, kdim, vdim, bias, sinks)
    else:
        sd = make_state_dict(gen, E, H, kdim, vdim, bias, Hkv)
    sd = as_layer_keys(sd, fused_in_proj(E, H, Hkv, Dh, Dv, out_dim, kdim, vdim))
    kpm = spec["kpm"](gen, lead, S) if "kpm" in spec else None
    am = spec["am"](gen, B if batched else 1, H, L, S) if "am" in spec else None
    if am is not None and am.dim() == 3 and not batched:
        am = am.view(H, L, S)
    positions = spec["positions"](B, L) if "positions" in spec else None
    G = torch.randn(*lead, L, out_dim, generator=gen)

    config, ref = variant_config(spec, E, H, Hkv, Dh, Dv, kdim, vdim, bias, scale)
    if variant:
        forward = lambda q_, k_, v_, sd_: fixture_variants.reference(  # noqa: E731
            q_, k_, v_, split_in_proj(sd_, E), ref, causal, kpm, am, positions, average, combined_bias)
    else:
        forward = lambda q_, k_, v_, sd_: reference(  # noqa: E731
            q_, k_, v_, sd_, E, H, Hkv, scale, causal, kpm, am, average)
    out, weights, has_blocked_rows, d_inputs, d_params = reference_gradients(forward, q, k, v, sd, G, cross)
    for key, t in {**d_inputs, **d_params}.items():
        assert torch.isfinite(t).all(), f"{spec['name']}: d{key} has NaN or Inf"
    reduction_length = max(B * max(L, S), E, kdim, vdim, H * Dh, H * Dv, out_dim)
    source = "float64 reference with autograd" + (" (tools/fixture_variants.py)" if variant else "")

    torch_ok = not variant and Hkv == H and "scale" not in spec and not has_blocked_rows
    if kpm is not None and am is not None and kpm.dtype != am.dtype:
        torch_ok = False  # PyTorch 1.13 reads a float key_padding_mask as bool when attn_mask is bool
    if torch_ok:
        t_out, t_w, t_inputs, t_params = torch_gradients(q, k, v, sd, E, H, kdim, vdim, bias, causal, kpm, am,
                                                         need_weights, average, G, cross)
        assert torch.allclose(t_out.double(), out, rtol=1e-4, atol=1e-5), spec["name"]
        agreement = check_torch_agreement(spec["name"], {**t_inputs, **t_params}, {**d_inputs, **d_params},
                                          reduction_length)
        out, weights, d_inputs, d_params = t_out, t_w, t_inputs, t_params
        source = "torch.nn.MultiheadAttention with autograd"
        print(f"  {spec['name']}: PyTorch's float32 gradients are within {agreement:.3f} of the bound of the float64 ones")

    if spec.get("nan_at_padded_keys"):
        # Keys and values at padded positions are never read: NaN there must reach no gradient.
        assert cross and kpm is not None and kpm.dtype == torch.bool
        k, v = k.clone(), v.clone()
        k[kpm], v[kpm] = float("nan"), float("nan")
        assert (d_inputs["key"][kpm] == 0).all() and (d_inputs["value"][kpm] == 0).all()
    tensors, state = write_tensors(writer, q, k if cross else None, v if cross else None, kpm, am, positions, sd, out,
                                   weights if need_weights else None)
    tensors["gradOutput"] = writer.add(f32(G))
    return {
        **case_record(spec, source, config, causal, need_weights, average, cross, has_blocked_rows, tensors, state),
        "reductionLength": reduction_length,
        "gradients": {key: writer.add(f32(t)) for key, t in d_inputs.items()},
        "paramGradients": {key: writer.add(f32(t).reshape(-1)) for key, t in d_params.items()},
    }


def per_head(make_mask):
    return lambda g, B, H, L, S: make_mask(g, B, H, L, S, True)


GRADIENT_CASES = [
    # nn.MultiheadAttention's own options (PyTorch autograd, float32).
    dict(name="grad_self", E=8, H=2),
    dict(name="grad_self_weights_per_head", E=8, H=2, need_weights=True, average=False),
    dict(name="grad_cross", E=8, H=2, L=4, S=7, cross=True, need_weights=True),
    dict(name="grad_kdim_vdim", E=12, H=3, kdim=5, vdim=7, L=3, S=6, need_weights=True, average=False),
    dict(name="grad_no_bias", E=8, H=2, bias=False),
    dict(name="grad_no_bias_kdim", E=8, H=4, kdim=6, vdim=10, bias=False, L=4, S=3),
    dict(name="grad_causal", E=16, H=4, L=6, causal=True, need_weights=True, average=False),
    dict(name="grad_causal_cross", E=8, H=2, L=5, S=8, cross=True, causal=True),
    dict(name="grad_kpm_bool", E=8, H=2, B=3, L=4, S=6, cross=True, kpm=bool_kpm, need_weights=True),
    dict(name="grad_kpm_float", E=8, H=2, B=3, L=4, S=6, cross=True, kpm=float_kpm),
    dict(name="grad_attn_bool_2d", E=8, H=2, L=5, am=bool_am, need_weights=True, average=False),
    dict(name="grad_attn_float_2d", E=8, H=2, L=5, S=7, cross=True, am=float_am),
    dict(name="grad_attn_bool_3d", E=12, H=3, L=4, S=5, cross=True, am=per_head(bool_am)),
    dict(name="grad_attn_float_3d", E=8, H=2, L=4, am=per_head(float_am), need_weights=True),
    dict(name="grad_unbatched", E=8, H=2, L=5, unbatched=True, need_weights=True),
    dict(name="grad_unbatched_cross_masks", E=8, H=2, L=3, S=6, cross=True, unbatched=True, kpm=bool_kpm,
         am=per_head(float_am), need_weights=True, average=False),
    dict(name="grad_longer_causal", E=32, H=4, B=1, L=70, causal=True),
    dict(name="grad_longer_cross_kpm", E=16, H=2, B=2, L=45, S=83, cross=True, kpm=bool_kpm),
    # The float64 reference: combined masks of two kinds, fully masked rows, GQA/MQA, scale.
    dict(name="grad_masks_combined", E=16, H=4, B=3, L=6, causal=True, kpm=bool_kpm, am=float_am,
         need_weights=True, average=False),
    dict(name="grad_masks_combined_3d", E=8, H=2, L=5, S=5, cross=True, kpm=float_kpm, am=per_head(bool_am)),
    dict(name="grad_fully_masked_row", E=8, H=2, L=4, am=fully_blocked_am, need_weights=True, average=False),
    dict(name="grad_fully_masked_float_neg_inf", E=8, H=2, L=4, S=6, cross=True, am=neg_inf_float_am),
    dict(name="grad_fully_padded_batch", E=8, H=2, L=3, S=4, cross=True, kpm=all_padded_kpm, need_weights=True),
    dict(name="grad_nan_at_padded_keys", E=8, H=2, B=3, L=4, S=6, cross=True, kpm=bool_kpm, nan_at_padded_keys=True),
    dict(name="grad_gqa", E=16, H=4, Hkv=2, L=5, S=7, cross=True, need_weights=True, average=False),
    dict(name="grad_mqa_kdim", E=16, H=4, Hkv=1, kdim=6, vdim=10, L=4, S=6, causal=True),
    dict(name="grad_gqa_self_masks", E=24, H=6, Hkv=3, L=6, kpm=bool_kpm, am=bool_am, need_weights=True),
    dict(name="grad_scale", E=8, H=2, L=5, scale=0.9, need_weights=True),
    # The variants (float64 reference of tools/fixture_variants.py).
    dict(name="grad_free_head_sizes", E=10, H=4, headDim=6, valueHeadDim=3, outputDim=7, L=5, need_weights=True,
         average=False),
    dict(name="grad_free_head_sizes_cross_gqa", E=12, H=4, Hkv=2, headDim=5, valueHeadDim=7, outputDim=9, kdim=6,
         vdim=11, L=4, S=6, causal=True),
    dict(name="grad_free_head_sizes_no_bias", E=6, H=3, headDim=4, valueHeadDim=2, bias=False, L=5, kpm=float_kpm),
    dict(name="grad_rotary_halves", E=16, H=2, L=7, rotary=ROPE, causal=True, need_weights=True),
    dict(name="grad_rotary_interleaved", E=16, H=2, L=7, rotary={"dim": 8, "interleaved": True}, causal=True),
    dict(name="grad_rotary_partial_base", E=24, H=2, L=6, rotary={"dim": 4, "base": 500.0}),
    dict(name="grad_rotary_cross", E=16, H=2, L=5, S=9, cross=True, rotary={"dim": 6}, need_weights=True),
    dict(name="grad_rotary_positions", E=16, H=2, B=3, L=7, rotary=ROPE, causal=True, kpm=left_padding_kpm,
         positions=left_padded_positions),
    dict(name="grad_window_causal", E=8, H=2, L=9, slidingWindow=3, causal=True, need_weights=True, average=False),
    dict(name="grad_window_bidirectional", E=8, H=2, L=9, slidingWindow=2),
    dict(name="grad_window_long", E=16, H=2, B=1, L=150, slidingWindow=40, causal=True),
    dict(name="grad_alibi", E=16, H=4, L=7, alibi=True, causal=True, need_weights=True),
    dict(name="grad_alibi_slopes_cross", E=8, H=2, L=4, S=7, cross=True, alibiSlopes=[0.75, 0.125], kpm=bool_kpm),
    dict(name="grad_softcap", E=16, H=2, L=6, softcap=2.0, input_scale=4.0, need_weights=True, average=False),
    dict(name="grad_softcap_masks", E=8, H=2, L=6, softcap=5.0, input_scale=3.0, causal=True, am=bool_am),
    dict(name="grad_sinks", E=16, H=4, L=6, sinks=True, need_weights=True, average=False),
    dict(name="grad_sinks_fully_masked_row", E=8, H=2, L=4, sinks=True, am=fully_blocked_am),
    dict(name="grad_gemma2_rotary_softcap_gqa", E=16, H=4, Hkv=2, headDim=8, L=8, rotary={"dim": 8}, softcap=2.5,
         scale=0.3, input_scale=2.0, causal=True, need_weights=True),
    dict(name="grad_gpt_oss_sinks_window_rotary_gqa", E=32, H=4, Hkv=2, L=10, rotary={"dim": 8}, slidingWindow=4,
         sinks=True, causal=True, kpm=bool_kpm),
    dict(name="grad_phi_partial_rotary_interleaved_alibi_softcap", E=24, H=3, L=7,
         rotary={"dim": 4, "interleaved": True}, alibi=True, softcap=3.0, causal=True, need_weights=True),
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
    for spec in VARIANT_CASES:  # after the others, so their random numbers stay as they were
        case = build_variant_case(writer, gen, spec)
        print(f"{case['name']:30s} {case['source']}")
        cases.append(case)
    grad_gen = torch.Generator().manual_seed(2222)  # its own stream: the cases above stay as they were
    gradient_cases = []
    for spec in GRADIENT_CASES:
        case = build_gradient_case(writer, grad_gen, spec)
        print(f"{case['name']:30s} {case['source']}")
        gradient_cases.append(case)
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, "fixtures.bin"), "wb") as f:
        f.write(writer.blob)
    index = {
        "generator": "tools/make_fixtures.py",
        "torch": torch.__version__,
        "tolerance": {"absolute": 1e-5, "relative": 1e-4},
        "binary": "fixtures.bin",
        "cases": cases,
        "gradientTolerance": GRADIENT_TOLERANCE,
        "gradientCases": gradient_cases,
    }
    with open(os.path.join(OUT_DIR, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases, {len(gradient_cases)} gradient cases, {len(writer.blob)} bytes")


if __name__ == "__main__":
    sys.exit(main())
