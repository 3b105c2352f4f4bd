#!/usr/bin/env python3
"""A Llama-architecture Hugging Face checkpoint folder (config.json, model.safetensors, float32) as
an ONNX decoder with a KV cache, the interface transformers.js and onnxruntime-web users run
(../shared/WHOLE-MODEL-PEERS.md §3): inputs input_ids [1, seq], attention_mask [1, past + seq],
position_ids [1, seq] (int64) and past_key_values.{i}.key / .value [1, Hkv, past, D]; outputs
logits [1, seq, V] and present.{i}.key / .value [1, Hkv, past + seq, D]. The forward is written
here from modeling_llama.py (RMSNorm, rotate_half rotary at position_ids, grouped-query heads,
SwiGLU), so transformers is not needed; torch.onnx.export (TorchScript, opset 17) traces it with a
non-empty past, every length symbolic; <out>.json beside it holds the cache's static sizes
(layers, numKvHeads, headDim). For bench/whole-model-peers.mjs, on random weights.

    /usr/bin/python3 tools/export_onnx_decoder.py <checkpoint folder> <out.onnx>
"""
import json
import math
import os
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    """{key: tensor} of a .safetensors file (its JSON header, then the little-endian data)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        start, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[start:end]), dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        out[key] = t.float()
    return out


class LlamaDecoder(torch.nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        self.cfg, self.w = cfg, w
        self.E, self.H = cfg["hidden_size"], cfg["num_attention_heads"]
        self.K = cfg.get("num_key_value_heads") or self.H
        self.D = cfg.get("head_dim") or self.E // self.H
        self.eps, self.layers = cfg["rms_norm_eps"], cfg["num_hidden_layers"]
        theta = cfg.get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.D, 2, dtype=torch.float32) / self.D))
        for key, t in w.items():  # (as buffers: the exported graph holds them as initializers)
            self.register_buffer(key.replace(".", "_"), t)

    def p(self, key):
        return getattr(self, key.replace(".", "_"))

    def rms(self, x, key):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.p(key)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        H, K, D = self.H, self.K, self.D
        seq = input_ids.shape[1]
        x = self.p("model.embed_tokens.weight")[input_ids[0]]  # [seq, E]
        freqs = position_ids[0].float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        rotate_half = lambda t: torch.cat((-t[..., D // 2:], t[..., :D // 2]), dim=-1)
        # Query i (at past + i) sees keys up to past + i, where the attention mask is 1.
        total = attention_mask.shape[1]
        past_len = total - seq
        q_index = torch.arange(seq)[:, None] + past_len
        k_index = torch.arange(total)[None, :]
        blocked = (k_index > q_index) | (attention_mask[0][None, :] == 0)
        presents = []
        for l in range(self.layers):
            pre = f"model.layers.{l}."
            h = self.rms(x, pre + "input_layernorm.weight")
            q = (h @ self.p(pre + "self_attn.q_proj.weight").T).reshape(-1, H, D).transpose(0, 1)
            k = (h @ self.p(pre + "self_attn.k_proj.weight").T).reshape(-1, K, D).transpose(0, 1)
            v = (h @ self.p(pre + "self_attn.v_proj.weight").T).reshape(-1, K, D).transpose(0, 1)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k = torch.cat((past[2 * l][0], k), dim=1)  # [K, total, D]
            v = torch.cat((past[2 * l + 1][0], v), dim=1)
            presents += [k[None], v[None]]
            # (repeat_interleave as expand + reshape with -1: traced, it would bake the past's length in)
            kk = k.unsqueeze(1).expand(-1, H // K, -1, -1).reshape(H, -1, D)
            vv = v.unsqueeze(1).expand(-1, H // K, -1, -1).reshape(H, -1, D)
            scores = (q @ kk.transpose(1, 2)) / math.sqrt(D)
            scores = scores.masked_fill(blocked[None], float("-inf"))
            z = torch.softmax(scores, dim=-1) @ vv  # [H, seq, D]
            x = x + z.transpose(0, 1).reshape(-1, H * D) @ self.p(pre + "self_attn.o_proj.weight").T
            h = self.rms(x, pre + "post_attention_layernorm.weight")
            gate = h @ self.p(pre + "mlp.gate_proj.weight").T
            up = h @ self.p(pre + "mlp.up_proj.weight").T
            x = x + (torch.nn.functional.silu(gate) * up) @ self.p(pre + "mlp.down_proj.weight").T
        x = self.rms(x, "model.norm.weight")
        unembed = self.p("model.embed_tokens.weight") if self.cfg.get("tie_word_embeddings") else self.p("lm_head.weight")
        return (x @ unembed.T)[None], *presents


def main(folder, out):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    w = {k: v for name in files for k, v in read_safetensors(os.path.join(folder, name)).items()}
    model = LlamaDecoder(cfg, w).eval()
    past_len, seq = 2, 3
    past = [torch.zeros(1, model.K, past_len, model.D) for _ in range(2 * model.layers)]
    inputs = (torch.tensor([[1, 2, 3]]), torch.ones(1, past_len + seq, dtype=torch.int64),
              torch.tensor([[past_len, past_len + 1, past_len + 2]]), *past)
    past_names = [f"past_key_values.{l}.{kv}" for l in range(model.layers) for kv in ("key", "value")]
    present_names = [f"present.{l}.{kv}" for l in range(model.layers) for kv in ("key", "value")]
    axes = {"input_ids": {1: "sequence_length"}, "attention_mask": {1: "total_sequence_length"},
            "position_ids": {1: "sequence_length"}, "logits": {1: "sequence_length"},
            **{n: {2: "past_sequence_length"} for n in past_names},
            **{n: {2: "total_sequence_length"} for n in present_names}}
    with torch.no_grad():
        torch.onnx.export(model, inputs, out, opset_version=17, do_constant_folding=True,
                          input_names=["input_ids", "attention_mask", "position_ids", *past_names],
                          output_names=["logits", *present_names], dynamic_axes=axes)
    # The cache's static sizes, beside the graph: what a runner needs for the empty first past.
    with open(out + ".json", "w") as f:
        json.dump({"layers": model.layers, "numKvHeads": model.K, "headDim": model.D, "vocabSize": cfg["vocab_size"]}, f)
    print(f"{out}: {os.path.getsize(out) / 1e6:.1f} MB")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
