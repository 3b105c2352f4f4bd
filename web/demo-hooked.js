// The page's default model (web/model.js: attention-only, character-level, sinusoidal positions)
// as mha-wasm/models' HookedModel, so that the Patching view's workflows run on it as on a
// checkpoint: its weights as an 'attn-only' checkpoint (the positions given as a table) and its
// characters as the model's tokenizer. No DOM: worker and Node.
import { modelFromCheckpoint } from '../bindings/js/models/hooked-model.js';
import { sinusoidalPositions, tokenize } from './model.js';

// The longest text the default model's HookedModel takes (its positions are a formula; this is the table's length).
const MAX_POSITIONS = 1024;

/** The default model's characters in the shape of a HookedModel's tokenizer. */
function characterTokenizer(vocab) {
  const decodeOne = (id) => vocab.tokens[id] ?? '';
  return {
    prependBos: true,
    bosTokenId: vocab.bos,
    eosTokenId: null,
    /** ids of `text`: <bos> (unless prependBos: false) and one id a character (tokenize() of web/model.js). */
    encode: (text, { prependBos = true } = {}) => tokenize(text, vocab).ids.slice(prependBos ? 0 : 1),
    encodeWithTemplate: (text) => tokenize(text, vocab),
    toStrTokens: (ids) => Array.from(ids, decodeOne),
    decodeOne,
    decode: (ids) => Array.from(ids, decodeOne).join(''),
  };
}

/**
 * A HookedModel of the default model: `weights` is readSafetensors() of demo-model.safetensors,
 * `vocab` the parsed vocab.json, `mha` the module its attention runs on (`wasm` beside a WebGPU one).
 */
export function demoHookedModel(mha, weights, vocab, { wasm = null } = {}) {
  const { tensors, metadata } = weights;
  const E = Number(metadata.dModel), H = Number(metadata.numHeads);
  const architecture = {
    family: 'attn-only', numLayers: Number(metadata.numLayers), embedDim: E, numHeads: H, numKvHeads: H,
    headDim: E / H, vocabSize: vocab.tokens.length, maxPositions: MAX_POSITIONS, hiddenDim: 0, normEps: 0,
  };
  const checkpoint = {
    architecture, config: { model_type: 'attn-only' }, dtype: 'F32', tokenizerJson: null,
    tensors: { ...tensors, 'pos_embed.weight': { dtype: 'F32', shape: [MAX_POSITIONS, E], data: sinusoidalPositions(MAX_POSITIONS, E) } },
  };
  return modelFromCheckpoint(mha, checkpoint, { wasm, tokenizer: characterTokenizer(vocab) });
}
