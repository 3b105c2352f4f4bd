// Keras' Tokenizer(num_words) and pad_sequences(maxlen, padding='post'), as the tutorial uses them.
// Tokenizer: lower case, its default filters replaced by spaces, split on spaces; word_index from 1
// by count (ties: first seen); texts_to_sequences keeps only words with index < num_words (no OOV
// token, so rarer and unseen words are dropped). pad_sequences: zeros after (padding='post'), and
// Keras' default truncating='pre' (a longer sentence keeps its last maxlen words).
export const TOKENIZER_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n';

/** The words of a text as Keras' text_to_word_sequence splits them. */
export function wordsOf(text) {
  let clean = text.toLowerCase();
  for (const c of TOKENIZER_FILTERS) clean = clean.split(c).join(' ');
  return clean.split(' ').filter((w) => w.length > 0);
}

/** { wordIndex: Map(word -> index from 1), numWords, encode(text) -> ids, encodeAll(texts, maxLen) -> Int32Array }. */
export function fitTokenizer(texts, { numWords = 1000 } = {}) {
  const counts = new Map();
  for (const text of texts) for (const w of wordsOf(text)) counts.set(w, (counts.get(w) ?? 0) + 1);
  // Map keeps insertion order and Array.prototype.sort is stable: ties stay first-seen first.
  const ordered = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a));
  const wordIndex = new Map(ordered.map((w, i) => [w, i + 1]));
  const encode = (text) => wordsOf(text).map((w) => wordIndex.get(w)).filter((i) => i !== undefined && i < numWords);
  return {
    wordIndex, numWords, encode,
    /** pad_sequences(maxlen, padding='post', truncating='pre') of every text: [texts.length * maxLen] ids. */
    encodeAll(list, maxLen = 32) {
      const out = new Int32Array(list.length * maxLen);
      list.forEach((text, row) => {
        const ids = encode(text);
        out.set(ids.slice(Math.max(0, ids.length - maxLen)), row * maxLen);
      });
      return out;
    },
  };
}
