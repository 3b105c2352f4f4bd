// mha-wasm/models' tokenizer (bindings/js/models/tokenizer.js, over @huggingface/tokenizers) on
// each kind of tokenizer.json the families ship: byte-level BPE (GPT-2, Pythia), SentencePiece-style
// BPE with byte fallback (Llama, Mistral, Gemma), WordPiece (BERT) from the tiny checkpoints, and
// Unigram (T5 / ALBERT / XLNet-style SentencePiece, as some checkpoints' tokenizer.json hold it),
// written here: each encodes a text and decodes it back to the same text, with its special tokens.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CheckpointTokenizer } from '../../bindings/js/models/tokenizer.js';

const fixture = (name, file) => JSON.parse(readFileSync(new URL(`../fixtures/your-model/${name}/${file}`, import.meta.url), 'utf8'));
const tokenizerOf = (name) => new CheckpointTokenizer(fixture(name, 'tokenizer.json'), fixture(name, 'config.json'));

for (const [kind, name, text] of [
  ['byte-level BPE', 'gpt2', 'the cat met a dog. the cat'],
  ['byte-level BPE', 'pythia', 'the dog sat on the log.'],
  ['SentencePiece BPE with byte fallback', 'llama', 'the cat met a dog. the cat'],
  ['SentencePiece BPE with byte fallback', 'gemma', 'a cat, then a dog.'],
  ['WordPiece', 'bert', 'the cat sat on the mat.'],
]) {
  test(`${kind} (${name}): encode, then decode without the special tokens, gives the text back`, () => {
    const tokenizer = tokenizerOf(name);
    const ids = tokenizer.encode(text);
    assert.ok(ids.length > 1);
    assert.equal(tokenizer.toStrTokens(ids).length, ids.length);
    assert.equal(tokenizer.decode(ids, { skipSpecial: true }).trim(), text);
  });
}

test('byte fallback: a character outside the vocabulary becomes its UTF-8 bytes and decodes back', () => {
  const tokenizer = tokenizerOf('llama');
  const ids = tokenizer.encode('the cat é', { prependBos: false });
  const pieces = tokenizer.toStrTokens(ids);
  assert.ok(ids.length >= 4, `pieces ${JSON.stringify(pieces)}`);
  assert.equal(tokenizer.decode(ids), 'the cat é');
});

test('Unigram (SentencePiece, Metaspace): the best segmentation by piece scores, </s> appended, and back', () => {
  const pieces = [['<pad>', 0], ['</s>', 0], ['<unk>', 0], ['▁the', -1], ['▁cat', -1.5], ['▁c', -3], ['at', -3],
    ['▁sat', -2], ['▁', -2.5], ['s', -4], ['a', -4], ['t', -4], ['c', -4], ['h', -4], ['e', -4], ['.', -3]];
  const json = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: ['<pad>', '</s>', '<unk>'].map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    post_processor: { type: 'TemplateProcessing', single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }, { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      special_tokens: { '</s>': { id: '</s>', ids: [1], tokens: ['</s>'] } } },
    decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 2, vocab: pieces, byte_fallback: false },
  };
  const tokenizer = new CheckpointTokenizer(json, { model_type: 't5', eos_token_id: 1 });
  const { ids, labels } = tokenizer.encodeWithTemplate('the cat sat.');
  assert.deepEqual(ids.map((id) => pieces[id][0]), ['▁the', '▁cat', '▁sat', '.', '</s>']);  // '▁cat' (-1.5) beats '▁c' + 'at' (-6)
  assert.equal(labels.length, ids.length);
  assert.equal(ids.at(-1), 1);
  assert.equal(tokenizer.decode(ids, { skipSpecial: true }), 'the cat sat.');
});
