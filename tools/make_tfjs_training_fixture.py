#!/usr/bin/env python3
"""Writes tests/fixtures/tfjs-training.json: 20 Adam steps of a small model shaped like the Keras
tutorial's sentiment classifier, trained in PyTorch with the math of tools/train_sentiment.py (each
layer as Keras computes it) and with tfjs-layers' loss and optimizer, so tests/js/tfjs-training.test.js
can train the same model with mha-wasm/tfjs's layer in model.trainOnBatch and compare.

    Embedding(V, E, l2(0.001) on the embeddings) -> Conv1D(F, 4, 'same') -> MultiHeadAttention(H, Dk)
    (self-attention) -> Flatten -> Dense(1, sigmoid)

tfjs-layers' binaryCrossentropy: p clipped to [1e-7, 1 - 1e-7], logit = log(p / (1 - p)), sigmoid
cross-entropy with logits, mean over the batch; the loss reported per step adds the regularizer.
tfjs' Adam: PyTorch's update (bias-corrected moments, epsilon added to sqrt(v_hat)) with epsilon 1e-7.

    /usr/bin/python3 tools/make_tfjs_training_fixture.py
"""
import json
import math
import os

import torch

V, T, E, F, KERNEL, H, DK, BATCH, STEPS, LR, L2 = 40, 10, 6, 8, 4, 2, 5, 8, 20, 0.01, 0.001
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'fixtures', 'tfjs-training.json')


def glorot(shape, fan_in, fan_out, generator):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return torch.empty(shape, dtype=torch.float64).uniform_(-limit, limit, generator=generator).float()


def forward(w, ids):
    x = w['embedding'][ids]                                                      # [B, T, E]
    padded = torch.nn.functional.pad(x, (0, 0, (KERNEL - 1) // 2, KERNEL - 1 - (KERNEL - 1) // 2))
    x = sum(padded[:, k:k + T] @ w['conv_kernel'][k] for k in range(KERNEL)) + w['conv_bias']
    q = torch.einsum('btf,fhd->bthd', x, w['query_kernel']) + w['query_bias']
    k = torch.einsum('bsf,fhd->bshd', x, w['key_kernel']) + w['key_bias']
    v = torch.einsum('bsf,fhd->bshd', x, w['value_kernel']) + w['value_bias']
    q = q / math.sqrt(DK)
    scores = torch.softmax(torch.einsum('bshd,bthd->bhts', k, q), dim=-1)
    attended = torch.einsum('bhts,bshd->bthd', scores, v)
    y = torch.einsum('bthd,hdo->bto', attended, w['output_kernel']) + w['output_bias']
    return torch.sigmoid(y.reshape(len(ids), -1) @ w['dense_kernel'] + w['dense_bias'])   # [B, 1]


def loss_of(w, ids, labels):
    p = torch.clamp(forward(w, ids), 1e-7, 1 - 1e-7)
    logit = torch.log(p / (1 - p))
    bce = torch.relu(logit) - logit * labels + torch.log1p(torch.exp(-torch.abs(logit)))
    return bce.mean() + L2 * (w['embedding'] ** 2).sum()


def main():
    generator = torch.Generator().manual_seed(26)
    w = {
        'embedding': (torch.rand((V, E), generator=generator, dtype=torch.float64) * 0.1 - 0.05).float(),
        'conv_kernel': glorot((KERNEL, E, F), KERNEL * E, KERNEL * F, generator),
        'conv_bias': torch.zeros(F),
        'query_kernel': glorot((F, H, DK), F, H * DK, generator), 'query_bias': torch.zeros(H, DK),
        'key_kernel': glorot((F, H, DK), F, H * DK, generator), 'key_bias': torch.zeros(H, DK),
        'value_kernel': glorot((F, H, DK), F, H * DK, generator), 'value_bias': torch.zeros(H, DK),
        'output_kernel': glorot((H, DK, F), H * DK, F, generator), 'output_bias': torch.zeros(F),
        'dense_kernel': glorot((T * F, 1), T * F, 1, generator), 'dense_bias': torch.zeros(1),
    }
    initial = {name: t.flatten().tolist() for name, t in w.items()}
    params = [t.requires_grad_() for t in w.values()]
    optimizer = torch.optim.Adam(params, lr=LR, eps=1e-7)
    batches, losses = [], []
    for _ in range(STEPS):
        ids = torch.randint(0, V, (BATCH, T), generator=generator)
        labels = torch.randint(0, 2, (BATCH, 1), generator=generator).float()
        loss = loss_of(w, ids, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batches.append({'ids': ids.flatten().tolist(), 'labels': labels.flatten().tolist()})
        losses.append(loss.item())
    with open(OUT, 'w') as f:
        json.dump({
            'model': {'vocab': V, 'length': T, 'embed': E, 'filters': F, 'kernelSize': KERNEL, 'numHeads': H, 'keyDim': DK,
                      'batch': BATCH, 'steps': STEPS, 'learningRate': LR, 'l2': L2},
            'weightOrder': list(w), 'shapes': {name: list(t.shape) for name, t in w.items()},
            'initial': initial, 'batches': batches, 'losses': losses,
            'final': {name: t.detach().flatten().tolist() for name, t in w.items()},
        }, f)
    print(f'wrote {OUT}: losses {losses[0]:.5f} -> {losses[-1]:.5f}')


if __name__ == '__main__':
    main()
