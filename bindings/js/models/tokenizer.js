// A checkpoint's tokenizer.json through Hugging Face's own JavaScript tokenizers
// (@huggingface/tokenizers: byte-level BPE as GPT-2's, SentencePiece-style BPE as Llama's, and
// the rest of tokenizer.json's pipeline), with TransformerLens' BOS convention on top: `encode`
// prepends the BOS token by hand when `prependBos` (TransformerLens' `prepend_bos`), whatever
// tokenizer.json's post-processor would add. No DOM: worker and Node.
import { Tokenizer } from '@huggingface/tokenizers';
import { checkKnownKeys } from '../core/validate.js';

// TransformerLens' default_prepend_bos is False for these model types (loading_from_pretrained.py).
const NO_BOS_BY_DEFAULT = ['qwen', 'qwen2', 'qwen3', 'gpt_neox', 'phi', 'bloom'];
// Encoders take tokenizer.json's own special tokens ([CLS] … [SEP], <s> … </s>), as HookedEncoder does.
const ENCODERS = ['bert', 'roberta', 'distilbert'];

export class CheckpointTokenizer {
  #tokenizer;

  /**
   * @param json the parsed tokenizer.json
   * @param config the parsed config.json (bos_token_id, eos_token_id, model_type), or {}
   */
  constructor(json, config = {}) {
    try {
      this.#tokenizer = new Tokenizer(json, {});
    } catch (error) {
      throw new TypeError(`tokenizer.json: ${error.message}`);
    }
    // TransformerLens: the BOS token defaults to EOS where the tokenizer names none.
    this.bosTokenId = config.bos_token_id ?? config.eos_token_id ?? null;
    this.eosTokenId = config.eos_token_id ?? null;
    this.prependBos = !NO_BOS_BY_DEFAULT.includes(config.model_type);
    this.encoder = ENCODERS.includes(config.model_type);
    // The fill-mask token: [MASK] (BERT) or <mask> (RoBERTa), where tokenizer.json adds one.
    const mask = (json.added_tokens ?? []).find((t) => t.content === '[MASK]' || t.content === '<mask>');
    this.maskTokenId = mask ? mask.id : null;
  }

  /**
   * The token ids of `text`, without the special tokens tokenizer.json's post-processor adds,
   * the BOS token first when `prependBos` (default: TransformerLens' default for the model type).
   */
  encode(text, options = {}) {
    if (this.encoder) {
      // An encoder's ids as tokenizer.json's post-processor makes them: [CLS] … [SEP] (BERT).
      checkKnownKeys('tokenizer.encode', options, ['addSpecialTokens']);
      const { addSpecialTokens = true } = options;
      if (typeof text !== 'string') throw new TypeError(`tokenizer.encode: text must be a string, got ${typeof text}`);
      return this.#tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids;
    }
    checkKnownKeys('tokenizer.encode', options, ['prependBos']);
    const { prependBos = this.prependBos } = options;
    if (typeof text !== 'string') throw new TypeError(`tokenizer.encode: text must be a string, got ${typeof text}`);
    const { ids } = this.#tokenizer.encode(text, { add_special_tokens: false });
    if (!prependBos) return ids;
    if (this.bosTokenId === null) {
      throw new TypeError('tokenizer.encode: prependBos: true, but config.json names no bos_token_id or eos_token_id');
    }
    return [this.bosTokenId, ...ids];
  }

  /**
   * { ids, labels } as tokenizer.json alone encodes `text` (its post-processor's special tokens,
   * such as Llama's <s>, included), with each token's text: what the page shows.
   */
  encodeWithTemplate(text) {
    const { ids } = this.#tokenizer.encode(text);
    return { ids, labels: this.toStrTokens(ids) };
  }

  /** Each id's text on its own (TransformerLens' to_str_tokens). */
  toStrTokens(ids) {
    return Array.from(ids, (id) => this.decodeOne(id));
  }

  /** One token as text (byte-level and '▁' pieces made readable). */
  decodeOne(id) {
    return this.#tokenizer.decode([id], { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  /** The text of `ids`; skipSpecial leaves out the special tokens (Llama's <s>). */
  decode(ids, { skipSpecial = false } = {}) {
    return this.#tokenizer.decode(Array.from(ids), { skip_special_tokens: skipSpecial, clean_up_tokenization_spaces: false });
  }
}
