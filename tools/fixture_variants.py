"""Fixtures for the options of today's models (rotary, sliding window, ALiBi, softcap, sinks, free
head sizes), computed in float64 with explicit torch operations written from the formulas of the
projects that define them (each cited where it is used). PyTorch's nn.MultiheadAttention has none
of these options, so this reference is the source of these fixtures.

Used by tools/make_fixtures.py; the cases are appended after the nn.MultiheadAttention ones.
"""
import math

import torch


def bloom_alibi_slopes(H):
    """Hugging Face transformers models/bloom/modeling_bloom.py, build_alibi_tensor."""
    closest = 2 ** math.floor(math.log2(H))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, 1 + closest)]
    if closest != H:
        extra_base = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        remaining = min(closest, H - closest)
        slopes += [extra_base ** p for p in range(1, 1 + 2 * remaining, 2)]
    return torch.tensor(slopes, dtype=torch.float64)


def rotary(x, positions, dim, base, interleaved):
    """x [B, heads, T, D] float64, positions [B, T].

    interleaved=False: Hugging Face models/llama/modeling_llama.py apply_rotary_pos_emb with
    rotate_half (x1 = first half, x2 = second half; cat(-x2, x1)), cos/sin = cat(freqs, freqs).
    interleaved=True: models/gptj/modeling_gptj.py rotate_every_two (pairs (x0, x1) -> (-x1, x0)),
    sin/cos repeat_interleave(2). Partial rotary (dim < D): models/gpt_neox/modeling_gpt_neox.py
    (rotary_ndims: the first dim features rotate, the rest pass through).
    """
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = positions.double()[:, None, :, None] * inv_freq  # [B, 1, T, dim/2]
    rot, rest = x[..., :dim], x[..., dim:]
    if interleaved:
        cos, sin = freqs.cos().repeat_interleave(2, -1), freqs.sin().repeat_interleave(2, -1)
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        turned = torch.stack((-x2, x1), dim=-1).flatten(-2)
    else:
        cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()
        x1, x2 = rot[..., : dim // 2], rot[..., dim // 2:]
        turned = torch.cat((-x2, x1), -1)
    return torch.cat((rot * cos + turned * sin, rest), -1)


def state_dict(gen, E, H, Hkv, Dh, Dv, out_dim, kdim, vdim, bias, sinks):
    """Random weights in the layer's state-dict layout with free head sizes (always q/k/v apart)."""
    def w(rows, cols):
        return torch.randn(rows, cols, generator=gen) / math.sqrt(cols)

    sd = {"q_proj_weight": w(H * Dh, E), "k_proj_weight": w(Hkv * Dh, kdim), "v_proj_weight": w(Hkv * Dv, vdim)}
    if bias:
        sd["in_proj_bias"] = torch.randn(H * Dh + Hkv * Dh + Hkv * Dv, generator=gen) * 0.5
    sd["out_proj.weight"] = w(out_dim, H * Dv)
    if bias:
        sd["out_proj.bias"] = torch.randn(out_dim, generator=gen) * 0.5
    if sinks:
        sd["sinks"] = torch.randn(H, generator=gen)
    return sd


def reference(q, k, v, sd, cfg, causal, kpm, am, positions, average, combined_bias):
    """float64 forward pass; order of the score step as Gemma 2 / ONNX Attention-23 / onnxruntime
    GroupQueryAttention: rotary -> scale -> softcap -> + ALiBi, masks, window -> softmax (+ sink)."""
    E, H, Hkv, Dh, Dv = cfg["E"], cfg["H"], cfg["Hkv"], cfg["Dh"], cfg["Dv"]
    B, L, _ = q.shape
    S = k.shape[1]
    bq = bk = bv = None
    if "in_proj_bias" in sd:
        b = sd["in_proj_bias"].double()
        bq, bk, bv = b[: H * Dh], b[H * Dh: H * Dh + Hkv * Dh], b[H * Dh + Hkv * Dh:]
    lin = lambda x, w, b: x.double() @ w.double().T + (b if b is not None else 0)
    Q = lin(q, sd["q_proj_weight"], bq).view(B, L, H, Dh).transpose(1, 2)
    K = lin(k, sd["k_proj_weight"], bk).view(B, S, Hkv, Dh).transpose(1, 2)
    V = lin(v, sd["v_proj_weight"], bv).view(B, S, Hkv, Dv).transpose(1, 2)
    if cfg.get("rotary"):
        r = cfg["rotary"]
        qpos = positions if positions is not None else torch.arange(L).expand(B, L)
        kpos = positions if positions is not None else torch.arange(S).expand(B, S)
        Q = rotary(Q, qpos, r["dim"], r.get("base", 10000.0), r.get("interleaved", False))
        K = rotary(K, kpos, r["dim"], r.get("base", 10000.0), r.get("interleaved", False))
    # Query head h reads kv head h // (H / Hkv): repeat_interleave, as PyTorch and FlashAttention.
    K = K.repeat_interleave(H // Hkv, dim=1)
    V = V.repeat_interleave(H // Hkv, dim=1)
    scores = (Q @ K.transpose(-1, -2)) * cfg["scale"]
    if cfg.get("softcap"):
        # Gemma 2 (models/gemma2/modeling_gemma2.py): scores / cap -> tanh -> * cap, before masks.
        c = cfg["softcap"]
        scores = torch.tanh(scores / c) * c
    i = torch.arange(L).view(L, 1)
    j = torch.arange(S).view(1, S)
    if cfg.get("alibi") is not None:
        # -slope_h * |i - j| (FlashAttention alibi_slopes; BLOOM's slope * j differs from it by a
        # per-row constant in causal attention, which the softmax cancels).
        slopes = cfg["alibi"].view(1, H, 1, 1)
        scores = scores - slopes * (i - j).abs().double().view(1, 1, L, S)
    bias = combined_bias(B, H, L, S, causal, kpm, am)
    W = cfg.get("window")
    if W:
        # Mistral (models/mistral: sliding_window) / FlashAttention window_size=(W-1, 0) when
        # causal: i - W < j <= i; Keras' sliding_window when not: |i - j| < W.
        outside = (i - j >= W) if causal else ((i - j).abs() >= W)
        bias = bias.masked_fill(outside.view(1, 1, L, S), float("-inf"))
    scores = scores + bias
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    scores = scores.masked_fill(blocked, 0.0)
    if "sinks" in sd:
        # gpt-oss sinks / onnxruntime GQA head_sink: one more logit per head in the denominator.
        sink = sd["sinks"].double().view(1, H, 1, 1).expand(B, H, L, 1)
        p = torch.softmax(torch.cat((scores, sink), -1), dim=-1)[..., :S]
    else:
        p = torch.softmax(scores, dim=-1)
    p = p.masked_fill(blocked, 0.0)
    attn = (p @ V).transpose(1, 2).reshape(B, L, H * Dv)
    out = attn @ sd["out_proj.weight"].double().T
    if "out_proj.bias" in sd:
        out = out + sd["out_proj.bias"].double()
    weights = p.mean(dim=1) if average else p
    return out, weights, bool(blocked.any())
