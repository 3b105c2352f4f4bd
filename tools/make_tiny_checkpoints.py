#!/usr/bin/env python3
"""Writes tiny GPT-2- and Llama-family checkpoints in Hugging Face's file layouts, with expected values.

For the "Your model" mode (issue 43) and its tests: each checkpoint is a folder as `save_pretrained`
writes it (config.json, model.safetensors or model.safetensors.index.json with its shards,
tokenizer.json), with random weights, 2-3 layers and a vocabulary of about 300 tokens, plus
expected.safetensors / expected.json: the logits, every layer's attention pattern, the logit lens,
one head ablated and one head patched, from a float64 forward written below in torch from each
architecture's published definition (Hugging Face's modeling_gpt2.py / modeling_llama.py /
modeling_mistral.py / modeling_qwen2.py). No `transformers` or `tokenizers` library is needed: the
tokenizer.json files and the token ids of the test texts come from the small BPE below.

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
                      torch.bfloat16: ("BF16", torch.int16)}


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


def save_weights(folder, tensors, dtype, shards):
    tensors = {k: v.to(dtype) for k, v in tensors.items()}
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

def attention(q, k, v, causal_window=None):
    """q [H, L, D], k/v [H, L, D]: causal softmax(q kᵀ / sqrt(D)) v; a window W keeps keys i-W+1..i."""
    L, D = q.shape[1], q.shape[2]
    scores = q @ k.transpose(1, 2) / math.sqrt(D)
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    blocked = j > i
    if causal_window is not None:
        blocked |= j <= i - causal_window
    pattern = torch.softmax(scores.masked_fill(blocked, -math.inf), dim=-1)
    return pattern, pattern @ v  # z [H, L, D]


def edit_z(z, layer, edits):
    """Head ablation (zeros) or patching (another run's z) of one layer's z [H, L, D], as TransformerLens' hook_z."""
    for (l, h), replacement in edits.items():
        if l == layer:
            z = z.clone()
            z[h] = 0 if replacement is None else replacement
    return z


def gpt2_forward(w, cfg, ids, edits=None):
    """modeling_gpt2.py: pre-LayerNorm blocks, Conv1D weights [in, out], GELU-tanh ("gelu_new"), tied lm_head."""
    E, H, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    D = E // H
    L = len(ids)
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (E,), w[p + ".weight"], w[p + ".bias"], eps)
    conv1d = lambda x, p: x @ w[p + ".weight"] + w[p + ".bias"]
    gelu = lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:L]
    patterns, zs, residuals = [], [], []
    for l in range(cfg["n_layer"]):
        p = f"transformer.h.{l}."
        q, k, v = conv1d(ln(x, p + "ln_1"), p + "attn.c_attn").split(E, dim=-1)
        heads = lambda t: t.view(L, H, D).transpose(0, 1)
        pattern, z = attention(heads(q), heads(k), heads(v))
        z = edit_z(z, l, edits or {})
        patterns.append(pattern)
        zs.append(z)
        x = x + conv1d(z.transpose(0, 1).reshape(L, E), p + "attn.c_proj")
        x = x + conv1d(gelu(conv1d(ln(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
        residuals.append(x)
    final = lambda r: ln(r, "transformer.ln_f") @ w["transformer.wte.weight"].T
    return final(x), patterns, zs, [final(r[-1]) for r in residuals]


def llama_forward(w, cfg, ids, edits=None):
    """modeling_llama.py (and Mistral's sliding window, Qwen2's q/k/v biases): RMSNorm, rotary with
    rotate_half, grouped-query heads (repeat_kv), SwiGLU MLP, lm_head or the tied embedding."""
    E, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or E // H
    eps, theta, L = cfg["rms_norm_eps"], cfg["rope_theta"], len(ids)
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) else None

    def rms(x, p):
        return w[p + ".weight"] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def linear(x, p):
        return x @ w[p + ".weight"].T + (w[p + ".bias"] if p + ".bias" in w else 0)

    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.outer(torch.arange(L, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    rotate_half = lambda t: torch.cat((-t[..., D // 2:], t[..., :D // 2]), dim=-1)
    rope = lambda t: t * cos + rotate_half(t) * sin
    x = w["model.embed_tokens.weight"][ids]
    patterns, zs, residuals = [], [], []
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, p + "input_layernorm")
        q = linear(h, p + "self_attn.q_proj").view(L, H, D).transpose(0, 1)
        k = linear(h, p + "self_attn.k_proj").view(L, Hkv, D).transpose(0, 1)
        v = linear(h, p + "self_attn.v_proj").view(L, Hkv, D).transpose(0, 1)
        q, k = rope(q), rope(k)
        k, v = (t.repeat_interleave(H // Hkv, dim=0) for t in (k, v))
        pattern, z = attention(q, k, v, window)
        z = edit_z(z, l, edits or {})
        patterns.append(pattern)
        zs.append(z)
        x = x + linear(z.transpose(0, 1).reshape(L, H * D), p + "self_attn.o_proj")
        h = rms(x, p + "post_attention_layernorm")
        x = x + linear(torch.nn.functional.silu(linear(h, p + "mlp.gate_proj")) * linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        residuals.append(x)
    unembed = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    final = lambda r: rms(r, "model.norm") @ unembed.T
    return final(x), patterns, zs, [final(r[-1]) for r in residuals]


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
}

# The edits checked: (layer, head) -> None (ablate) or "other" (patch from OTHER_TEXT's run).
ABLATE = (1, 2)
PATCH = (0, 1)


def make(name, spec, seed):
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        os.remove(os.path.join(folder, old))
    gpt2 = spec["family"] == "gpt2"
    tokenizer, encode, vocab_size, special_ids = (gpt2_tokenizer if gpt2 else llama_tokenizer)(spec["merges"])
    cfg = dict(spec["config"], vocab_size=vocab_size, **special_ids)
    gen = torch.Generator().manual_seed(seed)
    weights = (gpt2_weights if gpt2 else llama_weights)(gen, cfg)
    stored = save_weights(folder, weights, spec["dtype"], spec["shards"])
    # The reference runs on the weights as stored (rounded to 16 bits where they are), in float64.
    w = {k: v.to(torch.float64) for k, v in stored.items()}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(sorted(cfg.items())), f, indent=2)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)

    forward = gpt2_forward if gpt2 else llama_forward
    ids, other_ids = encode(TEXT), encode(OTHER_TEXT)
    assert len(ids) == len(other_ids), (name, len(ids), len(other_ids))
    logits, patterns, _, lens = forward(w, cfg, ids)
    _, _, other_zs, _ = forward(w, cfg, other_ids)
    ablated, _, _, _ = forward(w, cfg, ids, {ABLATE: None})
    patched, _, _, _ = forward(w, cfg, ids, {PATCH: other_zs[PATCH[0]][PATCH[1]]})
    f32 = lambda t: t.to(torch.float32)
    expected = {"logits": f32(logits), "lens": f32(torch.stack(lens)), "ablated_logits": f32(ablated),
                "patched_logits": f32(patched)}
    for l, pattern in enumerate(patterns):
        expected[f"pattern.{l}"] = f32(pattern)
    write_safetensors(os.path.join(folder, "expected.safetensors"), expected)
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump({"text": TEXT, "ids": ids, "otherText": OTHER_TEXT, "otherIds": other_ids,
                   "ablate": {"layer": ABLATE[0], "head": ABLATE[1]},
                   "patch": {"layer": PATCH[0], "head": PATCH[1]},
                   "dtype": str(spec["dtype"]).replace("torch.", ""), "family": spec["family"]}, f, indent=2)
    print(f"{name}: vocab {vocab_size}, ids {ids}, top next token {int(logits[-1].argmax())}")


def main():
    for seed, (name, spec) in enumerate(CHECKPOINTS.items()):
        make(name, spec, 43 + seed)


if __name__ == "__main__":
    main()
