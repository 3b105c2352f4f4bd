// The models' quantization error (docs/quantized.md#whole-models): the logits of every tiny
// checkpoint of tests/fixtures/your-model/ and of a random GPT-2-small-sized one (bench/
// gpt2-small-checkpoint.mjs), loaded at weightDtype f16, int8 and q4, against the same checkpoint
// loaded at f32. Two figures per cell: the largest |logit - f32 logit| over the largest |f32 logit|
// (every position, every token), and the share of positions whose top token is the f32 one.
//   node tools/models-quantization-error.mjs [--gpt2-small] [--json]
import { writeSafetensors } from '../bindings/js/formats/safetensors.js';
import { init } from '../bindings/js/index.js';
import { loadModel } from '../bindings/js/models/index.js';
import { CONFIG, V, checkpointTensors } from '../bench/gpt2-small-checkpoint.mjs';
import { checkpointFiles, expectedValues, FIXTURES } from '../tests/js/your-model-fixtures.js';

const DTYPES = ['f16', 'int8', 'q4'];

/** { relative, top1 } of `logits` [L, V] against `reference`. */
export function logitError(logits, reference, V) {
  let worst = 0, scale = 0, agree = 0;
  const L = reference.length / V;
  for (let i = 0; i < reference.length; i++) {
    worst = Math.max(worst, Math.abs(logits[i] - reference[i]));
    scale = Math.max(scale, Math.abs(reference[i]));
  }
  const argmax = (a, p) => { let best = p * V; for (let j = p * V; j < (p + 1) * V; j++) if (a[j] > a[best]) best = j; return best; };
  for (let p = 0; p < L; p++) agree += argmax(logits, p) === argmax(reference, p) ? 1 : 0;
  return { relative: worst / scale, top1: agree / L };
}

/** Each dtype's error on `files` for `ids`. */
export async function quantizationErrors(mha, files, ids) {
  const reference = await loadModel(mha, files, { weightDtype: 'f32' });
  const want = (await reference.forward(ids)).logits;
  reference.dispose();
  const out = {};
  for (const weightDtype of DTYPES) {
    const model = await loadModel(mha, files, { weightDtype });
    out[weightDtype] = logitError((await model.forward(ids)).logits.data, want.data, want.shape[2]);
    model.dispose();
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const mha = await init({ threads: 1 });
  const rows = [];
  for (const name of FIXTURES) rows.push([name, await quantizationErrors(mha, checkpointFiles(name), expectedValues(name).ids)]);
  if (process.argv.includes('--gpt2-small')) {
    const files = [
      { name: 'config.json', bytes: new TextEncoder().encode(JSON.stringify(CONFIG)) },
      { name: 'model.safetensors', bytes: writeSafetensors(checkpointTensors('f32')) },
      { name: 'tokenizer.json', bytes: checkpointFiles('gpt2').find((f) => f.name === 'tokenizer.json').bytes },
    ];
    const ids = Array.from({ length: 64 }, (_, i) => (i * 7919 + 104729) % V);
    rows.push(['GPT-2 small shape, random (64 tokens)', await quantizationErrors(mha, files, ids)]);
  }
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(Object.fromEntries(rows)));
  } else {
    console.log(`| checkpoint | ${DTYPES.map((d) => `${d}: max error / max logit, top-1 agreement`).join(' | ')} |`);
    console.log(`| --- | ${DTYPES.map(() => '---').join(' | ')} |`);
    for (const [name, errors] of rows) {
      console.log(`| ${name} | ${DTYPES.map((d) => `${errors[d].relative.toExponential(1)}, ${(100 * errors[d].top1).toFixed(0)}%`).join(' | ')} |`);
    }
  }
}
