// A checkpoint's tokenizer.json through Hugging Face's own JavaScript tokenizers
// (@huggingface/tokenizers: byte-level BPE as GPT-2's, SentencePiece-style BPE as Llama's, and
// the rest of tokenizer.json's pipeline). No DOM: worker and Node.
import { Tokenizer } from '@huggingface/tokenizers';

export class CheckpointTokenizer {
  #tokenizer;

  /** @param json the parsed tokenizer.json */
  constructor(json) {
    try {
      this.#tokenizer = new Tokenizer(json, {});
    } catch (error) {
      throw new TypeError(`tokenizer.json: ${error.message}`);
    }
  }

  /** { ids, labels }: the token ids (with the special tokens tokenizer.json adds) and each token's text. */
  encode(text) {
    const { ids } = this.#tokenizer.encode(text);
    return { ids, labels: ids.map((id) => this.decodeOne(id)) };
  }

  /** One token as text (byte-level and '▁' pieces made readable). */
  decodeOne(id) {
    return this.#tokenizer.decode([id], { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  /** The text of `ids`; skipSpecial leaves out the special tokens (Llama's <s>). */
  decode(ids, { skipSpecial = false } = {}) {
    return this.#tokenizer.decode(ids, { skip_special_tokens: skipSpecial, clean_up_tokenization_spaces: false });
  }
}
