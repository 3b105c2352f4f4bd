"""Expected values for tests/js/keras-mha-port.test.js (Keras 3.15's multi_head_attention_test.py,
ported): each numeric case's weights (Keras get_weights() order and layouts), inputs, masks and
the float64 reference's output, scores and output mask (tools/keras_mha_reference.py, written
from Keras' source). Inputs and weights are rounded to float32 first, so the JavaScript side feeds
the layers exactly the numbers the reference used.

    /usr/bin/python3 tools/make_keras_port_fixtures.py   # writes tests/fixtures/keras-mha-port.json
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from keras_mha_reference import KerasMHA  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "keras-mha-port.json")


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def tensor(x):
    x = np.asarray(x)
    # 9 significant digits: float32 inputs and weights exactly, the float64 expectations far below the tolerances.
    return {"shape": list(x.shape), "data": [float(f"{v:.9g}") for v in x.reshape(-1).astype(np.float64)]}


def random_weights(layer, query_shape, value_shape, key_shape, seed):
    rng = np.random.default_rng(seed)
    weights = []
    for name, shape in layer.weight_shapes(query_shape, value_shape, key_shape):
        if name.endswith("/kernel"):
            fan_in = shape[0] if not name.startswith("attention_output") else shape[0] * shape[1]
            weights.append(f32(rng.uniform(-1, 1, shape) * 1.5 / np.sqrt(fan_in)))
        else:
            weights.append(f32(rng.uniform(-0.3, 0.3, shape)))
    return weights


def case(args, inputs, options=None, seed=1, weights=None, embeddings=None, scores=False):
    """One numeric case: args (Keras' constructor arguments, snake_case), inputs {query, value, key?}
    as float arrays or, with `embeddings`, integer ids embedded by Embedding(mask_zero=True) tables.
    `scores`: keep the expected attention scores too (for the tests that read them)."""
    options = dict(options or {})
    layer = KerasMHA(**args)
    arrays, masks = {}, {}
    for role, x in inputs.items():
        if embeddings and role in embeddings:
            table = embeddings[role]
            arrays[role] = table[np.asarray(x)]
            masks[role + "_mask"] = np.asarray(x) != 0
        else:
            arrays[role] = f32(x)
    q, v, k = arrays["query"], arrays["value"], arrays.get("key")
    if weights is None:
        weights = random_weights(layer, q.shape, v.shape, None if k is None else k.shape, seed)
    mask_options = {key: np.asarray(val) for key, val in options.items() if key == "attention_mask"}
    output, attention_scores = layer.call(weights, q, v, k, use_causal_mask=options.get("use_causal_mask", False),
                                **masks, **mask_options)
    entry = {
        "args": args,
        "inputs": {role: tensor(x) for role, x in (inputs if embeddings else arrays).items()},
        "options": {key: (tensor(val) if key == "attention_mask" else val) for key, val in options.items()},
        "weights": [tensor(w) for w in weights],
        "output": tensor(output),
    }
    if scores:
        entry["scores"] = tensor(attention_scores)
    if embeddings:
        entry["embeddings"] = {role: tensor(table) for role, table in embeddings.items()}
        if "query_mask" in masks:
            entry["outputMask"] = tensor(masks["query_mask"].astype(np.uint8))
    return entry


def main():
    cases = {}
    rng = np.random.default_rng(2026)

    # test_basics: the four configurations' outputs (query (2, 8, 16), value (2, 4, 16)).
    for i, args in enumerate([{"num_heads": 2, "key_dim": 2}, {"num_heads": 2, "key_dim": 2, "value_dim": 4, "use_bias": False},
                              {"num_heads": 2, "key_dim": 2, "use_gate": True},
                              {"num_heads": 2, "key_dim": 2, "value_dim": 4, "use_bias": False, "use_gate": True}]):
        cases[f"basics/{i}"] = case(args, {"query": rng.normal(size=(2, 8, 16)), "value": rng.normal(size=(2, 4, 16))}, seed=10 + i)

    # test_high_dim_attention: its six parameterizations, with and without the gate.
    high_dim = {
        "4d_inputs_1freebatch_mask2": ((3, 4), (3, 2), (4, 2), (2,)),
        "4d_inputs_1freebatch_mask3": ((3, 4), (3, 2), (3, 4, 2), (2,)),
        "4d_inputs_1freebatch_mask4": ((3, 4), (3, 2), (3, 2, 4, 2), (2,)),
        "4d_inputs_2d_attention": ((3, 4), (3, 2), (3, 4, 3, 2), (1, 2)),
        "5d_inputs_2d_attention": ((5, 3, 4), (5, 3, 2), (3, 4, 3, 2), (2, 3)),
        "5d_inputs_2d_attention_fullmask": ((5, 3, 4), (5, 3, 2), (5, 3, 4, 3, 2), (2, 3)),
    }
    for name, (q_dims, v_dims, _, axes) in high_dim.items():
        for gate in (False, True):
            args = {"num_heads": 2, "key_dim": 2, "attention_axes": list(axes), "use_gate": gate}
            cases[f"high_dim/{name}/{'gate' if gate else 'plain'}"] = case(
                args, {"query": rng.normal(size=(3,) + q_dims + (8,)), "value": rng.normal(size=(3,) + v_dims + (8,))}, seed=20)

    # test_attention_axes_negative_indexing: x (2, 3, 8, 4), axes 2 (and -2: the same layer).
    x = rng.normal(size=(2, 3, 8, 4))
    for gate in (False, True):
        cases[f"negative_axes/{'gate' if gate else 'plain'}"] = case(
            {"num_heads": 2, "key_dim": 4, "attention_axes": [2], "use_gate": gate}, {"query": x, "value": x}, seed=30, scores=True)

    # test_compute_output_shape: its seven parameterizations, on ones.
    for name, (qd, vd, kd, out) in {
        "without_key_same_proj": ((4, 8), (2, 8), None, None),
        "with_key_same_proj": ((4, 8), (2, 8), (2, 3), None),
        "without_key_different_proj": ((4, 8), (2, 8), None, (3, 4)),
        "with_key_different_proj": ((4, 8), (2, 8), (2, 3), (1, 5)),
        "high_dim_same_proj": ((4, 2, 3, 8), (1, 1, 5, 8), (1, 1, 5, 2), None),
        "high_dim_different_proj": ((4, 2, 3, 8), (1, 1, 5, 8), (1, 1, 5, 2), (3, 2)),
        "different_qv_last_dims": ((4, 2, 3, 8), (4, 2, 3, 7), (4, 2, 3, 8), None),
    }.items():
        inputs = {"query": np.ones((7,) + qd), "value": np.ones((7,) + vd)}
        if kd:
            inputs["key"] = np.ones((7,) + kd)
        cases[f"compute_output_shape/{name}"] = case(
            {"num_heads": 2, "key_dim": 2, "value_dim": 2, "output_shape": list(out) if out else None}, inputs, seed=40)

    # test_masking: Embedding(4, 8, mask_zero=True) of the query ids, Embedding(6, 8, ...) of the value ids.
    query_ids = [[1, 2, 3, 0, 0], [3, 3, 1, 1, 2], [1, 0, 0, 0, 0]]
    value_ids = [[5, 4, 0], [3, 0, 0], [2, 1, 1]]
    tables = {"query": f32(rng.uniform(-0.05, 0.05, (4, 8))), "value": f32(rng.uniform(-0.05, 0.05, (6, 8)))}
    for name, causal in (("causal", True), ("not_causal", False)):
        cases[f"masking/{name}"] = case({"num_heads": 2, "key_dim": 2}, {"query": query_ids, "value": value_ids},
                                        {"use_causal_mask": causal}, seed=50, embeddings=tables)
    cases["query_mask_propagation"] = case({"num_heads": 2, "key_dim": 2}, {"query": query_ids, "value": rng.normal(size=(3, 3, 8))},
                                           seed=51, embeddings={"query": tables["query"]})

    # test_masking_with_different_shapes: x uniform (2, 5, 8), tril(ones(5, 5)).
    x = rng.uniform(size=(2, 5, 8))
    cases["masking_with_different_shapes"] = case({"num_heads": 2, "key_dim": 4}, {"query": x, "value": x},
                                                  {"attention_mask": np.tril(np.ones((5, 5)))}, seed=60)

    # test_sliding_window: RandomState(0).randn(1, 6, 8), window 3, causal and not.
    x = np.random.RandomState(0).randn(1, 6, 8).astype("float32")
    for name, causal in (("causal", True), ("bidirectional", False)):
        cases[f"sliding_window/{name}"] = case({"num_heads": 2, "key_dim": 4, "sliding_window": 3}, {"query": x, "value": x},
                                               {"use_causal_mask": causal}, seed=70, scores=True)

    # test_causal_only_fast_path / with_other_mask / masks_when_fused_path_disabled / non_4d.
    x = np.random.RandomState(0).randn(2, 5, 8).astype("float32")
    cases["causal_only_fast_path"] = case({"num_heads": 2, "key_dim": 4}, {"query": x, "value": x}, {"use_causal_mask": True}, seed=80)
    extra = np.ones((2, 5, 5), dtype=bool)
    extra[:, 2, 3] = False
    cases["causal_only_with_other_mask"] = case({"num_heads": 2, "key_dim": 4}, {"query": x, "value": x},
                                                {"attention_mask": extra.astype(np.uint8), "use_causal_mask": True}, seed=81)
    x = np.random.RandomState(0).randn(1, 6, 8).astype("float32")
    cases["causal_fused_path_disabled"] = case({"num_heads": 2, "key_dim": 4}, {"query": x, "value": x},
                                               {"use_causal_mask": True}, seed=82, scores=True)
    x = np.random.RandomState(0).randn(1, 5, 3, 8).astype("float32")
    cases["causal_non_4d"] = case({"num_heads": 2, "key_dim": 4, "attention_axes": [1]}, {"query": x, "value": x},
                                  {"use_causal_mask": True}, seed=83, scores=True)

    # test_compute_attention_combines_causal_and_explicit_mask: _compute_attention on projected
    # (1, 5, 2, 4) tensors = the layer with identity kernels and zero biases on their (1, 5, 8) reshapes.
    r = np.random.RandomState(0)
    q, k, v = (r.randn(1, 5, 2, 4).astype("float32").reshape(1, 5, 8) for _ in range(3))
    identity = np.identity(8).reshape(8, 2, 4)
    zeros = np.zeros((2, 4))
    extra = np.ones((1, 5, 5), dtype=bool)
    extra[:, 3, 1] = False
    cases["compute_attention_combines"] = case(
        {"num_heads": 2, "key_dim": 4}, {"query": q, "value": v, "key": k}, {"attention_mask": extra.astype(np.uint8), "use_causal_mask": True},
        weights=[identity, zeros, identity, zeros, identity, zeros, identity.reshape(2, 4, 8), np.zeros(8)])

    # test_correctness: the test's identity weights and inputs.
    kernel = np.repeat(np.identity(8)[:, np.newaxis, :], 8, axis=1)
    bias = np.zeros((8, 8))
    cases["correctness"] = case({"num_heads": 8, "key_dim": 8},
                                {"query": np.identity(8)[None], "value": np.reshape(np.arange(64), (1, 8, 8)) / 100.0,
                                 "key": np.identity(8)[None]},
                                weights=[kernel, bias] * 3 + [kernel, np.zeros(8)], scores=True)

    # test_quantize_int8 (call(query, key, value): key is Keras' value argument there).
    query = [[[1.0, 0.0], [0.0, 1.0]]]
    key = [[[0.0, 1.0], [1.0, 0.0]]]
    value = [[[1.0, 2.0], [3.0, 4.0]]]
    for gate in (False, True):
        cases[f"quantize_int8/{'gate' if gate else 'plain'}"] = case(
            {"num_heads": 3, "key_dim": 8, "use_bias": False, "use_gate": gate}, {"query": query, "value": key, "key": value}, seed=90)

    # test_multi_head_attention_output_shape_as_int / as_tuple.
    for name, out in (("int", 8), ("tuple", [8, 8])):
        cases[f"output_shape_as_{name}"] = case({"num_heads": 2, "key_dim": 16, "output_shape": out},
                                                {"query": rng.uniform(size=(2, 4, 16)), "value": rng.uniform(size=(2, 4, 16))}, seed=95)

    with open(OUT, "w") as f:
        json.dump({"source": "tools/make_keras_port_fixtures.py (tools/keras_mha_reference.py, Keras 3.15.0)", "cases": cases}, f,
                  separators=(",", ":"))
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
