#!/usr/bin/python3
"""PyTorch's side of the training benchmark (bench/train-throughput.mjs): the demo model of
tools/train_demo_model.py trained as the page's trainer does by default (AdamW, constant learning
rate after a linear warm-up, batch 16 x 64 tokens, every second batch at a random position offset),
on train_demo_model.py's own generated data, one thread. Prints one JSON line:
{ tokensPerSecond, msPerStep, steps, threads, blas, curve: [[step, loss, best layer-1 induction]] }.
  /usr/bin/python3 tools/bench_training_torch.py [steps] [eval_every]
BENCH_LR (default 1e-2, the page's default) and BENCH_OFFSETS=0 (no position offsets) change the settings;
BENCH_CLOCK=cpu times the steps in CPU time of this process (time.process_time: every thread's) instead
of wall time, for a shared machine.
With eval_every > 0 it also measures layer 1's induction score (train_demo_model.head_scores' data)
every eval_every steps, outside the timed part.
"""
import json
import os
import random
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_demo_model as demo  # noqa: E402


def induction_score(model, rng, period=30, count=16):
    model.eval()
    with torch.no_grad():
        tokens = torch.tensor([demo.tokenize(demo.random_letters(rng, period) * 2) for _ in range(count)])
        _, weights = model(tokens, need_weights=True)
        query = torch.arange(period + 1, 2 * period + 1)
        scores = weights[-1][:, :, query, query - period + 1].mean(dim=(0, 2))
    model.train()
    return float(scores.max())


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    eval_every = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    batch, seq_len, warmup = 16, demo.SEQ_LEN, 50
    lr = float(os.environ.get('BENCH_LR', '1e-2'))
    offsets = os.environ.get('BENCH_OFFSETS', '1') == '1'
    clock = time.process_time if os.environ.get('BENCH_CLOCK') == 'cpu' else time.perf_counter
    torch.set_num_threads(1)
    torch.manual_seed(1)
    rng = random.Random(1)
    model = demo.AttentionOnlyTransformer(len(demo.VOCAB))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    held_out = random.Random(1235)
    curve = []
    timed = 0.0
    for step in range(1, steps + 1):
        data = torch.tensor([demo.tokenize(demo.training_text(rng, seq_len - 1)) for _ in range(batch)])
        offset = 0 if step % 2 or not offsets else rng.randrange(demo.MAX_POSITION - seq_len)
        started = clock()
        for group in optimizer.param_groups:
            group['lr'] = lr * min(1, step / warmup)
        logits, _ = model(data[:, :-1], position_offset=offset)
        loss = nn.functional.cross_entropy(logits.reshape(-1, len(demo.VOCAB)), data[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        timed += clock() - started
        if eval_every and step % eval_every == 0:
            curve.append([step, round(loss.item(), 4), round(induction_score(model, held_out), 4), round(timed, 2)])
            print(json.dumps(curve[-1]), file=sys.stderr, flush=True)
    # Debian's torch calls the system BLAS; Debian's alternatives pick the library behind it.
    blas = os.path.realpath('/usr/lib/x86_64-linux-gnu/libblas.so.3')
    print(json.dumps({'clock': 'cpu' if clock is time.process_time else 'wall', 'learningRate': lr, 'positionOffsets': offsets, 'tokensPerSecond': steps * batch * (seq_len - 1) / timed, 'msPerStep': 1000 * timed / steps,
                      'steps': steps, 'threads': torch.get_num_threads(), 'blas': blas, 'torch': torch.__version__,
                      'curve': curve}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
