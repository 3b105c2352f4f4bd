// mha-wasm/models typed: a checkpoint's cache, a replacing hook and the workflows, as a script
// would write them. tests/stages/40-package.sh type-checks it with tsc --strict against the
// installed package (the @ts-expect-error lines fail the check if the types stop refusing them).
import { init } from 'mha-wasm';
import type { Tensor } from 'mha-wasm';
import { activationPatching, directLogitAttribution, headScores, loadModelFromFolder } from 'mha-wasm/models';
import type { ActivationCache, HookedModel, PatchingSweep } from 'mha-wasm/models';

const mha = await init();
const model: HookedModel = await loadModelFromFolder(mha, './gpt2');
const ids: number[] = model.tokenizer.encode('the cat met a dog. the cat', { prependBos: false });
const { logits, cache }: { logits: Tensor | null; cache: ActivationCache } = await model.runWithCache(ids, { names: (name) => name.endsWith('hook_pattern') });
// @ts-expect-error: logits is null for an encoder without its masked-LM head, so it must be checked
logits.shape;
if (!logits) throw new Error('a decoder always has logits');
const [, positions, vocab] = logits.shape;
const zeroHead = (activation: Tensor): void => {
  for (let p = 0; p < positions; p++) activation.data.fill(0, (p * model.config.numHeads + 1) * model.config.headDim, (p * model.config.numHeads + 2) * model.config.headDim);
};
await model.runWithHooks(ids, { hooks: { 'blocks.0.attn.hook_z': zeroHead } });
const over: PatchingSweep = 'head_out';
const patched: Tensor = await activationPatching(model, { clean: ids, corrupted: ids, answer: 1, wrong: 2, over });
// @ts-expect-error: a sweep's name is one of five
await activationPatching(model, { clean: ids, corrupted: ids, over: 'heads' });
const { heads } = directLogitAttribution(model, cache, { answer: 1, wrong: 2 });
const induction: Tensor = headScores(model, cache, 'induction');
// @ts-expect-error: head scores come in three kinds
headScores(model, cache, 'copying');
console.log(vocab, patched.shape, heads.shape, induction.shape, cache.names.length);
model.dispose();
