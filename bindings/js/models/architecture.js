// Which transformer a Hugging Face config.json describes, as the hyperparameters and traits the
// forward needs. Each family's reading lives in its own file (families/): its config's keys, the
// options it refuses by name, and the traits (norm, rotary, MLP, residual, softcaps, windows) the
// forward, the hook points and the workflows read. Anything else is refused by name.
import { BY_MODEL_TYPE, withTraits } from './families/index.js';
import { what } from './families/common.js';

const ENCODER_TYPES = [...BY_MODEL_TYPE].filter(([, f]) => f.traits?.encoder).map(([type]) => type);
const KNOWN_DECODERS = [...BY_MODEL_TYPE.keys()].filter((type) => !ENCODER_TYPES.includes(type)).join(', ');
const KNOWN = [...BY_MODEL_TYPE.keys()].join(', ');
/** Keys of a multimodal config: what its vision tower and projector read. */
const VISION_KEYS = ['vision_config', 'vision_tower', 'mm_projector_type'];

/**
 * The hyperparameters of a parsed config.json, or a TypeError naming the model_type and
 * architectures found when they are not a family this forward runs. Encoders (bert, roberta, distilbert) only
 * with `encoders: true` (mha-wasm/models' loadModel; the page's views and generation run decoders).
 */
export function architectureOf(config, { encoders = false } = {}) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError(`${what} must be a JSON object, got ${Array.isArray(config) ? 'an array' : typeof config}`);
  }
  let family = BY_MODEL_TYPE.get(config.model_type);
  if (family?.traits?.encoder && !encoders) family = undefined;
  if (!family) {
    const found = `model_type ${JSON.stringify(config.model_type ?? null)}`
      + (config.architectures ? `, architectures ${JSON.stringify(config.architectures)}` : '');
    // A multimodal checkpoint (Gemma 3 4B+, Llava, Qwen2-VL, ...) wraps a text model we may run: say so.
    const towers = VISION_KEYS.filter((key) => config[key] !== undefined && config[key] !== null);
    const inner = config.text_config?.model_type;
    const multimodal = towers.length ? ` (${towers.join(', ')}: a vision tower, which is not supported`
      + (inner && BY_MODEL_TYPE.has(inner) ? `; its text model, model_type ${JSON.stringify(inner)}, loads from a checkpoint of that text model alone)` : ')') : '';
    throw new TypeError(`${what}: ${found}${multimodal} is not a supported architecture; supported model_type: ${encoders ? KNOWN : KNOWN_DECODERS}`);
  }
  return withTraits(family.architecture(config));
}
