#!/usr/bin/python3
"""Trains the demo page's default model and measures what each of its attention heads does.

The model is a tiny attention-only, character-level Transformer:
    x = token_embedding[tokens] + sinusoidal_positions
    for each layer: x = x + nn.MultiheadAttention(x, x, x, causal)     (batch_first)
    logits = unembed(x)
so the page can run exactly the same computation with mha-wasm layers and a few lines of JS.

The training text is generated here (fixed seed): template sentences that reuse a few made-up
names (only copying can predict them), repeated passages (induction), and bracketed phrases
(bracket matching). Run with Debian's python3-torch:  /usr/bin/python3 tools/train_demo_model.py

Writes into web/model/:
  demo-model.safetensors   the weights (PyTorch state-dict names)
  vocab.json               the tokenizer (one character per token)
  heads.json               per-head scores on held-out data, and a description of each head
  reference.json           a reference input and the logits PyTorch computes for it (JS parity test)
"""
import json
import math
import os
import random
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

SEED = 1234
D_MODEL = 64
N_HEADS = 4
N_LAYERS = 2
SEQ_LEN = int(os.environ.get('DEMO_TRAIN_SEQ_LEN', '64'))  # tokens per training sequence, <bos> included
MAX_POSITION = 1024    # training sequences are also placed at positions up to this
TRAIN_SEQUENCES = 20000
BATCH = 16
STEPS = int(os.environ.get('DEMO_TRAIN_STEPS', '4000'))
LEARNING_RATE = 3e-3
OUT_DIR = os.environ.get('DEMO_MODEL_DIR') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'web', 'model')

BOS, UNK = '<bos>', '<unk>'
CHARS = list(" abcdefghijklmnopqrstuvwxyz0123456789.,!?'-:;()[]{}<>\n")
VOCAB = [BOS, UNK] + CHARS
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}
OPENERS, CLOSERS = '([{<', ')]}>'

# A small grammar: enough structure for bigram-ish predictions on typed English.
DETERMINERS = ['the', 'a', 'my', 'your', 'this', 'that', 'every', 'one']
ADJECTIVES = ['big', 'small', 'red', 'old', 'new', 'happy', 'quiet', 'green', 'fast', 'tiny', 'blue', 'warm']
NOUNS = ['cat', 'dog', 'bird', 'house', 'tree', 'car', 'book', 'river', 'garden', 'friend', 'city', 'door',
         'window', 'table', 'apple', 'teacher', 'child', 'boat', 'road', 'hill']
VERBS = ['sees', 'likes', 'finds', 'takes', 'paints', 'follows', 'opens', 'watches', 'helps', 'moves', 'reads',
         'builds']
PREPOSITIONS = ['on', 'in', 'near', 'under', 'with', 'behind', 'over', 'by']
CONSONANTS, VOWELS = 'bcdfghjklmnprstvwxz', 'aeiou'


def tokenize(text):
    """<bos> followed by one token per character (lower-cased; unknown characters -> <unk>)."""
    return [TOKEN_ID[BOS]] + [TOKEN_ID.get(c, TOKEN_ID[UNK]) for c in text.lower()]


def made_up_name(rng):
    return ''.join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(rng.randint(2, 3))) \
        + rng.choice(CONSONANTS)


def noun_phrase(rng, names):
    if names and rng.random() < 0.35:
        return rng.choice(names)
    words = [rng.choice(DETERMINERS)]
    if rng.random() < 0.4:
        words.append(rng.choice(ADJECTIVES))
    words.append(rng.choice(NOUNS))
    return ' '.join(words)


def clause(rng, names):
    words = [noun_phrase(rng, names), rng.choice(VERBS), noun_phrase(rng, names)]
    if rng.random() < 0.4:
        words += [rng.choice(PREPOSITIONS), noun_phrase(rng, names)]
    return ' '.join(words)


def bracketed(rng, names, depth=0):
    """A phrase in one of four bracket kinds, sometimes with another bracket inside."""
    kind = rng.randrange(4)
    inner = [noun_phrase(rng, names) for _ in range(rng.randint(1, 2))]
    if depth == 0 and rng.random() < 0.3:
        inner.append(bracketed(rng, names, depth + 1))
    if rng.random() < 0.5:
        inner.append(rng.choice(PREPOSITIONS) + ' ' + noun_phrase(rng, names))
    return OPENERS[kind] + ' '.join(inner) + CLOSERS[kind]


def sentence(rng, names):
    text = clause(rng, names)
    if rng.random() < 0.35:
        text += ' ' + bracketed(rng, names)
    return text + rng.choice(['. ', '. ', '! ', '? ', ', '])


def random_letters(rng, length):
    return ''.join(rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(length))


def training_text(rng, length):
    """One training sequence's text: sentences, made-up names, repeated passages, brackets."""
    names = [made_up_name(rng) for _ in range(rng.randint(2, 4))]
    text = ''
    if rng.random() < 0.4:  # pure copying: random letters, then the same letters again
        block = random_letters(rng, rng.randint(8, 28)) + ' '
        text = block * (length // len(block) + 1)
    while len(text) < length:
        roll = rng.random()
        if roll < 0.25 and len(text) > 30:  # repeat an earlier passage, from a word start
            starts = [i + 1 for i, c in enumerate(text[:-12]) if c == ' ']
            start = rng.choice(starts) if starts else 0
            text += text[start:start + rng.randint(12, 40)].strip() + ' '
        elif roll < 0.45:
            text += bracketed(rng, names) + ' '
        else:
            text += sentence(rng, names)
    return text[:length]


def sinusoidal_positions(length, dim):
    """The Transformer paper's positions, computed in float64 and rounded to float32 (as the page does)."""
    position = np.arange(length, dtype=np.float64)[:, None]
    frequency = np.power(10000.0, -np.arange(0, dim, 2, dtype=np.float64) / dim)
    table = np.zeros((length, dim), dtype=np.float64)
    table[:, 0::2] = np.sin(position * frequency)
    table[:, 1::2] = np.cos(position * frequency)
    return torch.from_numpy(table.astype(np.float32))


def causal_mask(length):
    return torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)  # True = blocked


class AttentionOnlyTransformer(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.tok_embed = nn.Embedding(vocab_size, D_MODEL)
        self.layers = nn.ModuleList(
            nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True) for _ in range(N_LAYERS))
        self.unembed = nn.Linear(D_MODEL, vocab_size)

    def forward(self, tokens, need_weights=False, position_offset=0):
        length = tokens.shape[1]
        x = self.tok_embed(tokens) + sinusoidal_positions(position_offset + length, D_MODEL)[position_offset:]
        mask = causal_mask(length)
        all_weights = []
        for layer in self.layers:
            out, weights = layer(x, x, x, attn_mask=mask, need_weights=need_weights, average_attn_weights=False)
            x = x + out
            all_weights.append(weights)
        return self.unembed(x), all_weights


def write_safetensors(path, tensors, metadata):
    """safetensors: u64 header length, JSON header (dtype/shape/offsets), raw little-endian data."""
    header, blobs, offset = {'__metadata__': metadata}, [], 0
    for name in sorted(tensors):
        data = tensors[name].detach().contiguous().numpy().astype('<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(tensors[name].shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header_bytes = json.dumps(header, separators=(',', ':')).encode()
    header_bytes += b' ' * (-len(header_bytes) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(header_bytes)))
        f.write(header_bytes)
        for blob in blobs:
            f.write(blob)


# ---- measuring what each head does (held-out data, never seen in training) ----

def head_scores(model, rng):
    """Per layer and head: the mean attention on the position each pattern predicts."""
    model.eval()
    scores = {k: np.zeros((N_LAYERS, N_HEADS)) for k in
              ('previous_token', 'induction', 'duplicate_token', 'bracket', 'bos', 'self')}
    counts = {k: 0 for k in scores}
    with torch.no_grad():
        # previous token, <bos>, self: ordinary held-out training-style text
        tokens = torch.tensor([tokenize(training_text(rng, SEQ_LEN - 1)) for _ in range(64)])
        _, weights = model(tokens, need_weights=True)
        for layer, w in enumerate(weights):  # w: [B, H, L, S]
            idx = torch.arange(1, SEQ_LEN)
            scores['previous_token'][layer] = w[:, :, idx, idx - 1].mean(dim=(0, 2)).numpy()
            scores['bos'][layer] = w[:, :, 1:, 0].mean(dim=(0, 2)).numpy()
            scores['self'][layer] = w[:, :, idx, idx].mean(dim=(0, 2)).numpy()

        # induction / duplicate: <bos> + random letters r + r again; in the second copy, the
        # induction target is the token after the earlier occurrence, the duplicate target the occurrence.
        period = 30
        tokens = torch.tensor([tokenize(random_letters(rng, period) * 2) for _ in range(64)])
        _, weights = model(tokens, need_weights=True)
        query = torch.arange(period + 1, 2 * period + 1)
        for layer, w in enumerate(weights):
            scores['induction'][layer] = w[:, :, query, query - period + 1].mean(dim=(0, 2)).numpy()
            scores['duplicate_token'][layer] = w[:, :, query, query - period].mean(dim=(0, 2)).numpy()

        # bracket: from the token just before a closing bracket (the query that must predict which
        # bracket closes), attention on the matching opener
        texts = [training_text(rng, SEQ_LEN - 1) for _ in range(128)]
        tokens = torch.tensor([tokenize(t) for t in texts])
        _, weights = model(tokens, need_weights=True)
        pairs = []  # (sequence, query position, opener position)
        for b, text in enumerate(texts):
            stack = []
            for i, c in enumerate(text):
                pos = i + 1  # after <bos>
                if c in CLOSERS and stack:
                    pairs.append((b, pos - 1, stack.pop()))
                if c in OPENERS:
                    stack.append(pos)
        bs, qs, os_ = (torch.tensor(v) for v in zip(*pairs))
        for layer, w in enumerate(weights):
            scores['bracket'][layer] = w[bs, :, qs, os_].mean(dim=0).numpy()

        # The same two patterns in long inputs (the page takes 1000+ tokens; training saw 64 at a time):
        # previous token over 512 tokens of text, induction with a 200-letter block repeated.
        tokens = torch.tensor([tokenize(training_text(rng, 511)) for _ in range(8)])
        _, weights = model(tokens, need_weights=True)
        idx = torch.arange(1, 512)
        scores['previous_token_512'] = np.stack([w[:, :, idx, idx - 1].mean(dim=(0, 2)).numpy() for w in weights])
        period = 200
        tokens = torch.tensor([tokenize(random_letters(rng, period) * 2) for _ in range(8)])
        _, weights = model(tokens, need_weights=True)
        query = torch.arange(period + 1, 2 * period + 1)
        scores['induction_400'] = np.stack([w[:, :, query, query - period + 1].mean(dim=(0, 2)).numpy() for w in weights])
    return {k: v.round(4).tolist() for k, v in scores.items()}


# A score is "high" when it clearly beats what spreading attention would give (bos: almost all).
ROLES = [
    ('induction', 0.25, 'induction: attends to the token after an earlier occurrence of the current token (copies what came next)'),
    ('duplicate_token', 0.25, 'duplicate token: attends to an earlier occurrence of the current token'),
    ('bracket', 0.25, 'bracket matching: before a closing bracket, attends to the open bracket it closes'),
    ('previous_token', 0.35, 'previous token: attends to the token just before'),
    ('self', 0.5, 'current token: attends mostly to itself'),
    ('bos', 0.6, 'resting: attends mostly to <bos> (a no-op)'),
]


def describe_heads(scores):
    heads = []
    for layer in range(N_LAYERS):
        for head in range(N_HEADS):
            mine = {k: scores[k][layer][head] for k in scores}
            ratio = {k: mine[k] / threshold for k, threshold, _ in ROLES}  # roles judged on 64-token data
            best = max(ROLES, key=lambda r: ratio[r[0]])
            role = best[0] if ratio[best[0]] >= 1 else 'mixed'
            text = best[2] if role != 'mixed' else 'mixed: no single pattern stands out'
            heads.append({'layer': layer, 'head': head, 'role': role, 'description': text, 'scores': mine})
    return heads


def reference_case(model):
    """A fixed input and PyTorch's logits for it, for the page's JS parity test."""
    text = 'the cat sees zorvak (by the old tree). the cat sees zor'
    tokens = torch.tensor([tokenize(text)])
    with torch.no_grad():
        logits, weights = model(tokens, need_weights=True)
    return {
        'text': text,
        'tokens': tokens[0].tolist(),
        'logits': [round(float(v), 6) for v in logits[0].flatten()],
        'logitsShape': list(logits[0].shape),
        'lastRowWeights': [[w[0, h, -1].tolist() for h in range(N_HEADS)] for w in weights],
    }


def main():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    # One thread: with Debian's reference BLAS a second thread on a shared machine only slows it down.
    torch.set_num_threads(int(os.environ.get('DEMO_TRAIN_THREADS', '1')))
    rng = random.Random(SEED)
    started = time.time()

    data = torch.tensor([tokenize(training_text(rng, SEQ_LEN - 1)) for _ in range(TRAIN_SEQUENCES)])
    model = AttentionOnlyTransformer(len(VOCAB))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=LEARNING_RATE, total_steps=STEPS, pct_start=0.1)
    batch_rng = torch.Generator().manual_seed(SEED)
    for step in range(1, STEPS + 1):
        model.train()
        batch = data[torch.randint(0, TRAIN_SEQUENCES, (BATCH,), generator=batch_rng)]
        # Half the batches sit at a random place in the first MAX_POSITION positions, so the heads
        # learn patterns that hold at any position (the page takes texts far longer than SEQ_LEN).
        offset = 0 if step % 2 else int(torch.randint(0, MAX_POSITION - SEQ_LEN, (1,), generator=batch_rng))
        logits, _ = model(batch[:, :-1], position_offset=offset)
        loss = nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 250 == 0 or step == 1:
            print(f'step {step:5d}  loss {loss.item():.3f}  {time.time() - started:6.1f}s', flush=True)

    held_out = random.Random(SEED + 1)
    model.eval()
    with torch.no_grad():
        test = torch.tensor([tokenize(training_text(held_out, SEQ_LEN - 1)) for _ in range(256)])
        logits, _ = model(test[:, :-1])
        test_loss = nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), test[:, 1:].reshape(-1)).item()
    scores = head_scores(model, held_out)
    heads = describe_heads(scores)

    os.makedirs(OUT_DIR, exist_ok=True)
    config = {'dModel': D_MODEL, 'numHeads': N_HEADS, 'numLayers': N_LAYERS, 'positions': 'sinusoidal',
              'trainedSeqLen': SEQ_LEN, 'trainedPositions': MAX_POSITION}
    write_safetensors(os.path.join(OUT_DIR, 'demo-model.safetensors'), model.state_dict(),
                      {k: str(v) for k, v in config.items()})
    with open(os.path.join(OUT_DIR, 'vocab.json'), 'w') as f:
        json.dump({'tokens': VOCAB, 'bos': TOKEN_ID[BOS], 'unk': TOKEN_ID[UNK], 'lowercase': True}, f, indent=1)
    with open(os.path.join(OUT_DIR, 'heads.json'), 'w') as f:
        json.dump({'config': config, 'seed': SEED, 'steps': STEPS, 'heldOutLoss': round(test_loss, 4),
                   'scoreDefinitions': {
                       'previous_token': 'mean weight on position i-1 (held-out generated text)',
                       'induction': 'mean weight on the token after the earlier occurrence, second copy of a repeated random-letter block',
                       'duplicate_token': 'mean weight on the earlier occurrence itself, same data',
                       'bracket': 'mean weight on the matching open bracket, from the token just before a closing bracket',
                       'bos': 'mean weight on <bos>',
                       'self': 'mean weight on the query position itself',
                       'previous_token_512': 'previous_token over 512-token texts',
                       'induction_400': 'induction with a 200-letter block repeated (400 tokens)'},
                   'heads': heads}, f, indent=1)
    with open(os.path.join(OUT_DIR, 'reference.json'), 'w') as f:
        json.dump(reference_case(model), f)

    print(f'held-out loss {test_loss:.3f}; {time.time() - started:.0f}s')
    for h in heads:
        print(f"layer {h['layer']} head {h['head']}: {h['role']:16s}",
              ' '.join(f'{k}={v:.2f}' for k, v in h['scores'].items()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
