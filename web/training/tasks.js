// The training data: the same generated tasks as tools/train_demo_model.py (template sentences that
// reuse made-up names, repeated passages and repeated random-letter blocks for induction, bracketed
// phrases), with the mix of tasks chosen by the user, or windows of the user's own text. Also the
// fixed held-out sets the head scores are measured on. Drawn from the seeded Random (random.js).

const DETERMINERS = ['the', 'a', 'my', 'your', 'this', 'that', 'every', 'one'];
const ADJECTIVES = ['big', 'small', 'red', 'old', 'new', 'happy', 'quiet', 'green', 'fast', 'tiny', 'blue', 'warm'];
const NOUNS = ['cat', 'dog', 'bird', 'house', 'tree', 'car', 'book', 'river', 'garden', 'friend', 'city', 'door',
  'window', 'table', 'apple', 'teacher', 'child', 'boat', 'road', 'hill'];
const VERBS = ['sees', 'likes', 'finds', 'takes', 'paints', 'follows', 'opens', 'watches', 'helps', 'moves', 'reads',
  'builds'];
const PREPOSITIONS = ['on', 'in', 'near', 'under', 'with', 'behind', 'over', 'by'];
const CONSONANTS = 'bcdfghjklmnprstvwxz';
const VOWELS = 'aeiou';
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
export const OPENERS = '([{<';
export const CLOSERS = ')]}>';

/**
 * The default mix, train_demo_model.py's proportions: `copy` is the chance that a sequence starts
 * as one random-letter block repeated to its end; the other three are the relative weights of
 * what fills the rest (a repeat of an earlier passage, a bracketed phrase, a template sentence).
 */
export const DEFAULT_MIX = Object.freeze({ copy: 0.4, repeat: 0.25, bracket: 0.2, sentence: 0.55 });

function madeUpName(rng) {
  let name = '';
  for (let i = rng.int(2, 3); i > 0; i--) name += rng.choice(CONSONANTS) + rng.choice(VOWELS);
  return name + rng.choice(CONSONANTS);
}

function nounPhrase(rng, names) {
  if (names.length && rng.random() < 0.35) return rng.choice(names);
  const words = [rng.choice(DETERMINERS)];
  if (rng.random() < 0.4) words.push(rng.choice(ADJECTIVES));
  words.push(rng.choice(NOUNS));
  return words.join(' ');
}

function clause(rng, names) {
  const words = [nounPhrase(rng, names), rng.choice(VERBS), nounPhrase(rng, names)];
  if (rng.random() < 0.4) words.push(rng.choice(PREPOSITIONS), nounPhrase(rng, names));
  return words.join(' ');
}

/** A phrase in one of four bracket kinds, sometimes with another bracket inside. */
function bracketed(rng, names, depth = 0) {
  const kind = rng.below(4);
  const inner = [];
  for (let i = rng.int(1, 2); i > 0; i--) inner.push(nounPhrase(rng, names));
  if (depth === 0 && rng.random() < 0.3) inner.push(bracketed(rng, names, depth + 1));
  if (rng.random() < 0.5) inner.push(`${rng.choice(PREPOSITIONS)} ${nounPhrase(rng, names)}`);
  return OPENERS[kind] + inner.join(' ') + CLOSERS[kind];
}

function sentence(rng, names) {
  let text = clause(rng, names);
  if (rng.random() < 0.35) text += ` ${bracketed(rng, names)}`;
  return text + rng.choice(['. ', '. ', '! ', '? ', ', ']);
}

export function randomLetters(rng, length) {
  let text = '';
  for (let i = 0; i < length; i++) text += rng.choice(LETTERS);
  return text;
}

/** Checks a mix's four weights; returns it with defaults filled in. */
export function checkMix(mix = {}) {
  const full = { ...DEFAULT_MIX, ...mix };
  for (const [key, value] of Object.entries(full)) {
    if (!(key in DEFAULT_MIX)) throw new TypeError(`mix: unknown task '${key}'; expected ${Object.keys(DEFAULT_MIX).join(', ')}`);
    if (typeof value !== 'number' || !(value >= 0)) throw new RangeError(`mix.${key} must be a number >= 0, got ${value}`);
  }
  if (full.copy > 1) throw new RangeError(`mix.copy is a probability in [0, 1], got ${full.copy}`);
  if (full.repeat + full.bracket + full.sentence <= 0 && full.copy < 1) {
    throw new RangeError('mix: repeat, bracket and sentence cannot all be 0 unless copy is 1');
  }
  return full;
}

/** One training sequence's text of `length` characters (train_demo_model.py's training_text). */
export function trainingText(rng, length, mix = DEFAULT_MIX) {
  const names = Array.from({ length: rng.int(2, 4) }, () => madeUpName(rng));
  let text = '';
  if (rng.random() < mix.copy) {  // pure copying: random letters, then the same letters again
    const block = `${randomLetters(rng, rng.int(8, 28))} `;
    text = block.repeat(Math.floor(length / block.length) + 1);
  }
  const total = mix.repeat + mix.bracket + mix.sentence;
  while (text.length < length) {
    const roll = rng.random() * total;
    if (roll < mix.repeat && text.length > 30) {  // repeat an earlier passage, from a word start
      const starts = [];
      for (let i = 0; i < text.length - 12; i++) if (text[i] === ' ') starts.push(i + 1);
      const start = starts.length ? rng.choice(starts) : 0;
      text += `${text.slice(start, start + rng.int(12, 40)).trim()} `;
    } else if (roll < mix.repeat + mix.bracket) {
      text += `${bracketed(rng, names)} `;
    } else {
      text += sentence(rng, names);
    }
  }
  return text.slice(0, length);
}

/** Token ids of a text: <bos>, then one per character (lower-cased; unknown -> <unk>), as web/model.js. */
export function encoder(vocab) {
  const index = new Map(vocab.tokens.map((token, id) => [token, id]));
  return (text) => {
    const ids = [vocab.bos];
    for (const char of vocab.lowercase ? text.toLowerCase() : text) ids.push(index.get(char) ?? vocab.unk);
    return ids;
  };
}

/**
 * Draws training sequences of `seqLen` tokens (<bos> included): generated text in the given mix,
 * or, with `text`, windows of that text at random places (each window starts with <bos>).
 */
export class SequenceSource {
  constructor({ vocab, rng, seqLen, mix = DEFAULT_MIX, text = null }) {
    this.rng = rng;
    this.seqLen = seqLen;
    this.mix = checkMix(mix);
    this.encode = encoder(vocab);
    if (text !== null) {
      if (typeof text !== 'string') throw new TypeError(`text must be a string or null, got ${typeof text}`);
      if (text.length < seqLen) {
        throw new RangeError(`text: your text has ${text.length} characters; it needs at least seqLen (${seqLen})`);
      }
      this.textIds = this.encode(text).slice(1);
    } else {
      this.textIds = null;
    }
  }

  /** One sequence: { ids: number[seqLen], text }. */
  next() {
    const n = this.seqLen - 1;
    if (this.textIds) {
      const start = this.rng.below(this.textIds.length - n + 1);
      return { ids: [this.encode('')[0], ...this.textIds.slice(start, start + n)], text: null };
    }
    const text = trainingText(this.rng, n, this.mix);
    return { ids: this.encode(text), text };
  }

  /** `count` sequences as one Int32Array [count, seqLen], and their texts. */
  batch(count) {
    const ids = new Int32Array(count * this.seqLen);
    const texts = [];
    for (let b = 0; b < count; b++) {
      const sequence = this.next();
      ids.set(sequence.ids, b * this.seqLen);
      texts.push(sequence.text);
    }
    return { ids, texts };
  }
}

/**
 * The held-out probe for the induction score (train_demo_model.py's head_scores): <bos>, then a
 * block of `period` random letters twice. Returns Int32Array [count, 2 * period + 1].
 */
export function repeatedBlocks(vocab, rng, count, period = 30) {
  const encode = encoder(vocab);
  const ids = new Int32Array(count * (2 * period + 1));
  for (let b = 0; b < count; b++) ids.set(encode(randomLetters(rng, period).repeat(2)), b * (2 * period + 1));
  return ids;
}

/**
 * Bracket pairs of texts (each preceded by <bos>): [sequence, query, opener] where the query is the
 * token just before a closing bracket and the opener the position of the bracket it closes.
 */
export function bracketPairs(texts, length) {
  const pairs = [];
  texts.forEach((text, b) => {
    if (text === null) return;
    const stack = [];
    for (let i = 0; i < text.length; i++) {
      const pos = i + 1;  // after <bos>
      if (CLOSERS.includes(text[i]) && stack.length) {
        const opener = stack.pop();
        if (pos - 1 < length) pairs.push([b, pos - 1, opener]);
      }
      if (OPENERS.includes(text[i])) stack.push(pos);
    }
  });
  return pairs;
}
