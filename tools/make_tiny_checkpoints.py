#!/usr/bin/env python3
"""Writes tiny checkpoints of every family mha-wasm/models loads (GPT-2, Llama / Qwen2 / Mistral, and
issue 48's GPT-NeoX (Pythia), Gemma, Gemma 2 and Phi-3) in Hugging Face's file layouts, with expected values.

For the "Your model" mode (issue 43) and its tests: each checkpoint is a folder as `save_pretrained`
writes it (config.json, model.safetensors or model.safetensors.index.json with its shards,
tokenizer.json), with random weights, 2-3 layers and a vocabulary of about 300 tokens, plus
expected.safetensors / expected.json: the logits, every layer's attention pattern, the logit lens,
one head ablated and one head patched, from a float64 forward written below in torch from each
architecture's published definition (Hugging Face's modeling_gpt2.py / modeling_llama.py /
modeling_mistral.py / modeling_qwen2.py / modeling_gpt_neox.py / modeling_gemma.py / modeling_gemma2.py /
modeling_phi3.py). No `transformers` or `tokenizers` library is needed: the
tokenizer.json files and the token ids of the test texts come from the small BPE below.

hooks.safetensors / hooks.json (float32; names and batch-first shapes as TransformerLens'
transformer_lens/, TransformerLensOrg/TransformerLens @4cd36aae), from the same forwards:
- every hook of the clean run on TEXT under its TL name (components/transformer_block.py,
  abstract_attention.py, layer_norm.py, rms_norm.py, mlps/mlp.py, mlps/gated_mlp.py), batch 1;
- `replaced.<case>`: the logits with one hook replaced (hook_points.py, run_with_hooks);
- `patching.*`: patching.py's get_act_patch_{resid_pre,attn_out,mlp_out,attn_head_out_all_pos,
  attn_head_out_by_pos} (generic_activation_patch), OTHER_TEXT corrupted, the normalised logit diff;
- `dla.*`: ActivationCache.py's stack_head_results / apply_ln_to_stack / logit_attrs /
  accumulated_resid(apply_ln=True), as on TL's default loading (weight_processing.py process_weights:
  fold_ln, center_writing_weights, center_unembed, fold_value_biases) while the forward runs raw weights;
- `scores.*`: head_detector.py detect_head (error_measure="mul") for its three named patterns.

Output: tests/fixtures/your-model/<name>/. Run: /usr/bin/python3 tools/make_tiny_checkpoints.py
"""
import json
import math
import os
import re
import struct

import torch

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "your-model")

# A corpus for the tokenizers' merges, and the texts the expected values are computed on.
CORPUS = ("the cat sat on the mat. the dog sat on the log. a cat and a dog met the other cat "
          "on the hill, then the cat ran at the dog and the dog ran at the cat. ") * 3
TEXT = "the cat met a dog. the cat"
# The patching source: the same number of tokens as TEXT (checked below).
OTHER_TEXT = "the dog met a cat. the dog"


# ---------------------------------------------------------------- tokenizers (fixture side only)

def bytes_to_unicode():
    """GPT-2's map from the 256 byte values to printable characters (openai/gpt-2 encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def learn_merges(words, count):
    """Plain BPE training: repeatedly merge the most frequent adjacent pair (ties: first seen)."""
    words = [list(w) for w in words]
    merges = []
    for _ in range(count):
        pairs = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
        if not pairs:
            break
        best = max(pairs, key=lambda p: pairs[p])
        merges.append(best)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [w[i] + w[i + 1]]
                else:
                    i += 1
    return merges


def apply_merges(symbols, ranks):
    """BPE encoding of one word: merge the lowest-ranked adjacent pair until none is left."""
    symbols = list(symbols)
    while len(symbols) > 1:
        pairs = [(ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(symbols, symbols[1:]))]
        rank, i = min(pairs)
        if rank == math.inf:
            break
        symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols


# GPT-2's pre-tokenizer pattern, restricted to ASCII (the test texts are ASCII).
GPT2_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def gpt2_tokenizer(merge_count):
    byte_chars = bytes_to_unicode()
    to_chars = lambda text: "".join(byte_chars[b] for b in text.encode("utf-8"))
    words = [to_chars(w) for w in GPT2_SPLIT.findall(CORPUS)]
    merges = learn_merges(words, merge_count)
    vocab = {c: i for i, c in enumerate(byte_chars[b] for b in range(256))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    eos = len(vocab)
    ranks = {m: r for r, m in enumerate(merges)}
    encode = lambda text: [vocab[s] for w in GPT2_SPLIT.findall(text) for s in apply_merges(to_chars(w), ranks)]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eos, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    return tokenizer, encode, eos + 1, {"bos_token_id": eos, "eos_token_id": eos}


def llama_tokenizer(merge_count):
    """SentencePiece-style BPE as Llama 2's tokenizer.json: '▁' for spaces, byte fallback, <s> first."""
    special = ["<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(special)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    normalize = lambda text: "▁" + text.replace(" ", "▁")
    corpus = normalize(CORPUS)
    for c in sorted(set(corpus) - {"."}):  # '.' is left to the byte fallback on purpose
        vocab[c] = len(vocab)
    words = re.findall("▁?[^▁]+", corpus)
    merges = learn_merges(words, merge_count)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    ranks = {m: r for r, m in enumerate(merges)}

    def encode(text):
        ids = [1]
        for piece in apply_merges(normalize(text), ranks):
            if piece in vocab:
                ids.append(vocab[piece])
            else:
                ids.extend(vocab[f"<0x{b:02X}>"] for b in piece.encode("utf-8"))
        return ids

    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(special)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    # A merge may make a piece a later one already added; the vocab stays dense.
    assert sorted(vocab.values()) == list(range(len(vocab)))
    return tokenizer, encode, len(vocab), {"bos_token_id": 1, "eos_token_id": 2}


# ---------------------------------------------------------------- safetensors

SAFETENSORS_DTYPES = {torch.float32: ("F32", torch.float32), torch.float16: ("F16", torch.int16),
                      torch.bfloat16: ("BF16", torch.int16), torch.bool: ("BOOL", torch.uint8)}


def write_safetensors(path, tensors, metadata=None):
    """The safetensors layout: u64 header length, JSON header (padded to 8 bytes), raw data."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        dtype, view = SAFETENSORS_DTYPES[t.dtype]
        blob = t.view(view).numpy().tobytes() if view != t.dtype else t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def save_weights(folder, tensors, dtype, shards, buffers=None):
    """The weights in `dtype` (and `buffers`, as they are: old files' masks and inv_freq), one file or `shards`."""
    tensors = {k: v.to(dtype) for k, v in tensors.items()}
    tensors.update(buffers or {})
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"})
        return tensors
    names = sorted(tensors)
    weight_map, total = {}, 0
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {k: tensors[k] for k in names[s::shards]}
        write_safetensors(os.path.join(folder, file), part, {"format": "pt"})
        for k, t in part.items():
            weight_map[k] = file
            total += t.numel() * t.element_size()
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    return tensors


# ---------------------------------------------------------------- reference forwards (float64)

class Hooks:
    """TransformerLens-style hook points for one run: every activation is recorded under TL's name
    with TL's batch-first shape (batch 1), and `fns` maps a name to a function that takes that
    activation and returns a replacement of the same shape, which the rest of the forward then uses
    (`run_with_hooks`). Without a replacement the forward's own tensor goes on untouched, so the
    arithmetic (and every expected value) is the same as with no hooks at all."""

    def __init__(self, fns=None):
        self.fns, self.cache, self.names = dict(fns or {}), {}, []

    def replaces(self, *names):
        return any(n in self.fns for n in names)

    def __call__(self, name, value, to_tl=lambda t: t[None], from_tl=lambda t: t[0]):
        tl = to_tl(value)
        if name in self.fns:
            new = self.fns[name](tl.clone())
            assert new.shape == tl.shape, (name, new.shape, tl.shape)
            self.cache[name], value = new, from_tl(new)
        else:
            self.cache[name] = tl
        self.names.append(name)
        return value


def attention(q, k, v, hk, a, causal_window=None, scale=None, softcap=None):
    """q [H, L, D], k/v [H, L, D]: causal softmax(q kᵀ / sqrt(D)) v; a window W keeps keys i-W+1..i.
    `scale` replaces 1/sqrt(D) (Gemma 2: query_pre_attn_scalar^-1/2); `softcap` c caps the scaled
    scores to c·tanh(s / c) before the mask (Gemma 2's attn_logit_softcapping).
    Hooks (prefix a = "blocks.l.attn."): hook_attn_scores (masked with -inf), hook_pattern, hook_z."""
    L, D = q.shape[1], q.shape[2]
    scores = q @ k.transpose(1, 2) / math.sqrt(D) if scale is None else (q @ k.transpose(1, 2)) * scale
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    blocked = j > i
    if causal_window is not None:
        blocked |= j <= i - causal_window
    scores = hk(a + "hook_attn_scores", scores.masked_fill(blocked, -math.inf))
    pattern = torch.softmax(scores, dim=-1)
    pattern = hk(a + "hook_pattern", torch.where(torch.isnan(pattern), torch.zeros_like(pattern), pattern))
    z = hk(a + "hook_z", pattern @ v, lambda t: t.transpose(0, 1)[None], lambda t: t[0].transpose(0, 1))
    return z  # [H, L, D]


def attention_out(z, W_O, b_O, plain, hk, p):
    """hook_result [1, L, H, E] = z_h · W_O[h] (W_O [H, D, E], no b_O), then hook_attn_out. The output
    is the forward's own projection `plain` unless hook_result is replaced (then Σ_h result + b_O)."""
    result = hk(p + "attn.hook_result", torch.einsum("hld,hde->lhe", z, W_O))
    out = result.sum(1) + b_O if hk.replaces(p + "attn.hook_result") else plain
    return hk(p + "hook_attn_out", out)


def gpt2_forward(w, cfg, ids, hooks=None):
    """modeling_gpt2.py: pre-LayerNorm blocks, Conv1D weights [in, out], GELU-tanh ("gelu_new"), tied lm_head.
    Returns the logits [L, V], the Hooks (cache and names) and the logit lens of each layer's last position."""
    E, H, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    D = E // H
    L = len(ids)
    hk = hooks if isinstance(hooks, Hooks) else Hooks(hooks)

    def ln(x, p, name=None):
        plain = lambda: torch.nn.functional.layer_norm(x, (E,), w[p + ".weight"], w[p + ".bias"], eps)
        if name is None:
            return plain()
        x_c = x - x.mean(-1, keepdim=True)
        scale = hk(name + ".hook_scale", (x_c.pow(2).mean(-1, keepdim=True) + eps).sqrt())
        normalized = hk(name + ".hook_normalized", x_c / scale)
        if not hk.replaces(name + ".hook_scale", name + ".hook_normalized"):
            return plain()
        return normalized * w[p + ".weight"] + w[p + ".bias"]

    conv1d = lambda x, p: x @ w[p + ".weight"] + w[p + ".bias"]
    gelu = lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    by_head = lambda t: t.view(L, H, D)[None]
    x = hk("hook_embed", w["transformer.wte.weight"][ids]) + hk("hook_pos_embed", w["transformer.wpe.weight"][:L])
    residuals = []
    for l in range(cfg["n_layer"]):
        p, b = f"transformer.h.{l}.", f"blocks.{l}."
        x = hk(b + "hook_resid_pre", x)
        q, k, v = conv1d(ln(x, p + "ln_1", b + "ln1"), p + "attn.c_attn").split(E, dim=-1)
        q, k, v = (hk(b + "attn.hook_" + n, t, by_head, lambda t: t[0].reshape(L, E))
                   for n, t in zip("qkv", (q, k, v)))
        heads = lambda t: t.view(L, H, D).transpose(0, 1)
        z = attention(heads(q), heads(k), heads(v), hk, b + "attn.")
        plain = conv1d(z.transpose(0, 1).reshape(L, E), p + "attn.c_proj")
        x = hk(b + "hook_resid_mid", x + attention_out(z, w[p + "attn.c_proj.weight"].view(H, D, E),
                                                        w[p + "attn.c_proj.bias"], plain, hk, b))
        pre = hk(b + "mlp.hook_pre", conv1d(ln(x, p + "ln_2", b + "ln2"), p + "mlp.c_fc"))
        post = hk(b + "mlp.hook_post", gelu(pre))
        x = hk(b + "hook_resid_post", x + hk(b + "hook_mlp_out", conv1d(post, p + "mlp.c_proj")))
        residuals.append(x)
    unembed = w["transformer.wte.weight"].T
    lens = [ln(r[-1], "transformer.ln_f") @ unembed for r in residuals]
    return ln(x, "transformer.ln_f", "ln_final") @ unembed, hk, lens


def llama_forward(w, cfg, ids, hooks=None):
    """modeling_llama.py (and Mistral's sliding window, Qwen2's q/k/v biases): RMSNorm, rotary with
    rotate_half, grouped-query heads (repeat_kv), SwiGLU MLP, lm_head or the tied embedding.
    Returns the logits [L, V], the Hooks (cache and names) and the logit lens of each layer's last position."""
    E, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or E // H
    eps, theta, L = cfg["rms_norm_eps"], cfg["rope_theta"], len(ids)
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) else None
    hk = hooks if isinstance(hooks, Hooks) else Hooks(hooks)

    def rms(x, p, name=None):
        plain = lambda: w[p + ".weight"] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
        if name is None:
            return plain()
        scale = hk(name + ".hook_scale", (x.pow(2).mean(-1, keepdim=True) + eps).sqrt())
        normalized = hk(name + ".hook_normalized", x / scale)
        if not hk.replaces(name + ".hook_scale", name + ".hook_normalized"):
            return plain()
        return w[p + ".weight"] * normalized

    def linear(x, p):
        return x @ w[p + ".weight"].T + (w[p + ".bias"] if p + ".bias" in w else 0)

    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.outer(torch.arange(L, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    rotate_half = lambda t: torch.cat((-t[..., D // 2:], t[..., :D // 2]), dim=-1)
    rope = lambda t: t * cos + rotate_half(t) * sin
    to_tl, from_tl = (lambda t: t.transpose(0, 1)[None]), (lambda t: t[0].transpose(0, 1))
    x = hk("hook_embed", w["model.embed_tokens.weight"][ids])
    residuals = []
    for l in range(cfg["num_hidden_layers"]):
        p, b = f"model.layers.{l}.", f"blocks.{l}."
        x = hk(b + "hook_resid_pre", x)
        h = rms(x, p + "input_layernorm", b + "ln1")
        q = hk(b + "attn.hook_q", linear(h, p + "self_attn.q_proj").view(L, H, D), lambda t: t[None]).transpose(0, 1)
        k = hk(b + "attn.hook_k", linear(h, p + "self_attn.k_proj").view(L, Hkv, D), lambda t: t[None]).transpose(0, 1)
        v = hk(b + "attn.hook_v", linear(h, p + "self_attn.v_proj").view(L, Hkv, D), lambda t: t[None]).transpose(0, 1)
        q = hk(b + "attn.hook_rot_q", rope(q), to_tl, from_tl)
        k = hk(b + "attn.hook_rot_k", rope(k), to_tl, from_tl)
        k, v = (t.repeat_interleave(H // Hkv, dim=0) for t in (k, v))
        z = attention(q, k, v, hk, b + "attn.", window)
        o = p + "self_attn.o_proj"
        plain = linear(z.transpose(0, 1).reshape(L, H * D), o)
        b_O = w.get(o + ".bias", torch.zeros(E, dtype=torch.float64))
        x = hk(b + "hook_resid_mid", x + attention_out(z, w[o + ".weight"].T.reshape(H, D, E), b_O, plain, hk, b))
        h = rms(x, p + "post_attention_layernorm", b + "ln2")
        gate = hk(b + "mlp.hook_pre", linear(h, p + "mlp.gate_proj"))
        up = hk(b + "mlp.hook_pre_linear", linear(h, p + "mlp.up_proj"))
        post = hk(b + "mlp.hook_post", torch.nn.functional.silu(gate) * up)
        x = hk(b + "hook_resid_post", x + hk(b + "hook_mlp_out", linear(post, p + "mlp.down_proj")))
        residuals.append(x)
    unembed = (w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]).T
    lens = [rms(r[-1], "model.norm") @ unembed for r in residuals]
    return rms(x, "model.norm", "ln_final") @ unembed, hk, lens


# The families whose attention fits MultiHeadAttention's options (issue 48), from Hugging Face's
# modeling_gpt_neox.py, modeling_gemma.py, modeling_gemma2.py and modeling_phi3.py.
NEW_FAMILIES = ("gpt_neox", "gemma", "gemma2", "phi3", "qwen3", "olmo2", "gemma3_text")
GEMMAS = ("gemma", "gemma2", "gemma3_text")  # norms × (1 + w)
POST_NORMED = ("gemma2", "gemma3_text", "olmo2")  # norms after the attention and the MLP


def dims(cfg):
    """E, H, K (key/value heads), D (head size), eps, the number of layers."""
    E, H = cfg["hidden_size"], cfg["num_attention_heads"]
    K = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or E // H
    eps = cfg["layer_norm_eps"] if cfg["model_type"] == "gpt_neox" else cfg["rms_norm_eps"]
    return E, H, K, D, eps, cfg["num_hidden_layers"]


def family_forward(w, cfg, ids, hooks=None):
    """gpt_neox: LayerNorm, fused query_key_value viewed [L, H, 3·D] (q, k, v per head), partial
    rotary (rotary_pct), parallel residual x + attn(ln1(x)) + mlp(ln2(x)) (use_parallel_residual; else
    sequential), exact-erf GELU, embed_out (or the tied embed_in), attention biases unless attention_bias false.
    gemma: RMSNorm × (1 + w) (in float), embeddings × sqrt(hidden_size), GeGLU with gelu tanh, free
    head_dim, tied. gemma2: gemma plus post-attention / post-feedforward norms, scores × q_scalar^-1/2
    and softcapped, even layers sliding, the logits softcapped. phi3: fused qkv_proj (row blocks q, k, v)
    and gate_up_proj (gate, then up), partial rotary, sliding window. qwen3: Llama's block with q and k
    RMS-normed per head between the projection and rotary. gemma3_text: gemma2's block without softcaps
    (unless set), q/k norms (1 + w) per head, sliding layers but every sliding_window_pattern-th, whose
    rotary base is rope_local_base_freq. olmo2: no input norms, post-norms after the attention and the
    MLP, q/k norms over the whole projection. Hooks under TransformerLens' names (ln1_post / ln2_post for
    the post-norms, no hook_resid_mid in a parallel block; hook_q / hook_k before the q/k norms, hook_rot_q
    / hook_rot_k after them and rotary).
    Returns the logits [L, V], the Hooks and the logit lens of each layer's last position."""
    mt = cfg["model_type"]
    E, H, K, D, eps, n_layers = dims(cfg)
    L = len(ids)
    hk = hooks if isinstance(hooks, Hooks) else Hooks(hooks)
    gemma = mt in GEMMAS
    post_normed = mt in POST_NORMED

    def norm(x, p, name=None):
        if mt == "gpt_neox":
            plain = lambda: torch.nn.functional.layer_norm(x, (E,), w[p + ".weight"], w[p + ".bias"], eps)
            x_c, weight, bias = x - x.mean(-1, keepdim=True), w[p + ".weight"], w[p + ".bias"]
        else:
            weight = 1 + w[p + ".weight"] if gemma else w[p + ".weight"]
            plain = lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
            x_c, bias = x, 0
        if name is None:
            return plain()
        scale = hk(name + ".hook_scale", (x_c.pow(2).mean(-1, keepdim=True) + eps).sqrt())
        normalized = hk(name + ".hook_normalized", x_c / scale)
        if not hk.replaces(name + ".hook_scale", name + ".hook_normalized"):
            return plain()
        return normalized * weight + bias

    def linear(x, p):
        return x @ w[p + ".weight"].T + (w[p + ".bias"] if p + ".bias" in w else 0)

    # Rotary: the first r features of each head (all for gemma), pairs (i, i + r/2), inv_freq base^(-2i/r).
    if mt == "gpt_neox":
        r, theta = int(D * cfg["rotary_pct"]), cfg["rotary_emb_base"]
    else:
        r, theta = int(D * cfg.get("partial_rotary_factor", 1.0)), cfg["rope_theta"]
    rotate_half = lambda t: torch.cat((-t[..., r // 2:], t[..., :r // 2]), dim=-1)

    def rope_at(base):
        inv_freq = 1.0 / (base ** (torch.arange(0, r, 2, dtype=torch.float64) / r))
        freqs = torch.outer(torch.arange(L, dtype=torch.float64), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        return lambda t: torch.cat((t[..., :r] * cos + rotate_half(t[..., :r]) * sin, t[..., r:]), dim=-1)

    # Gemma 3: a layer slides unless it is every sliding_window_pattern-th (or layer_types says so).
    def sliding(l):
        if mt == "gemma3_text":
            return (l + 1) % cfg["sliding_window_pattern"] != 0
        return mt == "phi3" or (mt == "gemma2" and l % 2 == 0)

    def qk_norm(t, key, over_projection):
        """t [L, heads, D]: RMSNorm over each head's D features, or over the whole row (OLMo-2)."""
        weight = 1 + w[key] if gemma else w[key]
        flat = t.reshape(L, -1) if over_projection else t
        normed = flat * torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + eps) * weight
        return normed.reshape(t.shape)
    to_tl, from_tl = (lambda t: t.transpose(0, 1)[None]), (lambda t: t[0].transpose(0, 1))
    gelu_tanh = lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    gelu_erf = lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    embed_key = "gpt_neox.embed_in.weight" if mt == "gpt_neox" else "model.embed_tokens.weight"
    x = w[embed_key][ids]
    if gemma:
        x = x * math.sqrt(E)  # (TransformerLens' W_E holds the scale: hook_embed is after it)
    x = hk("hook_embed", x)
    scale = cfg["query_pre_attn_scalar"] ** -0.5 if mt in ("gemma2", "gemma3_text") else None
    softcap = cfg.get("attn_logit_softcapping") if mt in ("gemma2", "gemma3_text") else None
    residuals = []
    for l in range(n_layers):
        p, b = (f"gpt_neox.layers.{l}." if mt == "gpt_neox" else f"model.layers.{l}."), f"blocks.{l}."
        x = hk(b + "hook_resid_pre", x)
        h = x if mt == "olmo2" else norm(x, p + "input_layernorm", b + "ln1")
        rope = rope_at(cfg["rope_local_base_freq"] if mt == "gemma3_text" and sliding(l) else theta)
        if mt == "gpt_neox":
            qkv = linear(h, p + "attention.query_key_value").view(L, H, 3 * D)
            q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]
            o, W_O_key = p + "attention.dense", p + "attention.dense.weight"
            window = None
        else:
            if mt == "phi3":
                qkv = linear(h, p + "self_attn.qkv_proj")
                q, k, v = qkv.split([H * D, K * D, K * D], dim=-1)
            else:
                q, k, v = (linear(h, p + f"self_attn.{n}_proj") for n in "qkv")
            q, k, v = q.reshape(L, H, D), k.reshape(L, K, D), v.reshape(L, K, D)
            o, W_O_key = p + "self_attn.o_proj", p + "self_attn.o_proj.weight"
            window = cfg.get("sliding_window") if sliding(l) else None
        q = hk(b + "attn.hook_q", q, lambda t: t[None])
        k = hk(b + "attn.hook_k", k, lambda t: t[None])
        if mt in ("qwen3", "olmo2", "gemma3_text"):
            q = qk_norm(q, p + "self_attn.q_norm.weight", mt == "olmo2")
            k = qk_norm(k, p + "self_attn.k_norm.weight", mt == "olmo2")
        q, k = q.transpose(0, 1), k.transpose(0, 1)
        v = hk(b + "attn.hook_v", v, lambda t: t[None]).transpose(0, 1)
        q = hk(b + "attn.hook_rot_q", rope(q), to_tl, from_tl)
        k = hk(b + "attn.hook_rot_k", rope(k), to_tl, from_tl)
        k, v = (t.repeat_interleave(H // K, dim=0) for t in (k, v))
        z = attention(q, k, v, hk, b + "attn.", window, scale, softcap)
        plain = linear(z.transpose(0, 1).reshape(L, H * D), o)
        b_O = w.get(o + ".bias", torch.zeros(E, dtype=torch.float64))
        result = hk(b + "attn.hook_result", torch.einsum("hld,hde->lhe", z, w[W_O_key].T.reshape(H, D, E)))
        attn_out = result.sum(1) + b_O if hk.replaces(b + "attn.hook_result") else plain
        if post_normed:
            attn_out = norm(attn_out, p + "post_attention_layernorm", b + "ln1_post")
        attn_out = hk(b + "hook_attn_out", attn_out)
        parallel = mt == "gpt_neox" and cfg["use_parallel_residual"]
        if parallel:
            mlp_in, resid = x, x + attn_out
        else:
            resid = mlp_in = hk(b + "hook_resid_mid", x + attn_out)
        if mt == "olmo2":
            h = mlp_in
        else:
            h = norm(mlp_in, p + ("pre_feedforward_layernorm" if post_normed else "post_attention_layernorm"), b + "ln2")
        if mt == "gpt_neox":
            pre = hk(b + "mlp.hook_pre", linear(h, p + "mlp.dense_h_to_4h"))
            post = hk(b + "mlp.hook_post", gelu_erf(pre))
            mlp_out = linear(post, p + "mlp.dense_4h_to_h")
        else:
            if mt == "phi3":
                gate, up = linear(h, p + "mlp.gate_up_proj").chunk(2, dim=-1)
            else:
                gate, up = linear(h, p + "mlp.gate_proj"), linear(h, p + "mlp.up_proj")
            gate = hk(b + "mlp.hook_pre", gate)
            up = hk(b + "mlp.hook_pre_linear", up)
            post = hk(b + "mlp.hook_post", (gelu_tanh(gate) if gemma else torch.nn.functional.silu(gate)) * up)
            mlp_out = linear(post, p + "mlp.down_proj")
        if post_normed:
            mlp_out = norm(mlp_out, p + "post_feedforward_layernorm", b + "ln2_post")
        x = hk(b + "hook_resid_post", resid + hk(b + "hook_mlp_out", mlp_out))
        residuals.append(x)
    final = "gpt_neox.final_layer_norm" if mt == "gpt_neox" else "model.norm"
    unembed = family_unembedding(w, cfg).T
    cap = cfg.get("final_logit_softcapping") if mt in ("gemma2", "gemma3_text") else None
    capped = (lambda z: cap * torch.tanh(z / cap)) if cap else (lambda z: z)
    lens = [capped(norm(r_[-1], final) @ unembed) for r_ in residuals]
    return capped(norm(x, final, "ln_final") @ unembed), hk, lens


def family_unembedding(w, cfg):
    """[V, E]: embed_out (Pythia), lm_head, or the tied embedding."""
    if cfg["model_type"] == "gpt_neox":
        return w["gpt_neox.embed_in.weight"] if cfg.get("tie_word_embeddings") else w["embed_out.weight"]
    return w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]


# ---------------------------------------------------------------- random weights in HF key names

def gpt2_weights(gen, cfg):
    E, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    r = lambda *shape, std=0.2: torch.randn(*shape, generator=gen, dtype=torch.float64) * std
    w = {"transformer.wte.weight": r(V, E, std=0.5), "transformer.wpe.weight": r(P, E, std=0.1),
         "transformer.ln_f.weight": 1 + r(E, std=0.1), "transformer.ln_f.bias": r(E, std=0.1)}
    for l in range(cfg["n_layer"]):
        p = f"transformer.h.{l}."
        for name in ("ln_1", "ln_2"):
            w[p + name + ".weight"], w[p + name + ".bias"] = 1 + r(E, std=0.1), r(E, std=0.1)
        for name, (i, o) in {"attn.c_attn": (E, 3 * E), "attn.c_proj": (E, E),
                             "mlp.c_fc": (E, 4 * E), "mlp.c_proj": (4 * E, E)}.items():
            w[p + name + ".weight"], w[p + name + ".bias"] = r(i, o, std=1 / math.sqrt(i)), r(o, std=0.05)
    return w


def llama_weights(gen, cfg):
    E, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or E // H
    r = lambda *shape, std=0.2: torch.randn(*shape, generator=gen, dtype=torch.float64) * std
    w = {"model.embed_tokens.weight": r(V, E, std=0.5), "model.norm.weight": 1 + r(E, std=0.1)}
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = r(V, E, std=1 / math.sqrt(E))
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = 1 + r(E, std=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + r(E, std=0.1)
        for name, (o, i) in {"self_attn.q_proj": (H * D, E), "self_attn.k_proj": (Hkv * D, E),
                             "self_attn.v_proj": (Hkv * D, E), "self_attn.o_proj": (E, H * D),
                             "mlp.gate_proj": (I, E), "mlp.up_proj": (I, E), "mlp.down_proj": (E, I)}.items():
            w[p + name + ".weight"] = r(o, i, std=1 / math.sqrt(i))
        if cfg.get("attention_bias") or cfg["model_type"] == "qwen2":
            for name, o in {"q_proj": H * D, "k_proj": Hkv * D, "v_proj": Hkv * D}.items():
                w[p + "self_attn." + name + ".bias"] = r(o, std=0.1)
    return w


def family_weights(gen, cfg):
    """Random weights of a gpt_neox / gemma / gemma2 / phi3 checkpoint under Hugging Face's keys and
    shapes (Gemma's norm weights zero-centred, as stored), and the buffers old Pythia files carry."""
    mt = cfg["model_type"]
    E, H, K, D, _, n_layers = dims(cfg)
    V, I = cfg["vocab_size"], cfg["intermediate_size"]
    r = lambda *shape, std=0.2: torch.randn(*shape, generator=gen, dtype=torch.float64) * std
    lin = lambda o, i: r(o, i, std=1 / math.sqrt(i))
    w, buffers = {}, {}
    if mt == "gpt_neox":
        w["gpt_neox.embed_in.weight"] = r(V, E, std=0.5)
        w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"] = 1 + r(E, std=0.1), r(E, std=0.1)
        if not cfg.get("tie_word_embeddings"):
            w["embed_out.weight"] = lin(V, E)
        P, rot = cfg["max_position_embeddings"], int(D * cfg["rotary_pct"])
        for l in range(n_layers):
            p = f"gpt_neox.layers.{l}."
            for name in ("input_layernorm", "post_attention_layernorm"):
                w[p + name + ".weight"], w[p + name + ".bias"] = 1 + r(E, std=0.1), r(E, std=0.1)
            for name, (o, i) in {"attention.query_key_value": (3 * E, E), "attention.dense": (E, E),
                                 "mlp.dense_h_to_4h": (I, E), "mlp.dense_4h_to_h": (E, I)}.items():
                w[p + name + ".weight"] = lin(o, i)
                # (attention_bias false: query_key_value and dense have none; the MLP's biases stay)
                if cfg.get("attention_bias", True) or name.startswith("mlp."):
                    w[p + name + ".bias"] = r(o, std=0.05)
            buffers[p + "attention.bias"] = torch.tril(torch.ones(P, P, dtype=torch.bool))[None, None]
            buffers[p + "attention.masked_bias"] = torch.tensor(-1e9, dtype=torch.float32)
            buffers[p + "attention.rotary_emb.inv_freq"] = (
                1.0 / (cfg["rotary_emb_base"] ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot)))
        return w, buffers
    gemma = mt in GEMMAS
    norm_w = (lambda n=E: r(n, std=0.1)) if gemma else (lambda n=E: 1 + r(n, std=0.1))
    w["model.embed_tokens.weight"] = r(V, E, std=0.5 if not gemma else 0.1)
    w["model.norm.weight"] = norm_w()
    if not cfg.get("tie_word_embeddings"):
        w["lm_head.weight"] = lin(V, E)
    norms = ["input_layernorm", "post_attention_layernorm"]
    if mt in ("gemma2", "gemma3_text"):
        norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
    if mt == "olmo2":
        norms = ["post_attention_layernorm", "post_feedforward_layernorm"]
    for l in range(n_layers):
        p = f"model.layers.{l}."
        for name in norms:
            w[p + name + ".weight"] = norm_w()
        shapes = {"self_attn.o_proj": (E, H * D), "mlp.down_proj": (E, I)}
        if mt == "phi3":
            shapes.update({"self_attn.qkv_proj": ((H + 2 * K) * D, E), "mlp.gate_up_proj": (2 * I, E)})
        else:
            shapes.update({"self_attn.q_proj": (H * D, E), "self_attn.k_proj": (K * D, E), "self_attn.v_proj": (K * D, E),
                           "mlp.gate_proj": (I, E), "mlp.up_proj": (I, E)})
        for name, (o, i) in shapes.items():
            w[p + name + ".weight"] = lin(o, i)
        if mt in ("qwen3", "gemma3_text"):  # per head, [D]
            w[p + "self_attn.q_norm.weight"], w[p + "self_attn.k_norm.weight"] = norm_w(D), norm_w(D)
        if mt == "olmo2":  # over the projection
            w[p + "self_attn.q_norm.weight"], w[p + "self_attn.k_norm.weight"] = norm_w(H * D), norm_w(K * D)
    return w, buffers


# ---------------------------------------------------------------- the checkpoints

CHECKPOINTS = {
    # GPT-2: one file, float32, tied unembedding.
    "gpt2": dict(family="gpt2", dtype=torch.float32, shards=1, merges=43, config={
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
        "n_embd": 32, "n_head": 4, "n_layer": 2, "n_positions": 64, "n_ctx": 64, "layer_norm_epsilon": 1e-5,
        "scale_attn_weights": True, "tie_word_embeddings": True, "torch_dtype": "float32"}),
    # Llama: two shards with the index, float32, grouped-query heads (4 query, 2 key/value), untied.
    "llama": dict(family="llama", dtype=torch.float32, shards=2, merges=24, config={
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 3, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None,
        "max_position_embeddings": 64, "attention_bias": False, "tie_word_embeddings": False,
        "torch_dtype": "float32"}),
    # Qwen2: bfloat16, q/k/v biases, rope_theta 1e6, tied, multi-query (1 key/value head).
    "qwen2": dict(family="llama", dtype=torch.bfloat16, shards=1, merges=24, config={
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 1,
        "num_hidden_layers": 2, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": None,
        "max_position_embeddings": 64, "tie_word_embeddings": True, "use_sliding_window": False,
        "sliding_window": 32, "torch_dtype": "bfloat16"}),
    # Mistral: float16, a sliding window of 3 keys, head_dim 16 (free of hidden / heads).
    "mistral": dict(family="llama", dtype=torch.float16, shards=1, merges=24, config={
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "num_hidden_layers": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_position_embeddings": 64, "sliding_window": 3, "tie_word_embeddings": False,
        "torch_dtype": "float16"}),
    # Pythia (gpt_neox): float16, parallel residual, rotary on half of each head (rotary_pct 0.5),
    # untied embed_out, and the buffers old files carry (attention.bias, masked_bias, rotary_emb.inv_freq).
    "pythia": dict(family="gpt_neox", dtype=torch.float16, shards=1, merges=43, config={
        "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_act": "gelu",
        "hidden_size": 32, "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2,
        "layer_norm_eps": 1e-5, "rotary_pct": 0.5, "rotary_emb_base": 10000, "max_position_embeddings": 64,
        "use_parallel_residual": True, "attention_bias": True, "tie_word_embeddings": False,
        "rope_scaling": None, "torch_dtype": "float16"}),
    # Gemma: bfloat16, multi-query (1 key/value head), head_dim 16 with hidden 32 and 4 heads, tied;
    # hidden_act "gelu" as early config.json files say, hidden_activation the tanh GELU that runs.
    "gemma": dict(family="gemma", dtype=torch.bfloat16, shards=1, merges=24, config={
        "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_act": "gelu",
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32, "intermediate_size": 48,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "num_hidden_layers": 2,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 64, "attention_bias": False,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16"}),
    # Gemma 2: float32, 3 layers (0 and 2 slide over 4 keys, 1 is global), scores softcapped at 2 and
    # scaled by query_pre_attn_scalar 24 ^ -1/2 (not head_dim 16's), logits softcapped at 8.
    "gemma2": dict(family="gemma2", dtype=torch.float32, shards=1, merges=24, config={
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32, "intermediate_size": 48,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 3,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 64,
        "query_pre_attn_scalar": 24, "sliding_window": 4, "attn_logit_softcapping": 2.0,
        "final_logit_softcapping": 8.0, "attention_bias": False, "tie_word_embeddings": True,
        "torch_dtype": "float32"}),
    # Phi-3: float32, two shards, fused qkv_proj and gate_up_proj, partial rotary (0.75 of head 8),
    # grouped-query heads, a sliding window of 5 keys, untied.
    "phi3": dict(family="phi3", dtype=torch.float32, shards=2, merges=24, config={
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None,
        "partial_rotary_factor": 0.75, "max_position_embeddings": 64, "original_max_position_embeddings": 64,
        "sliding_window": 5, "tie_word_embeddings": False, "torch_dtype": "float32"}),
    # Pythia's other options (gpt_neox): float32, sequential blocks (use_parallel_residual false: a
    # hook_resid_mid, ln2 reads it), attention_bias false (the MLP keeps its biases), rotary_pct 0.25
    # (4 of head 16's features), embed_out tied to embed_in (not in the file), no old buffers.
    "pythia-sequential": dict(family="gpt_neox", dtype=torch.float32, shards=1, merges=43, old_buffers=False, config={
        "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_act": "gelu",
        "hidden_size": 48, "intermediate_size": 64, "num_attention_heads": 3, "num_hidden_layers": 2,
        "layer_norm_eps": 1e-5, "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 64,
        "use_parallel_residual": False, "attention_bias": False, "tie_word_embeddings": True,
        "rope_scaling": None, "torch_dtype": "float32"}),
    # Qwen3: bfloat16, q/k RMS-normed per head, head_dim 16 (free of hidden / heads), grouped-query
    # heads, rope_theta 1e6, tied, no biases, the sliding window off (use_sliding_window false).
    "qwen3": dict(family="qwen3", dtype=torch.bfloat16, shards=1, merges=24, config={
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "num_hidden_layers": 2, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "rope_scaling": None, "max_position_embeddings": 64, "attention_bias": False,
        "use_sliding_window": False, "sliding_window": None, "max_window_layers": 2,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16"}),
    # OLMo-2: float32, no input norms, norms after the attention and the MLP, q/k norms over the whole
    # projection, rope_theta 5e5, untied.
    "olmo2": dict(family="olmo2", dtype=torch.float32, shards=1, merges=24, config={
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 4,
        "num_hidden_layers": 2, "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "rope_scaling": None,
        "max_position_embeddings": 64, "attention_bias": False, "tie_word_embeddings": False,
        "torch_dtype": "float32"}),
    # Gemma 3 (gemma3_text): float32, 3 layers (0 and 2 slide over 4 keys with rotary base 10000,
    # 1 is global with base 1e6: sliding_window_pattern 2), q/k norms (1 + w) per head, scores scaled
    # by query_pre_attn_scalar 24 ^ -1/2, no softcaps, multi-query (1 key/value head), tied.
    "gemma3": dict(family="gemma3_text", dtype=torch.float32, shards=1, merges=24, config={
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 1,
        "head_dim": 16, "num_hidden_layers": 3, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0, "rope_scaling": None, "max_position_embeddings": 64,
        "query_pre_attn_scalar": 24, "sliding_window": 4, "sliding_window_pattern": 2,
        "attn_logit_softcapping": None, "final_logit_softcapping": None, "attention_bias": False,
        "tie_word_embeddings": True, "torch_dtype": "float32"}),
}

# ---------------------------------------------------------------- hooks.safetensors: TransformerLens' workflows

# Runs with one replacing hook: case -> (hook, what, function of the activation).
REPLACED = {
    "mlp_post_zero": ("blocks.0.mlp.hook_post", "replaced by zeros", torch.zeros_like),
    "q_double": ("blocks.1.attn.hook_q", "multiplied by 2 (q before rotary)", lambda t: t * 2),
    "ln1_scale_double": ("blocks.0.ln1.hook_scale", "multiplied by 2 (hook_normalized is then x_c / the new scale)",
                         lambda t: t * 2),
    "scores_half": ("blocks.1.attn.hook_attn_scores",
                    "multiplied by 0.5 (-inf stays -inf); the pattern is the softmax of the replaced scores",
                    lambda t: t * 0.5),
    "resid_mid_half": ("blocks.0.hook_resid_mid", "multiplied by 0.5", lambda t: t * 0.5),
}
# A parallel block has no hook_resid_mid: its attention's output instead.
REPLACED_PARALLEL = {**{k: v for k, v in REPLACED.items() if k != "resid_mid_half"},
                     "attn_out_half": ("blocks.0.hook_attn_out", "multiplied by 0.5", lambda t: t * 0.5)}
# With q/k norms a scaled hook_q is normalized back (all but eps): q shifted instead.
REPLACED_QK_NORM = {**{k: v for k, v in REPLACED.items() if k != "q_double"},
                    "q_plus_half": ("blocks.1.attn.hook_q", "plus 0.5 (q before the q/k norm and rotary)", lambda t: t + 0.5)}
# OLMo-2 has no ln1, and Gemma 3 normalizes a scaled one away (q and k by their norms, v by ln1_post):
# the scale of the norm after the attention instead.
REPLACED_POST_NORMS_ONLY = {**{k: v for k, v in REPLACED_QK_NORM.items() if k != "ln1_scale_double"},
                            "ln1_post_scale_double": ("blocks.0.ln1_post.hook_scale", "multiplied by 2", lambda t: t * 2)}


def copy_in(clean, index):
    """patching.py's patch setters: the corrupted activation with clean[index] copied in."""
    def fn(t):
        t[index] = clean[index]
        return t
    return fn


def folded_view(w, cfg, gpt2):
    """What TransformerLens' default loading (weight_processing.py: fold_ln, center_writing_weights,
    center_unembed, fold_value_biases) makes of the value/output path, per layer: W_O [H, D, E], the
    folded W_V [E, H, D] (the norm's weight folded in, rows per query head), the folded value bias
    b_V' [H, D] (fold_ln first adds ln1.b · W_V to b_V; fold_value_biases then moves b_V'·W_O into b_O)
    and that b_O, plus the final norm's weight and bias and the unembedding rows U [V, E]."""
    layers = []
    if gpt2:
        E, H = cfg["n_embd"], cfg["n_head"]
        D = E // H
        for l in range(cfg["n_layer"]):
            p = f"transformer.h.{l}."
            W_V = w[p + "attn.c_attn.weight"][:, 2 * E:]
            b_V = w[p + "attn.c_attn.bias"][2 * E:] + w[p + "ln_1.bias"] @ W_V
            layers.append(dict(W_O=w[p + "attn.c_proj.weight"].view(H, D, E), b_O=w[p + "attn.c_proj.bias"],
                               W_V=(w[p + "ln_1.weight"][:, None] * W_V).view(E, H, D), b_V=b_V.view(H, D)))
        U, w_f, b_f = w["transformer.wte.weight"], w["transformer.ln_f.weight"], w["transformer.ln_f.bias"]
    else:
        E, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        D = cfg.get("head_dim") or E // H
        for l in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{l}."
            W_V = w[p + "input_layernorm.weight"][:, None] * w[p + "self_attn.v_proj.weight"].T
            b_V = w.get(p + "self_attn.v_proj.bias", torch.zeros(K * D, dtype=torch.float64))
            rep = lambda t: t.repeat_interleave(H // K, dim=-2)  # query head h reads kv head h // (H / K)
            layers.append(dict(W_O=w[p + "self_attn.o_proj.weight"].T.reshape(H, D, E),
                               b_O=w.get(p + "self_attn.o_proj.bias", torch.zeros(E, dtype=torch.float64)),
                               W_V=rep(W_V.view(E, K, D)), b_V=rep(b_V.view(K, D))))
        U = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
        w_f, b_f = w["model.norm.weight"], None
    for t in layers:
        t["b_O_folded"] = t["b_O"] + torch.einsum("hd,hde->e", t["b_V"], t["W_O"])
    return layers, U, w_f, b_f


def family_folded_view(w, cfg):
    """folded_view for gpt_neox / gemma / gemma2 / phi3, as TransformerLens' weight_conversions
    (neox.py, gemma.py, phi3.py) then process_weights make it: NeoX's W_V and b_V from the per-head
    interleaved query_key_value with ln1's weight and bias folded in (b_V' = b_V + ln1.b · W_V); Gemma's
    norms as 1 + w; Phi-3's v rows the third block of qkv_proj; no biases but NeoX's."""
    mt = cfg["model_type"]
    E, H, K, D, _, n_layers = dims(cfg)
    zeros = lambda *s: torch.zeros(*s, dtype=torch.float64)
    rep = lambda t: t.repeat_interleave(H // K, dim=-2)
    layers = []
    for l in range(n_layers):
        if mt == "gpt_neox":
            p = f"gpt_neox.layers.{l}."
            W = w[p + "attention.query_key_value.weight"].view(H, 3, D, E)
            W_V = W[:, 2].permute(2, 0, 1)  # [E, H, D]
            qkv_bias = w.get(p + "attention.query_key_value.bias", zeros(3 * E))
            # (fold_ln adds ln1.b · W_V to b_V even where attention_bias is false and b_V starts at 0)
            b_V = qkv_bias.view(H, 3, D)[:, 2] + torch.einsum("e,ehd->hd", w[p + "input_layernorm.bias"], W_V)
            layers.append(dict(W_O=w[p + "attention.dense.weight"].T.reshape(H, D, E),
                               b_O=w.get(p + "attention.dense.bias", zeros(E)),
                               W_V=w[p + "input_layernorm.weight"][:, None, None] * W_V, b_V=b_V))
            continue
        p = f"model.layers.{l}."
        if mt == "olmo2":  # (no input norm)
            ln1 = torch.ones(E, dtype=torch.float64)
        else:
            ln1 = (1 + w[p + "input_layernorm.weight"]) if mt in GEMMAS else w[p + "input_layernorm.weight"]
        v = w[p + "self_attn.qkv_proj.weight"][(H + K) * D:] if mt == "phi3" else w[p + "self_attn.v_proj.weight"]
        layers.append(dict(W_O=w[p + "self_attn.o_proj.weight"].T.reshape(H, D, E), b_O=zeros(E),
                           W_V=rep((ln1[:, None] * v.T).view(E, K, D)), b_V=zeros(H, D)))
    if mt == "gpt_neox":
        w_f, b_f = w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"]
    else:
        w_f, b_f = (1 + w["model.norm.weight"]) if mt in GEMMAS else w["model.norm.weight"], None
    for t in layers:
        t["b_O_folded"] = t["b_O"] + torch.einsum("hd,hde->e", t["b_V"], t["W_O"])
    return layers, family_unembedding(w, cfg), w_f, b_f


def hook_values(w, cfg, family, forward, ids, other_ids):
    """hooks.safetensors and hooks.json: the clean run's hooks, the replaced-hook runs, activation
    patching, direct logit attribution and head detection, all from this reference's own hooks."""
    gpt2, new = family == "gpt2", family in NEW_FAMILIES
    n_layers = cfg["n_layer"] if gpt2 else cfg["num_hidden_layers"]
    n_heads = cfg["n_head"] if gpt2 else cfg["num_attention_heads"]
    eps = dims(cfg)[4] if new else cfg["layer_norm_epsilon"] if gpt2 else cfg["rms_norm_eps"]
    layer_norm = gpt2 or family == "gpt_neox"
    replaced = (REPLACED_PARALLEL if family == "gpt_neox" and cfg["use_parallel_residual"]
                else REPLACED_POST_NORMS_ONLY if family in ("olmo2", "gemma3_text")
                else REPLACED_QK_NORM if family == "qwen3" else REPLACED)
    P, last = len(ids), len(ids) - 1
    logits, clean, _ = forward(w, cfg, ids)
    corrupted_logits, _, _ = forward(w, cfg, other_ids)
    cache = clean.cache
    out = dict(cache)
    names = clean.names
    assert len(names) == len(set(names))

    for case, (hook, _, fn) in replaced.items():
        out[f"replaced.{case}"] = forward(w, cfg, ids, {hook: fn})[0][None]

    # The answer and the wrong token, and the logit difference at the last position.
    answer = int(logits[-1].argmax())
    wrong = int(corrupted_logits[-1].argmax())
    if wrong == answer:
        wrong = int(logits[-1].topk(2).indices[1])
    ld = lambda lg: float(lg[-1, answer] - lg[-1, wrong])
    ld_clean, ld_corrupted = ld(logits), ld(corrupted_logits)
    assert abs(ld_clean - ld_corrupted) > 0.1, (ld_clean, ld_corrupted)
    metric = lambda lg: (ld(lg) - ld_corrupted) / (ld_clean - ld_corrupted)

    # Activation patching (patching.py generic_activation_patch): the corrupted run, one clean slice copied in.
    patch = lambda hook, index: metric(forward(w, cfg, other_ids, {hook: copy_in(cache[hook], index)})[0])
    for key, hook in (("resid_pre", "hook_resid_pre"), ("attn_out", "hook_attn_out"), ("mlp_out", "hook_mlp_out")):
        out[f"patching.{key}"] = torch.tensor([[patch(f"blocks.{l}.{hook}", (slice(None), pos)) for pos in range(P)]
                                               for l in range(n_layers)])
    z = lambda l: f"blocks.{l}.attn.hook_z"
    out["patching.head_out"] = torch.tensor([[patch(z(l), (slice(None), slice(None), h)) for h in range(n_heads)]
                                             for l in range(n_layers)])
    out["patching.head_out_by_pos"] = torch.tensor([[[patch(z(l), (slice(None), pos, h)) for h in range(n_heads)]
                                                     for pos in range(P)] for l in range(n_layers)])

    # Direct logit attribution at the last position along answer - wrong, as TL's numbers on its default
    # loading: logit_attrs / apply_ln_to_stack (centre each component over d for LN, divide by the cached
    # ln_final.hook_scale), the final norm's weight folded into the direction, b_V' moved out of the heads.
    layers, U, w_f, b_f = family_folded_view(w, cfg) if new else folded_view(w, cfg, gpt2)
    direction = w_f * (U[answer] - U[wrong])
    scale = cache["ln_final.hook_scale"][0, last, 0]
    centre = (lambda v: v - v.mean(-1, keepdim=True)) if layer_norm else (lambda v: v)
    attribute = lambda v: centre(v) / scale @ direction
    heads = []
    for l, t in enumerate(layers):
        result = cache[f"blocks.{l}.attn.hook_result"][0]  # [P, H, E]
        heads.append(result - torch.einsum("hd,hde->he", t["b_V"], t["W_O"]))
        # The folded view's head results (v from the folded W_V, no bias) are the same thing.
        normalized = cache[f"blocks.{l}.hook_resid_pre" if cfg.get("model_type") == "olmo2" else f"blocks.{l}.ln1.hook_normalized"]
        v = torch.einsum("pe,ehd->hpd", normalized[0], t["W_V"])
        folded = torch.einsum("hqk,hkd,hde->qhe", cache[f"blocks.{l}.attn.hook_pattern"][0], v, t["W_O"])
        assert torch.allclose(folded, heads[-1], atol=1e-10), (l, (folded - heads[-1]).abs().max())
    out["dla.heads"] = torch.stack([attribute(hr[last]) for hr in heads])  # [L, H]
    out["dla.mlps"] = torch.stack([attribute(cache[f"blocks.{l}.hook_mlp_out"][0, last]) for l in range(n_layers)])
    # accumulated_resid(layer=None, apply_ln=True): layer == n_layers, so recompute_ln: each item goes through
    # ln_final (LayerNormPre / RMSNormPre after fold_ln) with its own statistics, then · direction.
    own_norm = lambda v: centre(v) / (centre(v).pow(2).mean(-1, keepdim=True) + eps).sqrt()
    stack = [cache[f"blocks.{l}.hook_resid_pre"][0, last] for l in range(n_layers)]
    stack.append(cache[f"blocks.{n_layers - 1}.hook_resid_post"][0, last])
    out["dla.accumulated"] = torch.stack([own_norm(v) @ direction for v in stack])  # [L + 1]
    # Self-check on the folded view: embeddings + every head + every folded b_O + every MLP is the final
    # residual, and their attributions add up to the logit difference less the final norm bias's term.
    # (Not with Gemma 2's norms after the attention, nor through its capped logits: TransformerLens'
    # numbers read the heads' results before the post-norm, and the direction before the cap.)
    sums = family not in POST_NORMED
    parts = [cache["hook_embed"][0, last]] + ([cache["hook_pos_embed"][0, last]] if gpt2 else [])
    parts += [t["b_O_folded"] for t in layers] + [head for hr in heads for head in hr[last]]
    parts += [cache[f"blocks.{l}.hook_mlp_out"][0, last] for l in range(n_layers)]
    final = cache[f"blocks.{n_layers - 1}.hook_resid_post"][0, last]
    assert not sums or torch.allclose(sum(parts), final, atol=1e-10), (sum(parts) - final).abs().max()
    bias_term = float((U[answer] - U[wrong]) @ b_f) if layer_norm else 0.0
    total = sum(float(attribute(v)) for v in parts)
    assert not sums or abs(total - (ld_clean - bias_term)) < 1e-9, (total, ld_clean, bias_term)
    assert not sums or abs(float(out["dla.accumulated"][-1]) - (ld_clean - bias_term)) < 1e-9

    # Head detection (head_detector.py detect_head, error_measure="mul", no exclusions): Σ(A∘P) / ΣA.
    tok = torch.tensor(ids)
    duplicate = torch.tril((tok[:, None] == tok[None, :]).double(), diagonal=-1)  # k < q, tok[k] == tok[q]
    detection = {
        "previous_token": torch.diag(torch.ones(P - 1, dtype=torch.float64), -1),  # k == q - 1
        "duplicate_token": duplicate,
        "induction": torch.tril(torch.cat((torch.zeros(P, 1, dtype=torch.float64), duplicate[:, :-1]), 1)),
    }
    for key, pattern in detection.items():
        out[f"scores.{key}"] = torch.tensor([[float((A * pattern).sum() / A.sum()) for A in
                                              cache[f"blocks.{l}.attn.hook_pattern"][0]] for l in range(n_layers)])

    info = {"answer": answer, "wrong": wrong, "position": last,
            "logitDiff": {"clean": ld_clean, "corrupted": ld_corrupted}, "hookNames": names,
            "replaced": {case: {"hook": hook, "what": what} for case, (hook, what, _) in replaced.items()}}
    return {k: v.to(torch.float32) for k, v in out.items()}, info


# The edits checked in expected.safetensors, on hook_z: (layer, head) ablated, and patched from OTHER_TEXT's run.
ABLATE = (1, 2)
PATCH = (0, 1)


def set_head(head, value):
    """A hook_z [1, L, H, D] replacement: one head's z set to `value` (0 ablates it)."""
    def fn(z):
        z[0, :, head] = value
        return z
    return fn


def make(name, spec, seed):
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        os.remove(os.path.join(folder, old))
    family = spec["family"]
    gpt2, new = family == "gpt2", family in NEW_FAMILIES
    # Pythia's tokenizer is GPT-2's kind (byte-level BPE); Gemma's and Phi-3's Llama's (SentencePiece BPE, byte fallback).
    byte_level = gpt2 or family == "gpt_neox"
    tokenizer, encode, vocab_size, special_ids = (gpt2_tokenizer if byte_level else llama_tokenizer)(spec["merges"])
    cfg = dict(spec["config"], vocab_size=vocab_size, **special_ids)
    gen = torch.Generator().manual_seed(seed)
    buffers = None
    if new:
        weights, buffers = family_weights(gen, cfg)
        if not spec.get("old_buffers", True):
            buffers = None
    else:
        weights = (gpt2_weights if gpt2 else llama_weights)(gen, cfg)
    stored = save_weights(folder, weights, spec["dtype"], spec["shards"], buffers)
    # The reference runs on the weights as stored (rounded to 16 bits where they are), in float64.
    w = {k: v.to(torch.float64) for k, v in stored.items()}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(sorted(cfg.items())), f, indent=2)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)

    forward = family_forward if new else gpt2_forward if gpt2 else llama_forward
    ids, other_ids = encode(TEXT), encode(OTHER_TEXT)
    assert len(ids) == len(other_ids), (name, len(ids), len(other_ids))
    logits, clean, lens = forward(w, cfg, ids)
    _, other, _ = forward(w, cfg, other_ids)
    z = lambda l: f"blocks.{l}.attn.hook_z"
    ablated, _, _ = forward(w, cfg, ids, {z(ABLATE[0]): set_head(ABLATE[1], 0)})
    patched, _, _ = forward(w, cfg, ids, {z(PATCH[0]): set_head(PATCH[1], other.cache[z(PATCH[0])][0, :, PATCH[1]])})
    f32 = lambda t: t.to(torch.float32)
    expected = {"logits": f32(logits), "lens": f32(torch.stack(lens)), "ablated_logits": f32(ablated),
                "patched_logits": f32(patched)}
    for l in range(len(lens)):
        expected[f"pattern.{l}"] = f32(clean.cache[f"blocks.{l}.attn.hook_pattern"][0])
    write_safetensors(os.path.join(folder, "expected.safetensors"), expected)
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump({"text": TEXT, "ids": ids, "otherText": OTHER_TEXT, "otherIds": other_ids,
                   "ablate": {"layer": ABLATE[0], "head": ABLATE[1]},
                   "patch": {"layer": PATCH[0], "head": PATCH[1]},
                   "dtype": str(spec["dtype"]).replace("torch.", ""), "family": spec["family"]}, f, indent=2)

    # Computed after everything above, from the same stored weights (the random stream is untouched).
    hooks, info = hook_values(w, cfg, family, forward, ids, other_ids)
    write_safetensors(os.path.join(folder, "hooks.safetensors"), hooks)
    with open(os.path.join(folder, "hooks.json"), "w") as f:
        json.dump(info, f, indent=2)
    print(f"{name}: vocab {vocab_size}, ids {ids}, top next token {int(logits[-1].argmax())}, "
          f"answer {info['answer']} wrong {info['wrong']}")


# ---------------------------------------------------------------- encoders (issue 48): BERT

# A WordPiece vocabulary as BERT's tokenizer.json holds it: the special tokens first ([PAD] 0 as
# bert-base-uncased's pad_token_id), then whole words, single characters and "##" continuations.
BERT_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BERT_WORDS = ["the", "cat", "sat", "on", "mat", "dog", "log", "met", "a", "hill", "then", "ran", "at", "and", "other"]
BERT_TEXT = "the cats sat on the [MASK]. the dog ran"
# The padded run: BERT_TEXT's ids then three [PAD]s, attention_mask 0 there; token types 1 from the middle.
BERT_PADS = 3


def bert_vocab():
    chars = list("abcdefghijklmnopqrstuvwxyz.,")
    tokens = BERT_SPECIAL + BERT_WORDS + chars + ["##" + c for c in chars if c.isalpha()]
    return {t: i for i, t in enumerate(tokens)}


def bert_tokenizer(vocab):
    """tokenizer.json as transformers' BertTokenizerFast saves it (lowercasing BertNormalizer,
    BertPreTokenizer, WordPiece with "##", [CLS] A [SEP] / [CLS] A [SEP] B [SEP] template)."""
    special = lambda t: {"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": False, "special": True}
    sp = lambda t, type_id=0: {"SpecialToken": {"id": t, "type_id": type_id}}
    seq = lambda s, type_id=0: {"Sequence": {"id": s, "type_id": type_id}}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special(t) for t in BERT_SPECIAL],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [sp("[CLS]"), seq("A"), sp("[SEP]")],
                           "pair": [sp("[CLS]"), seq("A"), sp("[SEP]"), seq("B", 1), sp("[SEP]", 1)],
                           "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }


def wordpiece_encode(vocab, text):
    """[CLS] + greedy longest-match-first WordPiece of each lower-cased word / punctuation + [SEP];
    "[MASK]" stays one token (an added token)."""
    ids = [vocab["[CLS]"]]
    for part in re.findall(r"\[MASK\]|\w+|[^\w\s]", text.lower().replace("[mask]", "[MASK]")):
        if part in vocab:
            ids.append(vocab[part])
            continue
        start = 0
        while start < len(part):
            end = len(part)
            while end > start and (("##" if start else "") + part[start:end]) not in vocab:
                end -= 1
            assert end > start, part
            ids.append(vocab[("##" if start else "") + part[start:end]])
            start = end
    return ids + [vocab["[SEP]"]]


def bert_weights(gen, cfg):
    """Random BertForMaskedLM weights under Hugging Face's keys, LayerNorms named gamma / beta as in
    bert-base-uncased's files; the pooler and the next-sentence head (BertForPreTraining) as well,
    which the masked-LM forward does not read. The decoder is tied to the word embeddings (no
    cls.predictions.decoder.weight in the file)."""
    E, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    r = lambda *shape, std=0.3: torch.randn(*shape, generator=gen, dtype=torch.float64) * std
    w = {}
    def ln(p):
        w[p + ".gamma"], w[p + ".beta"] = 1 + r(E, std=0.1), r(E, std=0.1)
    w["bert.embeddings.word_embeddings.weight"] = r(V, E, std=0.5)
    w["bert.embeddings.position_embeddings.weight"] = r(cfg["max_position_embeddings"], E, std=0.3)
    w["bert.embeddings.token_type_embeddings.weight"] = r(cfg["type_vocab_size"], E, std=0.3)
    ln("bert.embeddings.LayerNorm")
    for l in range(cfg["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        for part in ("query", "key", "value"):
            w[p + f"attention.self.{part}.weight"], w[p + f"attention.self.{part}.bias"] = r(E, E), r(E, std=0.1)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = r(E, E), r(E, std=0.1)
        ln(p + "attention.output.LayerNorm")
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r(I, E), r(I, std=0.1)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(E, I, std=0.2), r(E, std=0.1)
        ln(p + "output.LayerNorm")
    w["bert.pooler.dense.weight"], w["bert.pooler.dense.bias"] = r(E, E), r(E, std=0.1)
    w["cls.seq_relationship.weight"], w["cls.seq_relationship.bias"] = r(2, E), r(2, std=0.1)
    w["cls.predictions.transform.dense.weight"], w["cls.predictions.transform.dense.bias"] = r(E, E), r(E, std=0.1)
    ln("cls.predictions.transform.LayerNorm")
    w["cls.predictions.bias"] = r(V, std=0.1)
    return w


def bert_forward(w, cfg, ids, token_types=None, mask=None, hooks=None, positions=None):
    """modeling_bert.py's BertForMaskedLM in float64, hooked under TransformerLens' HookedEncoder names
    (components/bert_embed.py, bert_block.py, bert_mlm_head.py): embeddings word + position + token type
    then LayerNorm (hook_full_embed); post-LN blocks: resid_mid = resid_pre + attn, ln1 (attention.output
    .LayerNorm), resid_post = ln1 out + mlp, ln2 (output.LayerNorm) -> hook_normalized_resid_post; the
    keys where attention_mask is 0 masked with -inf (hook_attn_scores); exact erf GELU; the masked-LM head
    (transform dense, GELU, LayerNorm, tied decoder + cls.predictions.bias)."""
    hk = Hooks(hooks)
    E, H, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    D, L = E // H, len(ids)
    tok = torch.tensor(ids)
    tt = torch.tensor(token_types if token_types is not None else [0] * L)
    keep = torch.tensor(mask if mask is not None else [1] * L).bool()
    gelu = lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    def ln(x, p, name):
        xc = x - x.mean(-1, keepdim=True)
        scale = hk(name + ".hook_scale", (xc.pow(2).mean(-1, keepdim=True) + eps).sqrt())
        return hk(name + ".hook_normalized", xc / scale) * w[p + ".gamma"] + w[p + ".beta"]

    lin = lambda x, p: x @ w[p + ".weight"].T + w[p + ".bias"]
    x = hk("embed.hook_embed", w["bert.embeddings.word_embeddings.weight"][tok])
    pos = torch.tensor(positions) if positions is not None else torch.arange(L)
    x = x + hk("embed.hook_pos_embed", w["bert.embeddings.position_embeddings.weight"][pos])
    x = x + hk("embed.hook_token_type_embed", w["bert.embeddings.token_type_embeddings.weight"][tt])
    x = hk("hook_full_embed", ln(x, "bert.embeddings.LayerNorm", "embed.ln"))
    heads = lambda t: t.view(L, H, D)
    for l in range(cfg["num_hidden_layers"]):
        p, b = f"bert.encoder.layer.{l}.", f"blocks.{l}."
        x = hk(b + "hook_resid_pre", x)
        q, k, v = (hk(b + f"attn.hook_{n}", heads(lin(x, p + f"attention.self.{part}"))).transpose(0, 1)
                   for n, part in (("q", "query"), ("k", "key"), ("v", "value")))
        scores = (q @ k.transpose(1, 2)) / math.sqrt(D)
        scores = hk(b + "attn.hook_attn_scores", scores.masked_fill(~keep[None, None, :], -math.inf))
        pattern = hk(b + "attn.hook_pattern", torch.softmax(scores, dim=-1))
        z = hk(b + "attn.hook_z", pattern @ v, lambda t: t.transpose(0, 1)[None], lambda t: t[0].transpose(0, 1))
        W_O = w[p + "attention.output.dense.weight"].T.reshape(H, D, E)
        plain = lin(z.transpose(0, 1).reshape(L, E), p + "attention.output.dense")
        attn_out = attention_out(z, W_O, w[p + "attention.output.dense.bias"], plain, hk, b)
        resid_mid = hk(b + "hook_resid_mid", x + attn_out)
        normalized = ln(resid_mid, p + "attention.output.LayerNorm", b + "ln1")
        pre = hk(b + "mlp.hook_pre", lin(normalized, p + "intermediate.dense"))
        post = hk(b + "mlp.hook_post", gelu(pre))
        mlp_out = hk(b + "hook_mlp_out", lin(post, p + "output.dense"))
        resid_post = hk(b + "hook_resid_post", normalized + mlp_out)
        x = hk(b + "hook_normalized_resid_post", ln(resid_post, p + "output.LayerNorm", b + "ln2"))
    h = ln(gelu(lin(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm", "mlm_head.ln")
    logits = h @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
    return logits, hk, x


# ---------------------------------------------------------------- RoBERTa

ROBERTA_SPECIAL = ["<s>", "<pad>", "</s>", "<unk>"]  # ids 0-3 as roberta-base's; <mask> is the last id
ROBERTA_TEXT = "the cats sat on the <mask>. the dog ran"


def roberta_tokenizer(merge_count):
    """tokenizer.json as RobertaTokenizerFast saves it: GPT-2's byte-level BPE after <s>, <pad>, </s>,
    <unk>, then <mask> (an added token that strips the space before it), and RobertaProcessing's
    <s> A </s>. Returns it, the encoder of a text (the template's tokens added) and the vocab."""
    byte_chars = bytes_to_unicode()
    to_chars = lambda text: "".join(byte_chars[b] for b in text.encode("utf-8"))
    merges = learn_merges([to_chars(w) for w in GPT2_SPLIT.findall(CORPUS)], merge_count)
    vocab = {t: i for i, t in enumerate(ROBERTA_SPECIAL)}
    for c in (byte_chars[b] for b in range(256)):
        vocab.setdefault(c, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<mask>"] = len(vocab)
    ranks = {m: r for r, m in enumerate(merges)}
    words = lambda text: [vocab[t] for w in GPT2_SPLIT.findall(text) for t in apply_merges(to_chars(w), ranks)]

    def encode(text):
        parts = text.split("<mask>")
        ids = [vocab["<s>"]]
        for i, part in enumerate(parts):
            ids += words(part.rstrip(" ") if i < len(parts) - 1 else part)  # (<mask> strips the space on its left)
            if i < len(parts) - 1:
                ids.append(vocab["<mask>"])
        return ids + [vocab["</s>"]]

    added = lambda t, lstrip=False: {"id": vocab[t], "content": t, "single_word": False, "lstrip": lstrip,
                                      "rstrip": False, "normalized": t != "<mask>", "special": True}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(t) for t in ROBERTA_SPECIAL] + [added("<mask>", lstrip=True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", vocab["</s>"]], "cls": ["<s>", vocab["<s>"]],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    return tokenizer, encode, vocab


# RobertaForMaskedLM's keys for BERT's (the forward reads BERT's): roberta. for bert., LayerNorms
# named weight / bias, the head lm_head.dense / layer_norm / bias (decoder tied to the embeddings).
ROBERTA_KEYS = [(r"^bert\.", "roberta."), (r"\.gamma$", ".weight"), (r"\.beta$", ".bias"),
                (r"^cls\.predictions\.transform\.dense", "lm_head.dense"),
                (r"^cls\.predictions\.transform\.LayerNorm", "lm_head.layer_norm"),
                (r"^cls\.predictions\.bias$", "lm_head.bias")]


def roberta_key(bert_key):
    for pattern, to in ROBERTA_KEYS:
        bert_key = re.sub(pattern, to, bert_key)
    return bert_key


def roberta_positions(ids, pad):
    """modeling_roberta.create_position_ids_from_input_ids: padding_idx + the count of non-pad tokens
    up to and including each one; padding_idx itself for a pad."""
    keep = [int(i != pad) for i in ids]
    return [pad + sum(keep[:j + 1]) * keep[j] for j in range(len(ids))]


def make_roberta(name, spec, seed):
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        os.remove(os.path.join(folder, old))
    tokenizer, encode, vocab = roberta_tokenizer(spec["merges"])
    pad = vocab["<pad>"]
    cfg = dict(spec["config"], vocab_size=len(vocab), pad_token_id=pad, bos_token_id=vocab["<s>"], eos_token_id=vocab["</s>"])
    gen = torch.Generator().manual_seed(seed)
    bert_w = bert_weights(gen, cfg)
    for key in ("bert.pooler.dense.weight", "bert.pooler.dense.bias", "cls.seq_relationship.weight", "cls.seq_relationship.bias"):
        del bert_w[key]  # (RobertaForMaskedLM has no pooler and no next-sentence head)
    stored = save_weights(folder, {roberta_key(k): v for k, v in bert_w.items()}, spec["dtype"], 1)
    inverse = {roberta_key(k): k for k in bert_w}
    w = {inverse[k]: v.to(torch.float64) for k, v in stored.items()}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(sorted(cfg.items())), f, indent=2)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
    ids = encode(ROBERTA_TEXT)
    logits, clean, _ = bert_forward(w, cfg, ids, positions=roberta_positions(ids, pad))
    out = {"logits": logits[None], **clean.cache}
    padded_ids = ids + [pad] * BERT_PADS
    mask = [1] * len(ids) + [0] * BERT_PADS
    padded_logits, padded, _ = bert_forward(w, cfg, padded_ids, mask=mask, positions=roberta_positions(padded_ids, pad))
    out["padded.logits"] = padded_logits[None]
    out.update({f"padded.{k}": v for k, v in padded.cache.items()})
    write_safetensors(os.path.join(folder, "hooks.safetensors"), {k: v.to(torch.float32) for k, v in out.items()})
    mask_position = ids.index(vocab["<mask>"])
    with open(os.path.join(folder, "hooks.json"), "w") as f:
        json.dump({"text": ROBERTA_TEXT, "ids": ids, "hookNames": clean.names, "maskPosition": mask_position,
                   "fill": int(logits[mask_position].argmax()),
                   "padded": {"ids": padded_ids, "attentionMask": mask, "tokenTypeIds": [0] * len(padded_ids)}}, f, indent=2)
    print(f"{name}: vocab {len(vocab)}, ids {ids}, <mask> at {mask_position} -> {int(logits[mask_position].argmax())}")


ROBERTAS = {
    # RoBERTa (RobertaForMaskedLM): float32, 2 layers, 4 heads of 8, byte-level BPE, one token type,
    # positions from padding_idx + 1 (the table holds padding_idx + 1 + the longest text's rows).
    "roberta": dict(dtype=torch.float32, merges=43, config={
        "architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "hidden_act": "gelu",
        "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
        "max_position_embeddings": 40, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
        "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02, "classifier_dropout": None, "use_cache": True, "torch_dtype": "float32"}),
}


ENCODERS = {
    # BERT (BertForMaskedLM): float32, 2 layers, 4 heads of 8, LayerNorms named gamma / beta, tied decoder.
    "bert": dict(dtype=torch.float32, config={
        "architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_act": "gelu",
        "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
        "max_position_embeddings": 64, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0,
        "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02, "classifier_dropout": None, "use_cache": True, "torch_dtype": "float32"}),
}


def make_encoder(name, spec, seed):
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        os.remove(os.path.join(folder, old))
    vocab = bert_vocab()
    cfg = dict(spec["config"], vocab_size=len(vocab))
    gen = torch.Generator().manual_seed(seed)
    stored = save_weights(folder, bert_weights(gen, cfg), spec["dtype"], 1)
    w = {k: v.to(torch.float64) for k, v in stored.items()}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(sorted(cfg.items())), f, indent=2)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(bert_tokenizer(vocab), f, ensure_ascii=False, indent=1)
    ids = wordpiece_encode(vocab, BERT_TEXT)
    logits, clean, _ = bert_forward(w, cfg, ids)
    out = {"logits": logits[None], **clean.cache}
    padded_ids = ids + [vocab["[PAD]"]] * BERT_PADS
    mask = [1] * len(ids) + [0] * BERT_PADS
    token_types = [0] * (len(ids) // 2) + [1] * (len(padded_ids) - len(ids) // 2)
    padded_logits, padded, _ = bert_forward(w, cfg, padded_ids, token_types, mask)
    out["padded.logits"] = padded_logits[None]
    out.update({f"padded.{k}": v for k, v in padded.cache.items()})
    write_safetensors(os.path.join(folder, "hooks.safetensors"), {k: v.to(torch.float32) for k, v in out.items()})
    mask_position = ids.index(vocab["[MASK]"])
    with open(os.path.join(folder, "hooks.json"), "w") as f:
        json.dump({"text": BERT_TEXT, "ids": ids, "hookNames": clean.names, "maskPosition": mask_position,
                   "fill": int(logits[mask_position].argmax()),
                   "padded": {"ids": padded_ids, "attentionMask": mask, "tokenTypeIds": token_types}}, f, indent=2)
    print(f"{name}: vocab {len(vocab)}, ids {ids}, [MASK] at {mask_position} -> {int(logits[mask_position].argmax())}")


def main():
    for seed, (name, spec) in enumerate(CHECKPOINTS.items()):
        make(name, spec, 43 + seed)
    for seed, (name, spec) in enumerate(ENCODERS.items()):
        make_encoder(name, spec, 143 + seed)
    for seed, (name, spec) in enumerate(ROBERTAS.items()):
        make_roberta(name, spec, 243 + seed)


if __name__ == "__main__":
    main()
