#!/usr/bin/env python3
"""Trains the classic Keras tutorial's sentiment classifier and writes it in Keras' weight layout.

    Embedding(3001, 32) -> Conv1D(100, kernel 4, padding 'same') -> MultiHeadAttention(num_heads=4,
    key_dim=128)(x, x, x) -> Flatten -> Dense(1, sigmoid), on sentences padded to 32 tokens

Written in torch (Debian's python3-torch) with each layer following Keras' math:
  Embedding     a row lookup; Keras' default init (uniform +-0.05)
  Conv1D        'same' with an even kernel pads as TensorFlow does: (k-1)//2 = 1 step before and
                2 after; kernel [k, in, out]; no activation (Keras' default, as the tutorial)
  MHA           Keras 3's einsums: query/key/value kernels [in, heads, key_dim] + bias [heads, key_dim],
                query scaled by 1/sqrt(key_dim), scores = einsum(key, query) [B, H, T, S], softmax over S,
                output kernel [heads, value_dim, out] + bias [out]; no mask (the tutorial has none)
  Flatten/Dense [32 * 100] -> 1, sigmoid
The tokenizer is Keras' Tokenizer: lower case, its default punctuation filters (apostrophes kept),
split on spaces; index 0 = padding, 1 = out of vocabulary, then words by frequency (ties: first
seen); pad_sequences(maxlen=32, padding='post', truncating='post').

Data: generated here (so the repo can ship it, under the project's MIT licence): template
sentences about films with positive and negative adjectives, intensifiers, negation ("was not
good", "never felt boring", "not bad at all") and contrast ("the acting was great but it was too
long": the clause after "but" decides). Held-out accuracy is measured on sentences not in the
training set, overall and for negated and contrastive ones.

    apt-get install -y python3-torch libopenblas0-pthread
    /usr/bin/python3 tools/train_sentiment.py      # writes web/sentiment/ (or SENTIMENT_DIR)

OpenBLAS matters: with Debian's reference BLAS (torch's BLAS_INFO=generic) one step of 64
sentences takes ~0.7 s, with OpenBLAS ~0.1 s.
"""
import json
import math
import os
import random
import re
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_demo_model import write_safetensors  # noqa: E402  (one safetensors writer for both models)

SEED = 4321
VOCAB_SIZE = 3001
MAX_LEN = 32
EMBED, FILTERS, KERNEL, HEADS, KEY_DIM = 32, 100, 4, 4, 128
TRAIN, TEST = 16000, 2000
EPOCHS, BATCH, LEARNING_RATE = 4, 64, 2e-3
OUT_DIR = os.environ.get('SENTIMENT_DIR') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'web', 'sentiment')

# ---- the corpus ----
SUBJECTS = ['the film', 'this film', 'the movie', 'this movie', 'the acting', 'the plot', 'the story', 'the script',
            'the ending', 'the soundtrack', 'the cast', 'the dialogue', 'the characters', 'the music', 'the pacing',
            'the direction', 'the show', 'this series', 'the visuals', 'the performances']
POSITIVE = ['good', 'great', 'wonderful', 'excellent', 'brilliant', 'enjoyable', 'fun', 'moving', 'beautiful', 'clever',
            'charming', 'funny', 'delightful', 'superb', 'fantastic', 'touching', 'amazing', 'gripping', 'fresh', 'lovely',
            'smart', 'perfect', 'memorable', 'powerful', 'entertaining']
NEGATIVE = ['bad', 'boring', 'awful', 'terrible', 'dull', 'weak', 'poor', 'slow', 'stupid', 'painful', 'predictable',
            'bland', 'messy', 'silly', 'tedious', 'disappointing', 'forgettable', 'lazy', 'flat', 'annoying', 'clumsy',
            'confusing', 'ugly', 'pointless', 'shallow']
INTENSIFIERS = ['', '', '', 'very ', 'really ', 'truly ', 'extremely ', 'incredibly ', 'quite ', 'so ', 'pretty ', 'rather ']
BE = {'was': ['was not', "wasn't", 'was never'], 'is': ['is not', "isn't", 'is never'],
      'felt': ['did not feel', 'never felt'], 'seemed': ['did not seem', 'never seemed']}
PHRASES = {1: ['worth watching', 'worth every minute', 'a joy to watch', 'a must see', 'worth the ticket', 'a real treat'],
           0: ['a waste of time', 'a total mess', 'a letdown', 'hard to sit through', 'too long', 'too slow',
               'too predictable', 'too loud', 'too much', 'far too long']}
VERBS = {1: ['loved', 'liked', 'enjoyed', 'adored', 'admired'], 0: ['hated', 'disliked', 'regretted', 'resented']}
NEGATED_VERBS = {1: ['did not hate', "didn't mind", 'did not regret'], 0: ['did not like', "didn't enjoy", 'did not love', 'never liked']}
NOUNS = ['film', 'movie', 'story', 'cast', 'ending', 'script', 'show', 'plot']


def adjective(rng, label):
    return rng.choice(POSITIVE if label else NEGATIVE)


def clause(rng, label, negate):
    """One clause with the given sentiment; negated clauses say the opposite word with a negation."""
    subject = rng.choice(SUBJECTS)
    kind = rng.random()
    if kind < 0.6:
        be = rng.choice(list(BE))
        word = adjective(rng, 1 - label if negate else label)
        if negate:
            if rng.random() < 0.2:
                return f'{subject} {be} not {word} at all'
            return f'{subject} {rng.choice(BE[be])} {rng.choice(INTENSIFIERS)}{word}'
        return f'{subject} {be} {rng.choice(INTENSIFIERS)}{word}'
    if kind < 0.8:
        if negate:
            return f'i {rng.choice(NEGATED_VERBS[label])} {subject}'
        return f'i {rng.choice(VERBS[label])} {subject}'
    if negate:  # "not a waste of time", "not worth watching"
        return f'{subject} was not {rng.choice(PHRASES[1 - label])}'
    return f'{subject} was {rng.choice(PHRASES[label])}'


def example(rng):
    """(text, label, kind): kind is 'plain', 'negated' or 'contrast'."""
    label = rng.randrange(2)
    roll = rng.random()
    if roll < 0.3:  # contrast: the clause after "but" decides; the first one mostly disagrees
        first = clause(rng, 1 - label if rng.random() < 0.8 else label, rng.random() < 0.25)
        second = clause(rng, label, rng.random() < 0.25)
        if rng.random() < 0.3:
            return f'although {first}, {second}', label, 'contrast'
        return f'{first} but {second}', label, 'contrast'
    if roll < 0.55:
        return clause(rng, label, True), label, 'negated'
    if roll < 0.65:
        return f'a {rng.choice(INTENSIFIERS)}{adjective(rng, label)} {rng.choice(NOUNS)}', label, 'plain'
    return clause(rng, label, False), label, 'plain'


# ---- Keras' Tokenizer and pad_sequences ----
FILTERS_RE = re.compile('[' + re.escape('!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n') + ']')


def words_of(text):
    return [w for w in FILTERS_RE.sub(' ', text.lower()).split(' ') if w]


def build_vocabulary(texts):
    counts, first = {}, {}
    for text in texts:
        for w in words_of(text):
            counts[w] = counts.get(w, 0) + 1
            first.setdefault(w, len(first))
    ordered = sorted(counts, key=lambda w: (-counts[w], first[w]))
    return ['<pad>', '<oov>'] + ordered[:VOCAB_SIZE - 2]


def encode(text, index):
    ids = [index.get(w, 1) for w in words_of(text)][:MAX_LEN]
    return ids + [0] * (MAX_LEN - len(ids))


# ---- the model, in Keras' layouts ----
def glorot(shape, fan_in, fan_out, generator):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return nn.Parameter(torch.empty(shape).uniform_(-limit, limit, generator=generator))


class Sentiment(nn.Module):
    def __init__(self, generator):
        super().__init__()
        self.embeddings = nn.Parameter(torch.empty(VOCAB_SIZE, EMBED).uniform_(-0.05, 0.05, generator=generator))
        self.conv_kernel = glorot((KERNEL, EMBED, FILTERS), KERNEL * EMBED, KERNEL * FILTERS, generator)
        self.conv_bias = nn.Parameter(torch.zeros(FILTERS))
        # Keras' EinsumDense initializes like a Dense of the flattened kernel.
        self.query_kernel = glorot((FILTERS, HEADS, KEY_DIM), FILTERS, HEADS * KEY_DIM, generator)
        self.key_kernel = glorot((FILTERS, HEADS, KEY_DIM), FILTERS, HEADS * KEY_DIM, generator)
        self.value_kernel = glorot((FILTERS, HEADS, KEY_DIM), FILTERS, HEADS * KEY_DIM, generator)
        self.query_bias = nn.Parameter(torch.zeros(HEADS, KEY_DIM))
        self.key_bias = nn.Parameter(torch.zeros(HEADS, KEY_DIM))
        self.value_bias = nn.Parameter(torch.zeros(HEADS, KEY_DIM))
        self.output_kernel = glorot((HEADS, KEY_DIM, FILTERS), HEADS * KEY_DIM, FILTERS, generator)
        self.output_bias = nn.Parameter(torch.zeros(FILTERS))
        self.dense_kernel = glorot((MAX_LEN * FILTERS, 1), MAX_LEN * FILTERS, 1, generator)
        self.dense_bias = nn.Parameter(torch.zeros(1))

    def forward(self, ids):
        x = self.embeddings[ids]                                              # [B, T, 32]
        padded = nn.functional.pad(x, (0, 0, (KERNEL - 1) // 2, KERNEL - 1 - (KERNEL - 1) // 2))
        x = sum(padded[:, k:k + MAX_LEN] @ self.conv_kernel[k] for k in range(KERNEL)) + self.conv_bias
        q = torch.einsum('btf,fhd->bthd', x, self.query_kernel) + self.query_bias
        k = torch.einsum('bsf,fhd->bshd', x, self.key_kernel) + self.key_bias
        v = torch.einsum('bsf,fhd->bshd', x, self.value_kernel) + self.value_bias
        q = q / math.sqrt(KEY_DIM)
        scores = torch.softmax(torch.einsum('bshd,bthd->bhts', k, q), dim=-1)
        attended = torch.einsum('bhts,bshd->bthd', scores, v)
        y = torch.einsum('bthd,hdo->bto', attended, self.output_kernel) + self.output_bias
        return (y.reshape(len(ids), -1) @ self.dense_kernel + self.dense_bias)[:, 0]  # logits

    def keras_weights(self):
        """Keras' weight names (model.get_weights() order: embedding, conv1d, mha, dense)."""
        return {
            'embedding/embeddings': self.embeddings,
            'conv1d/kernel': self.conv_kernel, 'conv1d/bias': self.conv_bias,
            'multi_head_attention/query/kernel': self.query_kernel, 'multi_head_attention/query/bias': self.query_bias,
            'multi_head_attention/key/kernel': self.key_kernel, 'multi_head_attention/key/bias': self.key_bias,
            'multi_head_attention/value/kernel': self.value_kernel, 'multi_head_attention/value/bias': self.value_bias,
            'multi_head_attention/attention_output/kernel': self.output_kernel,
            'multi_head_attention/attention_output/bias': self.output_bias,
            'dense/kernel': self.dense_kernel, 'dense/bias': self.dense_bias,
        }


PROBES = ['the film was not good at all', 'the film was good', 'not bad at all', 'the acting was great but it was too long',
          'the plot was slow but the ending was wonderful', 'i loved this movie', 'i did not like this movie',
          'a truly awful film', 'although the cast was brilliant, the script was lazy', 'this movie was a waste of time']


def main():
    started = time.time()
    torch.manual_seed(SEED)
    torch.set_num_threads(int(os.environ.get('SENTIMENT_THREADS', '2')))
    rng = random.Random(SEED)
    train = [example(rng) for _ in range(TRAIN)]
    seen = {text for text, _, _ in train}
    held_out_rng, test = random.Random(SEED + 1), []
    while len(test) < TEST:  # held out: sentences the training set does not contain
        text, label, kind = example(held_out_rng)
        if text not in seen:
            test.append((text, label, kind))
    vocabulary = build_vocabulary(text for text, _, _ in train)
    index = {w: i for i, w in enumerate(vocabulary)}
    to_tensors = lambda rows: (torch.tensor([encode(t, index) for t, _, _ in rows]), torch.tensor([float(l) for _, l, _ in rows]))
    x_train, y_train = to_tensors(train)
    x_test, y_test = to_tensors(test)

    generator = torch.Generator().manual_seed(SEED)
    model = Sentiment(generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(TRAIN, generator=generator)
        total = 0.0
        for start in range(0, TRAIN, BATCH):
            batch = order[start:start + BATCH]
            loss = nn.functional.binary_cross_entropy_with_logits(model(x_train[batch]), y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        print(f'epoch {epoch + 1}: loss {total / TRAIN:.4f}  {time.time() - started:.0f}s', flush=True)

    model.eval()
    with torch.no_grad():
        predicted = (torch.sigmoid(model(x_test)) > 0.5).float()
        probes = torch.sigmoid(model(torch.tensor([encode(t, index) for t in PROBES]))).tolist()
    correct = (predicted == y_test).tolist()
    accuracy = {kind: round(sum(c for c, (_, _, k) in zip(correct, test) if kind in ('all', k))
                            / sum(1 for _, _, k in test if kind in ('all', k)), 4)
                for kind in ('all', 'plain', 'negated', 'contrast')}
    print('held-out accuracy:', accuracy)
    for text, p in zip(PROBES, probes):
        print(f'  {p:.3f}  {text}')

    os.makedirs(OUT_DIR, exist_ok=True)
    write_safetensors(os.path.join(OUT_DIR, 'sentiment.safetensors'), model.keras_weights(),
                      {'architecture': 'Embedding(3001, 32) -> Conv1D(100, 4, same) -> MultiHeadAttention(4, 128) -> Flatten -> Dense(1, sigmoid)'})
    with open(os.path.join(OUT_DIR, 'vocab.json'), 'w') as f:
        json.dump({'words': vocabulary, 'padding': 0, 'oov': 1, 'maxLength': MAX_LEN, 'pad': 'post', 'truncate': 'post',
                   'filters': '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n', 'lower': True}, f, indent=0)
    with open(os.path.join(OUT_DIR, 'metrics.json'), 'w') as f:
        json.dump({'seed': SEED, 'trainSentences': TRAIN, 'heldOutSentences': TEST, 'epochs': EPOCHS,
                   'heldOutAccuracy': accuracy,
                   'heldOutCounts': {k: sum(1 for _, _, kind in test if k in ('all', kind)) for k in ('all', 'plain', 'negated', 'contrast')},
                   'probes': [{'text': t, 'probability': round(p, 4)} for t, p in zip(PROBES, probes)],
                   'seconds': round(time.time() - started)}, f, indent=1)
    print(f'wrote {OUT_DIR} in {time.time() - started:.0f}s')


if __name__ == '__main__':
    main()
