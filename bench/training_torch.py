"""The PyTorch peer of the training table (bench/training.mjs): one self-attention layer's
forward alone, and forward + backward with loss = sum(output * G) and the gradients of the
input and of every weight, on one thread.

    /usr/bin/python3 bench/training_torch.py B L E H Dh [budget_ms]

Prints one JSON line: {forwardMs, stepMs, forwardCpuMs, stepCpuMs, runs, peakMB, blas, check}.
With head size E/H the layer is torch.nn.MultiheadAttention (batch_first); the Keras tutorial's
layer (head size 128 with E 100) is not one nn.MultiheadAttention can express, so it is the same
math as a module of nn.Linear projections and matmul/softmax (as Keras' own layer computes it).
Debian's python3-torch uses the system BLAS: install libopenblas0-pthread (the reference BLAS
is several times slower). The inputs and weights are bench/shapes.mjs' (trainingWeights, input
seed 11, G seed 13), so `check` can be compared with the other implementations'.
"""
import json
import os
import resource
import sys
import time

# One thread for OpenBLAS (its own pthreads) as for torch's intra-op pool; set before torch loads.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

P = 2147483647


def random_array(n, seed, scale=1.0):
    """bench/shapes.mjs randomArray (Park-Miller, s <- s * 48271 mod P), times scale, as float32."""
    block = 1024
    powers = np.empty(block, dtype=np.int64)
    a = 1
    for i in range(block):
        a = a * 48271 % P
        powers[i] = a
    s = np.empty(((n + block - 1) // block) * block, dtype=np.int64)
    last = seed
    for start in range(0, len(s), block):
        s[start:start + block] = last * powers % P  # < 2^62: no overflow
        last = int(s[start + block - 1])
    values = (s[:n] / P - 0.5).astype(np.float32)
    return (values.astype(np.float64) * scale).astype(np.float32)


def training_weights(E, H, Dh):
    """bench/shapes.mjs trainingWeights."""
    qd = H * Dh
    in_proj = random_array(3 * qd * E, 1, 2 / np.sqrt(E)).reshape(3 * qd, E)
    return {
        "in_proj_weight": in_proj,
        "in_proj_bias": random_array(3 * qd, 2, 0.1),
        "out_proj.weight": random_array(E * qd, 3, 2 / np.sqrt(qd)).reshape(E, qd),
        "out_proj.bias": random_array(E, 4, 0.1),
    }


class FreeHeadSizeAttention(nn.Module):
    """Self-attention with H heads of size Dh (q/k/v: E -> H*Dh, out: H*Dh -> E)."""

    def __init__(self, E, H, Dh):
        super().__init__()
        self.H, self.Dh = H, Dh
        self.q, self.k, self.v = (nn.Linear(E, H * Dh) for _ in range(3))
        self.out = nn.Linear(H * Dh, E)

    def load(self, w):
        qd = self.H * self.Dh
        with torch.no_grad():
            for i, linear in enumerate((self.q, self.k, self.v)):
                linear.weight.copy_(torch.from_numpy(w["in_proj_weight"][i * qd:(i + 1) * qd]))
                linear.bias.copy_(torch.from_numpy(w["in_proj_bias"][i * qd:(i + 1) * qd]))
            self.out.weight.copy_(torch.from_numpy(w["out_proj.weight"]))
            self.out.bias.copy_(torch.from_numpy(w["out_proj.bias"]))

    def forward(self, x):
        B, L, _ = x.shape
        heads = lambda t: t.view(B, L, self.H, self.Dh).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        p = torch.softmax(q @ k.transpose(-1, -2) / self.Dh ** 0.5, dim=-1)
        return self.out((p @ v).transpose(1, 2).reshape(B, L, self.H * self.Dh))


def make_layer(E, H, Dh):
    w = training_weights(E, H, Dh)
    if Dh * H == E:
        layer = nn.MultiheadAttention(E, H, batch_first=True)
        layer.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()})
        return (lambda x: layer(x, x, x, need_weights=False)[0]), layer
    layer = FreeHeadSizeAttention(E, H, Dh)
    layer.load(w)
    return layer, layer


def timed(fn, budget_ms):
    """Median wall and CPU ms of fn after one warm-up call (as bench/training-worker.mjs: a
    warm-up call over 5 s is the measurement itself)."""
    wall, cpu = [], []

    def once():
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)
        return result

    last = once()
    if wall[0] < 5000:
        wall.clear()
        cpu.clear()
        started = time.perf_counter()
        while True:
            last = once()
            elapsed = (time.perf_counter() - started) * 1e3
            if len(wall) >= 15 or elapsed >= budget_ms or (len(wall) >= 3 and wall[0] >= budget_ms / 3):
                break
    median = lambda xs: sorted(xs)[(len(xs) - 1) // 2]  # noqa: E731
    return median(wall), median(cpu), len(wall), last


def main():
    B, L, E, H, Dh = (int(a) for a in sys.argv[1:6])
    budget_ms = float(sys.argv[6]) if len(sys.argv) > 6 else 2000
    torch.set_num_threads(1)
    torch.manual_seed(0)
    attention, module = make_layer(E, H, Dh)
    names, params = zip(*module.named_parameters())
    x = torch.from_numpy(random_array(B * L * E, 11).reshape(B, L, E))
    g = torch.from_numpy(random_array(B * L * E, 13).reshape(B, L, E))

    def forward():
        with torch.no_grad():
            return attention(x)

    def step():
        xg = x.clone().requires_grad_(True)
        loss = (attention(xg) * g).sum()
        return torch.autograd.grad(loss, [xg, *params])

    fwd_ms, fwd_cpu, _, _ = timed(forward, budget_ms)
    step_ms, step_cpu, runs, grads = timed(step, budget_ms)
    d_out_weight = grads[1 + names.index("out_proj.weight" if "out_proj.weight" in names else "out.weight")]
    print(json.dumps({
        "forwardMs": fwd_ms, "stepMs": step_ms, "forwardCpuMs": fwd_cpu, "stepCpuMs": step_cpu, "runs": runs,
        "peakMB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "blas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3"), "torch": torch.__version__,
        "check": [float(grads[0].double().sum()), float(d_out_weight.double().sum())],
    }))


if __name__ == "__main__":
    main()
