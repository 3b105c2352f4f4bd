#!/usr/bin/env python3
"""PyTorch's own nn.MultiheadAttention tests, as fixtures for tests/js/pytorch-mha.test.js.

Runs torch (Debian's python3-torch) on the configurations of PyTorch's MHA tests, several random
draws each, and writes what every call gave: outputs, attention weights, and for loss =
sum(output * dOut) the gradients of the inputs and of every parameter (torch autograd, float32).
The tests ported (their names are the cases' names):
  - test/nn/test_multihead_attention.py (inside test/test_nn.py in torch 1.13): test_multihead_attention
    (its _multihead_attn_test_helper over add_bias_kv, add_zero_attn, saved k/v, key_padding_mask,
    same_embed_dim, for average_attn_weights True and False), test_multihead_attn_3d_attn_mask,
    test_multihead_self_attn_two_masks_fast_path, test_multihead_attention_dtype[_batch_first], the
    float64 ones, and test_multihead_attn_nested_tensor_outside_fast_path (nested tensors: ragged);
  - torch/testing/_internal/common_modules.py: module_inputs_torch_nn_MultiheadAttention's 64 samples
    (run by test/test_modules.py);
  - test/test_transformers.py: test_multiheadattention_fastpath_attn_mask, test_mha_native_args.
The tests that check errors or attributes only (invalid shapes, no bias) need no numbers: the JS
test file has them. PyTorch's math path gives NaN for a query row whose keys are all masked; the
fixtures keep the NaN, and the JS test expects zeros there (our documented rule).

Output: tests/fixtures/pytorch-mha/index.json (cases, shapes, offsets) and cases.bin (raw
little-endian tensors). Run: /usr/bin/python3 tools/make_pytorch_mha_fixtures.py
"""
import itertools
import json
import os
import sys

# Byte-identical float32 results need the BLAS the committed fixtures came from (make_fixtures.py).
REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
if os.path.isdir(REFERENCE_BLAS) and REFERENCE_BLAS not in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
    os.environ["LD_LIBRARY_PATH"] = ":".join(filter(None, [REFERENCE_BLAS, os.environ.get("LD_LIBRARY_PATH")]))
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "pytorch-mha")
DRAWS = 3  # random draws per case (PyTorch's helper loops 100 times; 3 keep the fixtures small)


class Blob:
    """Tensors appended to one binary file, described by (dtype, shape, offset, length)."""

    def __init__(self):
        self.parts, self.size = [], 0

    def add(self, t):
        a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        if a.dtype == np.bool_:
            a, dtype = a.astype(np.uint8), "uint8"
        elif a.dtype == np.float64:  # (the float64 cases: doubles, 8-byte aligned)
            a, dtype = a.astype("<f8"), "float64"
            pad = (-self.size) % 8
            if pad:
                self.parts.append(b"\0" * pad)
                self.size += pad
        else:
            a, dtype = a.astype("<f4"), "float32"
        raw = np.ascontiguousarray(a).tobytes()
        entry = {"dtype": dtype, "shape": list(a.shape), "offset": self.size, "length": int(a.size)}
        self.parts.append(raw)
        self.size += len(raw)
        pad = (-self.size) % 4
        if pad:
            self.parts.append(b"\0" * pad)
            self.size += pad
        return entry


def seeded_floats(shape, seed, scale=0.5):
    """tests/js/seeded.js's seededFloats (an LCG), so the largest inputs need not be stored."""
    n = int(np.prod(shape))
    out, state = np.empty(n, dtype=np.float64), seed & 0xFFFFFFFF
    for i in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = (state / 2 ** 32 - 0.5) * 2 * scale
    return torch.from_numpy(out.astype(np.float32).reshape(shape))


class Seeded:
    """A tensor the JS test regenerates with seededFloats(n, seed, scale) instead of reading it
    (float64: its float32 values widened, entry dtype 'float64'; float16: rounded to half, entry
    dtype 'float16', which the JS test rounds with Float16Array where the runtime has it)."""

    def __init__(self, shape, seed, scale, dtype=torch.float32):
        self.tensor = seeded_floats(shape, seed, scale).to(dtype)
        self.entry = {"seeded": seed, "scale": scale, "shape": list(shape)}
        if dtype != torch.float32:
            self.entry["dtype"] = str(dtype).replace("torch.", "")


def load_seeded_weights(module, seed):
    """Weights (and biases) from seededFloats, scaled as PyTorch's initialization would: entries for the fixture."""
    entries = {}
    with torch.no_grad():
        for i, (name, p) in enumerate(module.state_dict().items()):
            fan_in = p.shape[-1] if p.dim() > 1 else 1
            w = Seeded(tuple(p.shape), seed + i, float(np.sqrt(3.0 / fan_in)), p.dtype)
            p.copy_(w.tensor)
            entries[name] = w.entry
    return entries


def randomize_biases(module, gen):
    """PyTorch initializes the projection biases to zero; random ones test more of the layer."""
    with torch.no_grad():
        if module.in_proj_bias is not None:
            module.in_proj_bias.copy_(torch.randn(module.in_proj_bias.shape, generator=gen) * 0.3)
            module.out_proj.bias.copy_(torch.randn(module.out_proj.bias.shape, generator=gen) * 0.3)


def js_config(module):
    c = {"embedDim": module.embed_dim, "numHeads": module.num_heads, "bias": module.in_proj_bias is not None,
         "kdim": module.kdim, "vdim": module.vdim}
    if not module.batch_first:
        c["batchFirst"] = False
    if module.bias_k is not None:
        c["addBiasKv"] = True
    if module.add_zero_attn:
        c["addZeroAttn"] = True
    if module.out_proj.weight.dtype == torch.float64:
        c["dtype"] = "float64"
    return c


def run_draw(blob, module, query, key, value, *, self_attention=False, key_padding_mask=None, attn_mask=None,
             need_weights=True, average_attn_weights=True, static_k=None, static_v=None, grad=True, gen=None,
             seeded=None, weights_rows=None, train=True, round_to_half=False):
    """One call of `module` (train mode, dropout 0: PyTorch's math path; train False: eval, as the
    fast-path tests call it) and what it gave.
    seeded: {name: Seeded} for inputs and {'stateDict': entries} the JS test regenerates;
    weights_rows: keep the attention weights of the first batch rows only (the largest cases);
    round_to_half: keep the results rounded to half (float16_cases)."""
    seeded = seeded or {}
    module.train(train)
    inputs = [query] if self_attention else [query, key, value]
    leaves = [t.detach().clone().requires_grad_(grad) for t in inputs]
    q = leaves[0]
    k, v = (q, q) if self_attention else (leaves[1], leaves[2])
    draw = {
        "config": js_config(module),
        "options": {"needWeights": need_weights, "averageWeights": average_attn_weights},
        "selfAttention": self_attention,
        "stateDict": seeded.get("stateDict") or {name: blob.add(p) for name, p in module.state_dict().items()},
        "tensors": {"query": seeded["query"].entry if "query" in seeded else blob.add(query)},
    }
    if not self_attention:
        for name, t in (("key", key), ("value", value)):
            draw["tensors"][name] = seeded[name].entry if name in seeded else blob.add(t)
    for name, t in (("keyPaddingMask", key_padding_mask), ("attnMask", attn_mask), ("staticK", static_k),
                    ("staticV", static_v)):
        if t is not None:
            draw["tensors"][name] = blob.add(t)
    if key_padding_mask is not None and key_padding_mask.is_floating_point():
        # torch 1.13 takes bool key padding masks only; newer torch adds a float one to the scores,
        # which is the same as adding it to a per-head attn_mask (what this call gives 1.13).
        bsz, src_len = key_padding_mask.shape
        tgt_len = query.shape[-2] if module.batch_first else query.shape[0]
        heads = module.num_heads
        base = torch.zeros(bsz * heads, tgt_len, src_len, dtype=query.dtype) if attn_mask is None else attn_mask.to(query.dtype)
        kpm = key_padding_mask.repeat_interleave(heads, dim=0).view(bsz * heads, 1, src_len)
        attn_mask, key_padding_mask = base + kpm, None
    try:
        if static_k is None and static_v is None:
            out, weights = module(q, k, v, key_padding_mask=key_padding_mask, need_weights=need_weights,
                                  attn_mask=attn_mask, average_attn_weights=average_attn_weights)
        else:  # the module takes no static k/v: PyTorch's helper calls the function, sequence-first
            assert not module.batch_first
            out, weights = F.multi_head_attention_forward(
                q, k, v, module.embed_dim, module.num_heads, module.in_proj_weight, module.in_proj_bias,
                module.bias_k, module.bias_v, module.add_zero_attn, 0.0, module.out_proj.weight,
                module.out_proj.bias, True, key_padding_mask, need_weights, attn_mask,
                use_separate_proj_weight=not module._qkv_same_embed_dim, q_proj_weight=module.q_proj_weight,
                k_proj_weight=module.k_proj_weight, v_proj_weight=module.v_proj_weight, static_k=static_k,
                static_v=static_v, average_attn_weights=average_attn_weights)
    except AssertionError as e:  # PyTorch refuses the call: the JS layer must refuse it with the same words
        draw["error"] = str(e)
        return draw
    if round_to_half:
        out, weights = out.half().float(), weights if weights is None else weights.half().float()
    draw["expected"] = {"output": blob.add(out)}
    if need_weights:
        draw["expected"]["weights"] = blob.add(weights if weights_rows is None else weights[:weights_rows])
    nan_rows = bool(torch.isnan(out).any())
    draw["fullyMaskedRows"] = nan_rows
    if grad and not nan_rows:  # (a fully masked row makes every gradient NaN in torch)
        d_out = torch.randn(out.shape, generator=gen, dtype=out.dtype)
        module.zero_grad()
        (out * d_out).sum().backward()
        draw["tensors"]["dOut"] = blob.add(d_out)
        names = ["query"] if self_attention else ["query", "key", "value"]
        draw["gradients"] = {n: blob.add(t.grad if t.grad is not None else torch.zeros_like(t))
                             for n, t in zip(names, leaves)}
        draw["paramGradients"] = {name: blob.add(p.grad if p.grad is not None else torch.zeros_like(p))
                                  for name, p in module.named_parameters()}
    return draw


def make_mha(gen, *args, **kwargs):
    module = torch.nn.MultiheadAttention(*args, dropout=0.0, **kwargs)  # (dtype=torch.float64: the float64 cases)
    randomize_biases(module, gen)
    return module


# --- test/nn/test_multihead_attention.py -----------------------------------------------------

HELPER_CASES = {  # test_multihead_attention's inner tests: their _multihead_attn_test_helper arguments
    "test_multihead_attn_no_masking": {},
    "test_multihead_attn_key_padding_mask": {"add_key_padding_mask": True},
    "test_multihead_attn_add_bias_kv": {"add_bias_kv": True},
    "test_multihead_attn_add_zero_attn": {"add_zero_attn": True},
    "test_multihead_attn_saved_kv": {"saved_kv": True},
    "test_multihead_attn_add_bias_kv_zero_attn": {"add_key_padding_mask": True, "add_bias_kv": True,
                                                  "add_zero_attn": True},
    "test_multihead_attn_all_arguments1": {"add_key_padding_mask": True, "add_zero_attn": True, "saved_kv": True},
    "test_multihead_attn_all_arguments2": {"add_key_padding_mask": True, "add_bias_kv": True,
                                           "add_zero_attn": True, "saved_kv": True},
    "test_multihead_attn_all_arguments3": {"add_key_padding_mask": True, "add_zero_attn": True, "saved_kv": True,
                                           "same_embed_dim": True},
}


def helper_draw(blob, rng, gen, average_attn_weights, add_key_padding_mask=False, add_bias_kv=False,
                add_zero_attn=False, saved_kv=False, same_embed_dim=False, dtype=torch.float32):
    """One iteration of _multihead_attn_test_helper: a one-token decoder query against a source
    (its tensors and weights in `dtype`)."""
    batch_sz, seq_len = rng.randint(2, 11), rng.randint(2, 11)
    d_head = rng.randint(3, 11)
    nheads = rng.randint(2, 6) * 2
    d_model = d_head * nheads
    kv_dim = d_model if same_embed_dim else rng.randint(5, 21)
    saved_k = saved_v = None
    if saved_kv:
        saved_k = torch.from_numpy(rng.rand(batch_sz * nheads, seq_len, d_head)).float().to(dtype)
        saved_v = torch.from_numpy(rng.rand(batch_sz * nheads, seq_len, d_head)).float().to(dtype)
    key_padding_mask = None
    if add_key_padding_mask:
        seq_mask = rng.randint(0, 2, (1, seq_len))
        key_padding_mask = torch.from_numpy(np.repeat(seq_mask, batch_sz, axis=0) == 1)
    decoder_state = torch.from_numpy(rng.rand(batch_sz, d_model)).float().to(dtype)
    source = torch.from_numpy(rng.rand(batch_sz, seq_len, kv_dim)).float().transpose(0, 1).contiguous().to(dtype)
    attn_mask = torch.from_numpy(rng.randint(0, 2, size=(1, seq_len))).float().to(dtype)
    attn_mask.masked_fill_(attn_mask == 0, float("-inf"))
    attn_mask.masked_fill_(attn_mask > 0, 0.0)
    module = make_mha(gen, d_model, nheads, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn, kdim=kv_dim,
                      vdim=kv_dim, dtype=dtype)
    seeded = {"stateDict": load_seeded_weights(module, rng.randint(0, 2 ** 31))}
    query = decoder_state.unsqueeze(0)  # [1, B, E]: sequence-first, as the helper calls
    return run_draw(blob, module, query, source, source, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                    average_attn_weights=average_attn_weights, static_k=saved_k, static_v=saved_v, gen=gen,
                    seeded=seeded)


def multihead_attention_file(blob, seed):
    cases = []
    for average in (True, False):
        for inner, args in HELPER_CASES.items():
            rng = np.random.RandomState(seed)
            gen = torch.Generator().manual_seed(seed)
            seed += 1
            cases.append({"name": f"test_multihead_attention[average_attn_weights={average}] {inner}",
                          "source": "test/nn/test_multihead_attention.py",
                          "draws": [helper_draw(blob, rng, gen, average, **args) for _ in range(DRAWS)]})

    draws = []  # test_multihead_attn_3d_attn_mask: [N*H, T, S] masks against N calls of 2-D masks
    gen = torch.Generator().manual_seed(seed)
    for _ in range(DRAWS):
        embed_dim, num_heads, batch_size, src_len, tgt_len = 8, 4, 8, 3, 2
        query = torch.rand(batch_size, tgt_len, embed_dim, generator=gen)
        key = torch.rand(batch_size, src_len, embed_dim, generator=gen)
        attn_mask = torch.randint(0, 2, (batch_size, tgt_len, src_len), generator=gen).float()
        attn_mask = attn_mask.masked_fill(attn_mask == 0, float("-inf")).masked_fill(attn_mask == 1, 0.0)
        module = make_mha(gen, embed_dim, num_heads)
        attn_mask_3d = torch.repeat_interleave(attn_mask, num_heads, dim=0)
        draw = run_draw(blob, module, query.transpose(0, 1), key.transpose(0, 1), key.transpose(0, 1),
                        attn_mask=attn_mask_3d, gen=gen)
        draw["perRowMasks"] = blob.add(attn_mask)  # the test's 2-D mask of each batch row
        draws.append(draw)
    cases.append({"name": "test_multihead_attn_3d_attn_mask", "source": "test/nn/test_multihead_attention.py",
                  "draws": draws})

    draws = []  # test_multihead_self_attn_two_masks_fast_path: both masks, batch-first self-attention
    for _ in range(DRAWS):
        embed_dim, num_heads, batch_size, src_len = 14, 7, 8, 5
        x = torch.rand(batch_size, src_len, embed_dim, generator=gen)
        attn_mask = torch.randint(0, 2, (src_len, src_len), generator=gen).bool()
        key_padding_mask = torch.randint(0, 2, (batch_size, src_len), generator=gen).bool()
        module = make_mha(gen, embed_dim, num_heads, batch_first=True)
        draws.append(run_draw(blob, module, x, None, None, self_attention=True, attn_mask=attn_mask,
                              key_padding_mask=key_padding_mask, need_weights=False, gen=gen))
    cases.append({"name": "test_multihead_self_attn_two_masks_fast_path",
                  "source": "test/nn/test_multihead_attention.py", "draws": draws})

    for batch_first in (False, True):  # test_multihead_attention_dtype[_batch_first], float32
        embed_dim, num_heads, sl, bs = 128, 8, 10, 8
        module = make_mha(gen, embed_dim, num_heads, batch_first=batch_first)
        seeded = {"stateDict": load_seeded_weights(module, seed + 10 * batch_first)}
        shape = (bs, sl, embed_dim) if batch_first else (sl, bs, embed_dim)
        for i, name in enumerate(("query", "key", "value")):
            seeded[name] = Seeded(shape, seed + 10 * batch_first + 5 + i, 1.0)
        q, k, v = (seeded[n].tensor for n in ("query", "key", "value"))
        name = "test_multihead_attention_dtype" + ("_batch_first" if batch_first else "") + "[float32]"
        cases.append({"name": name, "source": "test/nn/test_multihead_attention.py",
                      "draws": [run_draw(blob, module, q, k, v, need_weights=not batch_first, grad=False,
                                         seeded=seeded)]})
    return cases


def nested_tensor_case(blob, seed):
    """test_multihead_attn_nested_tensor_outside_fast_path: nested (ragged) tensors through the fast
    path (eval, no_grad), the test's one [4, 4] sequence and mixed lengths. The JS test calls them as
    ragged batches; torch's padded weights are kept per sequence ([L_i, L_i]). (PyTorch refuses
    nested tensors where grad is enabled; mha-wasm's ragged calls take grad, tests/js/ragged.test.js.)"""
    gen = torch.Generator().manual_seed(seed)
    draws = []
    for lengths in ([4], [4, 2, 7], [1, 5, 3, 6]):
        module = make_mha(gen, 4, 4, batch_first=True).eval()
        sequences = [torch.randn(n, 4, generator=gen) for n in lengths]
        with torch.no_grad():
            out, weights = module(*[torch.nested.nested_tensor(sequences)] * 3)
        draws.append({
            "config": js_config(module), "options": {"needWeights": True, "averageWeights": True},
            "selfAttention": True, "lengths": lengths,
            "stateDict": {name: blob.add(p) for name, p in module.state_dict().items()},
            "tensors": {"query": blob.add(torch.cat(sequences))},
            "expected": {"output": blob.add(torch.cat(out.unbind())),
                         "weights": [blob.add(weights[i, :n, :n]) for i, n in enumerate(lengths)]},
        })
    return [{"name": "test_multihead_attn_nested_tensor_outside_fast_path", "source": "test/nn/test_multihead_attention.py",
             "draws": draws}]


# --- test/nn/test_multihead_attention.py: the float64 tests -----------------------------------------

def float64_cases(blob, seed):
    """PyTorch's tests that run in float64 (@dtypes(torch.double), and the [float64] instances of
    test_multihead_attention_dtype[_batch_first]), on their own configurations. PyTorch checks the
    result's shape and dtype; the fixtures also keep torch's numbers, and the gradients where the
    layer trains (PyTorch's no_grad tests run the same call; its gradients are cheap here)."""
    f64 = torch.float64
    cases = []
    gen = torch.Generator().manual_seed(seed)
    for batch_first in (False, True):  # test_multihead_attention_dtype[_batch_first][float64]
        embed_dim, num_heads, sl, bs = 128, 8, 10, 8
        module = make_mha(gen, embed_dim, num_heads, batch_first=batch_first, dtype=f64)
        seeded = {"stateDict": load_seeded_weights(module, seed + 10 * batch_first)}
        shape = (bs, sl, embed_dim) if batch_first else (sl, bs, embed_dim)
        for i, name in enumerate(("query", "key", "value")):
            seeded[name] = Seeded(shape, seed + 10 * batch_first + 5 + i, 1.0, f64)
        q, k, v = (seeded[n].tensor for n in ("query", "key", "value"))
        name = "test_multihead_attention_dtype" + ("_batch_first" if batch_first else "") + "[float64]"
        cases.append({"name": name, "source": "test/nn/test_multihead_attention.py",
                      "draws": [run_draw(blob, module, q, k, v, need_weights=not batch_first, grad=False,
                                         seeded=seeded)]})

    draws = []  # test_multihead_attn_fast_path_query_and_bias_have_different_dtypes[float64]
    for _ in range(DRAWS):
        module = make_mha(gen, 4, 4, batch_first=True, dtype=f64).eval()
        module.in_proj_bias = torch.nn.Parameter(module.in_proj_bias.to(torch.half))
        query = torch.randn(3, 3, 4, generator=gen, dtype=f64)
        # The JS layer takes one dtype: the half bias's values, widened to float64 (torch adds them so).
        state = {name: blob.add(p.double()) for name, p in module.state_dict().items()}
        with torch.no_grad():
            draws.append(run_draw(blob, module, query, None, None, self_attention=True, grad=False,
                                  seeded={"stateDict": state}, train=False))
    cases.append({"name": "test_multihead_attn_fast_path_query_and_bias_have_different_dtypes[float64]",
                  "source": "test/nn/test_multihead_attention.py", "draws": draws})

    draws = []  # test_multihead_attn_fast_path_small_test[float64]: eval, no_grad (torch's fast path)
    for _ in range(DRAWS):
        module = make_mha(gen, 4, 4, batch_first=True, dtype=f64).eval()
        query = torch.randn(3, 3, 4, generator=gen, dtype=f64)
        with torch.no_grad():
            draw = run_draw(blob, module, query, None, None, self_attention=True, grad=False, train=False)
        draws.append(draw)
    cases.append({"name": "test_multihead_attn_fast_path_small_test[float64]",
                  "source": "test/nn/test_multihead_attention.py", "draws": draws})

    draws = []  # test_multihead_attn_in_proj_bias_none[float64]: bias=False, sequence-first
    for _ in range(DRAWS):
        module = make_mha(gen, 2, 2, bias=False, dtype=f64)
        query = torch.rand(2, 2, 2, generator=gen, dtype=f64)
        draws.append(run_draw(blob, module, query, None, None, self_attention=True, gen=gen))
    cases.append({"name": "test_multihead_attn_in_proj_bias_none[float64]",
                  "source": "test/nn/test_multihead_attention.py", "draws": draws})

    draws = []  # test_multihead_attn_in_proj_weight_none[float64]: kdim = vdim = 2, separate projections
    for _ in range(DRAWS):
        module = make_mha(gen, 4, 4, kdim=2, vdim=2, dtype=f64)
        query = torch.rand(4, 4, 4, generator=gen, dtype=f64)
        key = torch.rand(4, 4, 2, generator=gen, dtype=f64)
        draws.append(run_draw(blob, module, query, key, key, gen=gen))
    cases.append({"name": "test_multihead_attn_in_proj_weight_none[float64]",
                  "source": "test/nn/test_multihead_attention.py", "draws": draws})
    return cases


def float16_cases(blob, seed):
    """test_multihead_attention_dtype[_batch_first][float16]: PyTorch's configuration with half
    weights and inputs. Torch 1.13 on the CPU has no half matmul ("addmm_impl_cpu_" not implemented
    for 'Half'; PyTorch runs these on CUDA), so the expected results are torch's float32 call on
    the same half values, rounded to half: what a half call computes with float32 accumulation, up
    to one rounding of the result. The JS side runs them with Float16Array tensors in Chromium
    (tests/browser/pytorch-mha-float16.test.js); Node 20 has no Float16Array."""
    f16 = torch.float16
    cases = []
    gen = torch.Generator().manual_seed(seed)
    for batch_first in (False, True):
        embed_dim, num_heads, sl, bs = 128, 8, 10, 8
        module = make_mha(gen, embed_dim, num_heads, batch_first=batch_first)
        seeded = {"stateDict": load_seeded_weights(module, seed + 10 * batch_first)}
        with torch.no_grad():  # the half model's weights (float32 values that half holds exactly)
            for p in module.parameters():
                p.copy_(p.half().float())
        for entry in seeded["stateDict"].values():
            entry["dtype"] = "float16"
        shape = (bs, sl, embed_dim) if batch_first else (sl, bs, embed_dim)
        for i, name in enumerate(("query", "key", "value")):
            seeded[name] = Seeded(shape, seed + 10 * batch_first + 5 + i, 1.0, f16)
        q, k, v = (seeded[n].tensor.float() for n in ("query", "key", "value"))
        name = "test_multihead_attention_dtype" + ("_batch_first" if batch_first else "") + "[float16]"
        draw = run_draw(blob, module, q, k, v, need_weights=not batch_first, grad=False, seeded=seeded,
                        round_to_half=True)
        cases.append({"name": name, "source": "test/nn/test_multihead_attention.py, float16 (Chromium)", "draws": [draw]})
    return cases


def float64_runs_of_float32_cases(blob, seed):
    """Not PyTorch's own tests: PyTorch's configurations of float32 cases run in float64, for the
    options PyTorch's float64 tests leave out (its test helper's appended keys, static keys and
    values and masks; test_transformers' float masks)."""
    f64 = torch.float64
    cases = []
    for inner in ("test_multihead_attn_add_bias_kv_zero_attn", "test_multihead_attn_all_arguments1"):
        rng = np.random.RandomState(seed)
        gen = torch.Generator().manual_seed(seed)
        seed += 1
        cases.append({"name": f"test_multihead_attention[average_attn_weights=False] {inner}, in float64",
                      "source": "float64 runs", "draws": [helper_draw(blob, rng, gen, False, dtype=f64,
                                                                      **HELPER_CASES[inner]) for _ in range(DRAWS)]})
    gen = torch.Generator().manual_seed(seed)
    B, L, D, H = 2, 4, 8, 4
    draws = []
    for _ in range(DRAWS):
        attn_mask = (torch.rand((B, 1, L, L), generator=gen, dtype=f64) * 18 - 9).expand(B, H, L, L).reshape(B * H, L, L)
        key_padding_mask = torch.randint(0, 2, (B, L), generator=gen).bool()
        module = make_mha(gen, D, H, batch_first=True, dtype=f64)
        x = torch.randn(B, L, D, generator=gen, dtype=f64)
        draws.append(run_draw(blob, module, x, None, None, self_attention=True, attn_mask=attn_mask,
                              key_padding_mask=key_padding_mask, gen=gen))
    cases.append({"name": "test_multiheadattention_fastpath_attn_mask[attn_mask_dim=3, key_padding_mask_dim=2, "
                          "mask_dtype=float], attn_mask float, key_padding_mask bool, in float64",
                  "source": "float64 runs", "draws": draws})
    return cases


# --- common_modules.py: module_inputs_torch_nn_MultiheadAttention (test/test_modules.py) -------------

def module_samples(blob, seed):
    cases = []
    bools = (True, False)
    key_padding_masks = (None, torch.tensor([False, False, True]))
    attn_masks = (None, torch.tensor([False, False, True]).expand((3, 3, 3)).contiguous())
    index = 0
    for bias, add_bias_kv, add_zero_attn, kpm, am in itertools.product(bools, bools, bools, key_padding_masks,
                                                                      attn_masks):
        for batch_first in (True, False):
            gen = torch.Generator().manual_seed(seed + index)
            draws = []
            for _ in range(DRAWS):
                module = make_mha(gen, 3, 3, batch_first=batch_first, bias=bias, add_bias_kv=add_bias_kv,
                                  add_zero_attn=add_zero_attn)
                q, k, v = (torch.rand(3, 3, generator=gen) * 18 - 9 for _ in range(3))  # make_tensor's range
                draws.append(run_draw(blob, module, q, k, v, key_padding_mask=kpm, attn_mask=am, gen=gen))
            desc = (f"batch_first={batch_first}, bias={bias}, add_bias_kv={add_bias_kv}, "
                    f"add_zero_attn={add_zero_attn}, key_padding_mask={kpm is not None}, attn_mask={am is not None}")
            cases.append({"name": f"TestModule MultiheadAttention sample {index}: {desc}",
                          "source": "torch/testing/_internal/common_modules.py", "draws": draws})
            index += 1
    return cases


# --- test/test_transformers.py --------------------------------------------------------------------

def make_mask(shape, dtype, gen):
    """torch.testing.make_tensor's values: bools at random, floats uniform in [-9, 9)."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.rand(shape, generator=gen) * 18 - 9


def transformers_file(blob, seed):
    cases = []
    gen = torch.Generator().manual_seed(seed)
    for attn_mask_dim, key_padding_mask_dim, mask_dtype in itertools.product((2, 3, None), (2, None),
                                                                            (torch.bool, torch.float32)):
        B, L, D, H = 2, 4, 8, 4
        draws = []
        for _ in range(DRAWS):
            attn_mask = None
            if attn_mask_dim == 2:
                attn_mask = make_mask((L, L), mask_dtype, gen)
            elif attn_mask_dim == 3:
                attn_mask = make_mask((B, 1, L, L), mask_dtype, gen).expand(B, H, L, L).reshape(B * H, L, L)
            key_padding_mask = make_mask((B, L), mask_dtype, gen) if key_padding_mask_dim == 2 else None
            module = make_mha(gen, D, H, batch_first=True)
            x = torch.randn(B, L, D, generator=gen)
            draws.append(run_draw(blob, module, x, None, None, self_attention=True, attn_mask=attn_mask,
                                  key_padding_mask=key_padding_mask, need_weights=False, gen=gen))
        dtype = "bool" if mask_dtype == torch.bool else "float32"
        cases.append({"name": f"test_multiheadattention_fastpath_attn_mask[attn_mask_dim={attn_mask_dim}, "
                              f"key_padding_mask_dim={key_padding_mask_dim}, mask_dtype={dtype}]",
                      "source": "test/test_transformers.py", "draws": draws})
    for nb_heads, bias in itertools.product((1, 8), (True, False)):
        B, L, F_ = 8, 100, 128
        module = make_mha(gen, F_, nb_heads, batch_first=True, bias=bias)
        case_seed = seed + 100 + 10 * nb_heads + bias
        seeded = {"stateDict": load_seeded_weights(module, case_seed), "query": Seeded((B, L, F_), case_seed + 7, 1.0)}
        pad_mask = torch.zeros((B, L), dtype=torch.bool) if bias else None
        draw = run_draw(blob, module, seeded["query"].tensor, None, None, self_attention=True,
                        key_padding_mask=pad_mask, need_weights=True, grad=False, seeded=seeded, weights_rows=1)
        cases.append({"name": f"test_mha_native_args[nb_heads={nb_heads}, bias={bias}]",
                      "source": "test/test_transformers.py", "draws": [draw]})
    return cases


def main():
    torch.manual_seed(0)  # (module initialization)
    blob = Blob()
    cases = multihead_attention_file(blob, 1000) + module_samples(blob, 2000) + transformers_file(blob, 3000)
    cases += nested_tensor_case(blob, 4000)  # (last: the earlier cases' offsets stay as they were)
    cases += float64_cases(blob, 5000) + float64_runs_of_float32_cases(blob, 6000) + float16_cases(blob, 7000)
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, "cases.bin"), "wb") as f:
        for part in blob.parts:
            f.write(part)
    index = {"generator": "tools/make_pytorch_mha_fixtures.py", "torch": torch.__version__,
             "tolerance": {"absolute": 1e-5, "relative": 1e-4}, "float64Tolerance": {"absolute": 1e-12, "relative": 1e-12},
             "binary": "cases.bin", "cases": cases}
    with open(os.path.join(OUT_DIR, "index.json"), "w") as f:
        json.dump(index, f, separators=(",", ":"))
    print(f"{len(cases)} cases, {sum(len(c['draws']) for c in cases)} draws, {blob.size} bytes")


if __name__ == "__main__":
    main()
