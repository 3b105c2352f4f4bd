// The families the models entry loads, one file each: its config reading and refusals
// (architecture(config)), its weight names mapped into one per-layer form (model(), layer()), and
// the value bias TransformerLens' weight processing folds out of a head's output (valueBias()).
// transformer.js, hooked-forward.js, hook-points.js and attribution.js read only the traits an
// architecture carries (common.js), never a family's name.
import { attnOnly } from './attn-only.js';
import { bert, distilbert, roberta } from './bert.js';
import { DEFAULT_TRAITS } from './common.js';
import { gemma } from './gemma.js';
import { gemma2 } from './gemma2.js';
import { gemma3 } from './gemma3.js';
import { gpt2 } from './gpt2.js';
import { gptNeox } from './gpt-neox.js';
import { llama } from './llama.js';
import { olmo2 } from './olmo2.js';
import { phi3 } from './phi3.js';
import { qwen3 } from './qwen3.js';

export const FAMILIES = [gpt2, llama, qwen3, gptNeox, gemma, gemma2, gemma3, phi3, olmo2, bert, roberta, distilbert, attnOnly];

const byName = new Map(FAMILIES.map((f) => [f.name, f]));

/** model_type -> family, for those a config.json may name. */
export const BY_MODEL_TYPE = new Map(FAMILIES.flatMap((f) => f.modelTypes.map((type) => [type, f])));

/** The family of an architecture (architectureOf()'s result, or one built by hand with `family`). */
export function familyOf(architecture) {
  const family = byName.get(architecture.family);
  if (!family) throw new TypeError(`loadModel: unknown family ${JSON.stringify(architecture.family)}; known: ${[...byName.keys()].join(', ')}`);
  return family;
}

/** The architecture with every trait set: its own, else its family's, else the defaults. */
export function withTraits(architecture) {
  const family = familyOf(architecture);
  const a = { ...DEFAULT_TRAITS, ...family.traits, ...architecture };
  if (!a.layerWindows) a.layerWindows = Array(a.numLayers).fill(null);
  return a;
}
