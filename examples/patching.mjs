// Activation patching and head scores on a Hugging Face checkpoint of your own, with mha-wasm/models:
//   node examples/patching.mjs <checkpoint folder> ["clean text"] ["corrupted text"]
// The folder holds config.json, model.safetensors (or the index with its shards) and tokenizer.json
// (GPT-2, Llama, Mistral, Qwen2, Pythia, Gemma, Gemma 2 or Phi-3). The two texts must give as many
// tokens. Prints the model's next token for each text, which heads matter (patching each head's
// output from the clean run into the corrupted one), and the most induction-like heads.
import { init } from 'mha-wasm';
import { activationPatching, headScores, loadModelFromFolder } from 'mha-wasm/models';

const [folder, clean = 'When Mary and John went to the store, John gave a drink to',
  corrupted = 'When Mary and John went to the store, Mary gave a drink to'] = process.argv.slice(2);
if (!folder) {
  console.error('usage: node examples/patching.mjs <checkpoint folder> ["clean text"] ["corrupted text"]');
  process.exit(2);
}

const mha = await init();
const model = await loadModelFromFolder(mha, folder);
try {
  const { numLayers, numHeads, vocabSize } = model.config;
  const cleanIds = model.tokenizer.encode(clean), corruptedIds = model.tokenizer.encode(corrupted);
  const top = async (ids) => {
    const { logits } = await model.forward(ids);
    const last = logits.data.subarray(logits.data.length - vocabSize);
    return last.indexOf(Math.max(...last));
  };
  const answer = await top(cleanIds), wrong = await top(corruptedIds);
  console.log(`${model.config.family}: ${numLayers} layers x ${numHeads} heads; next token: clean ${JSON.stringify(model.tokenizer.decode([answer]))}, corrupted ${JSON.stringify(model.tokenizer.decode([wrong]))}`);

  // 1 = patching the head in restores the clean run's logit difference, 0 = it changes nothing.
  const patched = await activationPatching(model, { clean: cleanIds, corrupted: corruptedIds, answer, wrong, over: 'head_out' });
  const ranked = [...patched.data.keys()].sort((a, b) => Math.abs(patched.data[b]) - Math.abs(patched.data[a])).slice(0, 5);
  console.log('heads that matter most (patched head_out):',
    ranked.map((i) => `L${Math.floor(i / numHeads)}H${i % numHeads} ${patched.data[i].toFixed(3)}`).join(', '));

  const { cache } = await model.runWithCache(cleanIds, { names: (name) => name.endsWith('attn.hook_pattern') });
  const induction = headScores(model, cache, 'induction');
  const best = induction.data.indexOf(Math.max(...induction.data));
  console.log(`most induction-like head: L${Math.floor(best / numHeads)}H${best % numHeads} (score ${induction.data[best].toFixed(3)})`);
} finally {
  model.dispose();
}
