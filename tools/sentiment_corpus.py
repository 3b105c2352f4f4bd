#!/usr/bin/env python3
"""Writes the sentiment corpus the JavaScript training (examples/train-sentiment.mjs, the demo's
"Train in this browser") uses: sentences from tools/train_sentiment.py's generator (the same
templates, the project's MIT licence), as raw text and labels, so JavaScript tokenizes them the way
the tutorial does (Keras' Tokenizer(num_words=1000), pad_sequences(maxlen=32, padding='post')).

    /usr/bin/python3 tools/sentiment_corpus.py     # writes web/sentiment-train/corpus.json

2400 training sentences (the tutorial's model.fit data size; fit holds out 20% for validation)
and 600 held-out test sentences that the training set does not contain.
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_sentiment import example  # noqa: E402  (one sentence generator for Python and JavaScript)

SEED, TRAIN, TEST = 2026, 2400, 600
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'web', 'sentiment-train', 'corpus.json')


def main():
    rng = random.Random(SEED)
    train = [example(rng) for _ in range(TRAIN)]
    seen = {text for text, _, _ in train}
    test, held_out_rng = [], random.Random(SEED + 1)
    while len(test) < TEST:
        text, label, kind = example(held_out_rng)
        if text not in seen:
            test.append((text, label, kind))
    pack = lambda rows: {'texts': [t for t, _, _ in rows], 'labels': [l for _, l, _ in rows], 'kinds': [k for _, _, k in rows]}
    with open(OUT, 'w') as f:
        json.dump({'seed': SEED, 'source': 'tools/train_sentiment.py example()', 'train': pack(train), 'test': pack(test)}, f)
    print(f'wrote {OUT}: {TRAIN} training and {TEST} held-out sentences')


if __name__ == '__main__':
    main()
