// The page's Web Worker: owns the mha-wasm module and every forward pass, so typing never waits
// on the computation. Messages in: { id, type: 'load' | 'run' | 'custom', ... }; out: { id, result }
// or { id, error } (the error's message is shown on the page). Big arrays are transferred, not copied.
import { init, readSafetensors, stateDictFromSafetensors } from '../bindings/js/index.js';
import { DemoModel, tokenize, topK } from './model.js';
import { attentionPrefixes, LAYER_KEYS, parseEmbeddings, runCustomLayer } from './custom-layer.js';

let mha;
let model;

async function fetchOk(url, kind) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot load ${url}: HTTP ${response.status}`);
  return kind === 'json' ? response.json() : new Uint8Array(await response.arrayBuffer());
}

async function load() {
  mha = await init();
  const [bytes, vocab, heads] = await Promise.all([
    fetchOk('model/demo-model.safetensors'), fetchOk('model/vocab.json', 'json'), fetchOk('model/heads.json', 'json'),
  ]);
  model = new DemoModel(mha, readSafetensors(bytes), vocab);
  return {
    build: { ...mha.build },
    vocab,
    heads,
    config: { embedDim: model.dModel, numHeads: model.numHeads, numKvHeads: model.numHeads, numLayers: model.numLayers },
  };
}

function run({ text, padding = 0 }) {
  const { ids, labels } = tokenize(text, model.vocab);
  // Padding positions: <bos> tokens the keyPaddingMask hides, to show how padded keys look.
  const paddingMask = padding > 0 ? new Uint8Array(ids.length + padding).fill(1, ids.length) : null;
  for (let i = 0; i < padding; i++) {
    ids.push(model.vocab.bos);
    labels.push('<pad>');
  }
  const started = performance.now();
  const { layers, logits, wasmMs } = model.forward(ids, { keyPaddingMask: paddingMask });
  const V = model.vocab.tokens.length;
  const last = ids.length - padding - 1;
  return {
    text, ids, labels, layers, wasmMs, totalMs: performance.now() - started,
    padding: paddingMask,
    prediction: topK(Array.from(logits.subarray(last * V, (last + 1) * V)), model.vocab.tokens, 5),
    causal: true,
    config: { embedDim: model.dModel, numHeads: model.numHeads, numKvHeads: model.numHeads },
  };
}

function custom({ embeddingsFile, weightsFile, numHeads, prefix, causal, variants }) {
  const embeddings = parseEmbeddings(embeddingsFile.name, embeddingsFile.bytes);
  let names;
  try {
    names = Object.keys(readSafetensors(weightsFile.bytes).tensors);
  } catch (error) {
    throw new error.constructor(`${weightsFile.name}: ${error.message}`);
  }
  const prefixes = attentionPrefixes(names);
  if (prefixes.length === 0) {
    throw new TypeError(`${weightsFile.name}: no nn.MultiheadAttention weights (in_proj_weight or q_proj_weight) among `
      + `${names.length} tensors: ${names.slice(0, 8).join(', ')}${names.length > 8 ? ', ...' : ''}`);
  }
  const chosen = prefixes.includes(prefix) ? prefix : prefixes[0];
  const stateDict = stateDictFromSafetensors(weightsFile.bytes, { prefix: chosen });
  // Keep only this layer's own keys (a deeper prefix could also match, e.g. "attn." inside "attn.sub.").
  const own = Object.fromEntries(Object.entries(stateDict).filter(([k]) => LAYER_KEYS.includes(k)));
  const started = performance.now();
  const result = runCustomLayer(mha, { embeddings, stateDict: own, numHeads, causal, variants });
  const L = embeddings.shape[0];
  return {
    ...result,
    totalMs: performance.now() - started,
    ids: null,
    labels: embeddings.labels ?? Array.from({ length: L }, (_, i) => String(i)),
    padding: embeddings.padding ?? null,
    prediction: null,
    causal,
    prefixes,
    prefix: chosen,
  };
}

const handlers = { load, run, custom };

self.onmessage = async ({ data: { id, type, ...args } }) => {
  try {
    const result = await handlers[type](args);
    const transfer = (result.layers ?? []).flatMap((l) => [l.weights.buffer, l.output.buffer]);
    self.postMessage({ id, result }, transfer);
  } catch (error) {
    self.postMessage({ id, error: { name: error?.name ?? 'Error', message: error?.message ?? String(error) } });
  }
};
