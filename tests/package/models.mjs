// In a project that installed the packed tarball: mha-wasm/models from ESM and CommonJS loads the
// tiny GPT-2 checkpoint (copied beside this file as gpt2/) with the folder helper, and its hook
// points give the torch reference's values (gpt2/hooks.safetensors).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { init, readSafetensors } from 'mha-wasm';
import { headScores, loadModelFromFolder } from 'mha-wasm/models';

const folder = fileURLToPath(new URL('./gpt2/', import.meta.url));
const expected = JSON.parse(readFileSync(new URL('./gpt2/expected.json', import.meta.url), 'utf8'));
const reference = readSafetensors(readFileSync(new URL('./gpt2/hooks.safetensors', import.meta.url))).tensors;
const mha = await init({ threads: 1 });
const cjs = createRequire(import.meta.url)('mha-wasm/models');
for (const [label, load] of [['ESM', loadModelFromFolder], ['CJS', cjs.loadModelFromFolder]]) {
  const model = await load(mha, folder);
  const { cache } = await model.runWithCache(expected.ids);
  let worst = 0;
  for (const name of ['blocks.1.attn.hook_pattern', 'blocks.1.hook_resid_post', 'ln_final.hook_normalized']) {
    const want = reference[name].data, got = cache.get(name).data;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
  }
  if (!(worst < 1e-5)) throw new Error(`mha-wasm/models (${label}): hook points differ from torch's by ${worst}`);
  const scores = headScores(model, cache, 'previous_token');
  if (scores.shape.join() !== '2,4') throw new Error(`mha-wasm/models (${label}): headScores shape ${scores.shape}`);
  model.dispose();
  console.log(`mha-wasm/models (${label}): the tiny GPT-2's hook points match torch's (worst ${worst.toExponential(1)})`);
}
