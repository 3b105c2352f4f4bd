// What the package computes in Node for the demo's default model, written out step by step
// (not through web/model.js's forward), so the page's numbers are checked against an independent path.
import { readFile } from 'node:fs/promises';
import { init, readSafetensors } from '../../bindings/js/index.js';
import { sinusoidalPositions } from '../../web/model.js';

const modelDir = new URL('../../web/model/', import.meta.url);

/**
 * Per layer: per-head weights [H, L, L] and head-averaged weights [L, L], for token ids (and an
 * optional key padding mask), computed with the package's MultiHeadAttention.
 */
export async function referenceAttention(ids, padding = null) {
  const mha = await init();
  const { tensors, metadata } = readSafetensors(await readFile(new URL('demo-model.safetensors', modelDir)));
  const E = Number(metadata.dModel);
  const H = Number(metadata.numHeads);
  const L = ids.length;
  const x = sinusoidalPositions(L, E);
  const embedding = tensors['tok_embed.weight'].data;
  ids.forEach((id, pos) => {
    for (let i = 0; i < E; i++) x[pos * E + i] += embedding[id * E + i];
  });
  const result = [];
  for (let l = 0; l < Number(metadata.numLayers); l++) {
    const layer = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });
    try {
      const keys = ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'];
      layer.loadStateDict(Object.fromEntries(keys.map((k) => [k, tensors[`layers.${l}.${k}`].data])));
      const options = { causal: true, needWeights: true, ...(padding && { keyPaddingMask: { data: Uint8Array.from(padding), shape: [L] } }) };
      const perHead = layer.forward({ data: x, shape: [L, E] }, null, null, { ...options, averageWeights: false });
      const mean = layer.forward({ data: x, shape: [L, E] }, null, null, { ...options, averageWeights: true });
      result.push({ perHead: perHead.weights.data, mean: mean.weights.data });
      for (let i = 0; i < x.length; i++) x[i] += perHead.output.data[i];
    } finally {
      layer.dispose();
    }
  }
  return result;
}

/** The largest absolute difference between two equally long number arrays. */
export function maxDifference(a, b) {
  if (a.length !== b.length) throw new RangeError(`lengths differ: ${a.length} vs ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}
