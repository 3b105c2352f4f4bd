// The Keras tutorial's sentiment classifier (tools/train_sentiment.py) on mha-wasm's
// KerasMultiHeadAttention: prints the label, the probability and, per attention head, the words
// it attends to most (the mean weight the sentence's words give each word).
//   node examples/sentiment.mjs ["the film was not good at all"]
import { readFile } from 'node:fs/promises';

import { init, readSafetensors } from 'mha-wasm';
import { SentimentModel } from '../web/sentiment.js';

const text = process.argv[2] ?? 'the film was not good at all';
const dir = new URL('../web/sentiment/', import.meta.url);
const mha = await init();
const model = new SentimentModel(mha, readSafetensors(await readFile(new URL('sentiment.safetensors', dir))),
  JSON.parse(await readFile(new URL('vocab.json', dir), 'utf8')));
try {
  const prediction = model.predict(text);
  console.log(`${JSON.stringify(text)}: ${prediction.label} (p(positive) = ${prediction.probability.toFixed(4)})`);
  model.topWords(prediction).forEach((top, head) => {
    console.log(`  head ${head} attends to: ${top.map(({ word, weight }) => `${word} ${weight.toFixed(2)}`).join(', ')}`);
  });
} finally {
  model.dispose();
}
