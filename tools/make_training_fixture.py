#!/usr/bin/python3
"""The first steps of the page's trainer (web/training/), repeated in PyTorch: a fixture for
tests/js/training-parity.test.js.

For each case, tools/training-inputs.mjs gives the JS trainer's settings, initial parameters and
batches; this script builds train_demo_model.py's model (nn.Embedding, nn.MultiheadAttention
layers, nn.Linear) from those parameters, clips the gradients' norm (clip_grad_norm_) and runs
torch.optim.AdamW with the same learning rate and beta1 each step, and records each step's loss (before the update) and gradient norm, and the
parameters' absolute sums after the last update. The JS test recomputes the same steps from the seed and compares.
Run with Debian's python3-torch:  /usr/bin/python3 tools/make_training_fixture.py
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_demo_model import causal_mask, sinusoidal_positions  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
OUT = os.path.join(ROOT, 'tests', 'js', 'training-reference.json')
CASES = [
    {'name': 'defaults, constant schedule with warm-up', 'steps': 12,
     'settings': {'seed': 5, 'batchSize': 4, 'seqLen': 32, 'warmupSteps': 4}},
    {'name': 'OneCycleLR as train_demo_model.py (no clipping), 3 layers of 2 heads, d 32', 'steps': 12,
     'settings': {'seed': 6, 'batchSize': 3, 'seqLen': 24, 'schedule': 'onecycle', 'steps': 40, 'learningRate': 0.01, 'clipGradNorm': 0,
                  'dModel': 32, 'numHeads': 2, 'numLayers': 3}},
]


class Model(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, num_layers):
        super().__init__()
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(nn.MultiheadAttention(d_model, num_heads, batch_first=True) for _ in range(num_layers))
        self.unembed = nn.Linear(d_model, vocab_size)

    def forward(self, tokens, offset, positions):
        length = tokens.shape[1]
        x = self.tok_embed(tokens) + positions[offset:offset + length]
        mask = causal_mask(length)
        for layer in self.layers:
            out, _ = layer(x, x, x, attn_mask=mask, need_weights=False)
            x = x + out
        return self.unembed(x)


def abs_sum(name, value):
    """sum |value|; for in_proj_bias without its key third: softmax ignores the key bias, its gradient
    is rounding noise, and Adam turns any noise into steps of the learning rate's size."""
    value = value.double()
    if name.endswith('in_proj_bias'):
        d = value.shape[0] // 3
        value = torch.cat([value[:d], value[2 * d:]])
    return float(value.abs().sum())


def run_case(case):
    inputs = json.loads(subprocess.run(
        ['node', os.path.join(ROOT, 'tools', 'training-inputs.mjs'), json.dumps(case['settings']), str(case['steps'])],
        check=True, capture_output=True, text=True).stdout)
    s = inputs['settings']
    model = Model(inputs['vocabSize'], s['dModel'], s['numHeads'], s['numLayers'])
    state = {k: torch.tensor(v, dtype=torch.float32).reshape(model.state_dict()[k].shape) for k, v in inputs['params'].items()}
    model.load_state_dict(state)
    positions = sinusoidal_positions(max(s['maxPosition'] if s['positionOffsets'] else 0, s['seqLen']) + s['seqLen'], s['dModel'])
    optimizer = torch.optim.AdamW(model.parameters(), lr=s['learningRate'], weight_decay=s['weightDecay'])
    losses, grad_norms = [], []
    for batch in inputs['batches']:
        ids = torch.tensor(batch['ids']).reshape(s['batchSize'], s['seqLen'])
        offset = batch['offsets'][0]
        assert all(o == offset for o in batch['offsets'])
        logits = model(ids[:, :-1], offset, positions)
        loss = nn.functional.cross_entropy(logits.reshape(-1, inputs['vocabSize']), ids[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        grad_norms.append(float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters()))))
        if s['clipGradNorm'] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), s['clipGradNorm'])
        for group in optimizer.param_groups:
            group['lr'] = batch['lr']
            group['betas'] = (batch['beta1'], group['betas'][1])
        optimizer.step()
        losses.append(loss.item())
    final = {k: abs_sum(k, v) for k, v in model.state_dict().items()}
    result = {'name': case['name'], 'settings': case['settings'], 'steps': case['steps'],
            'losses': losses, 'gradNorms': grad_norms, 'finalAbsSums': final,
            'schedule': [[b['lr'], b['beta1']] for b in inputs['batches']]}
    if s['schedule'] == 'onecycle':
        result['torchSchedule'] = torch_one_cycle(s['learningRate'], s['steps'])
    return result


def torch_one_cycle(max_lr, total_steps):
    """PyTorch's own OneCycleLR (as train_demo_model.py uses it): [lr, beta1] of every step."""
    optimizer = torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=max_lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=max_lr, total_steps=total_steps, pct_start=0.1)
    values = []
    for _ in range(total_steps):
        values.append([optimizer.param_groups[0]['lr'], optimizer.param_groups[0]['betas'][0]])
        optimizer.step()
        schedule.step()
    return values


def main():
    torch.set_num_threads(1)
    cases = [run_case(c) for c in CASES]
    with open(OUT, 'w') as f:
        json.dump({'generatedBy': 'tools/make_training_fixture.py', 'torch': torch.__version__, 'cases': cases}, f, indent=1)
    for c in cases:
        print(c['name'], ' '.join(f'{v:.4f}' for v in c['losses']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
