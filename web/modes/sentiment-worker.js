// The worker's side of the Sentiment mode (web/modes/sentiment.js is the page's side):
//   sentiment { text, capture, steps } -> the classifier on one sentence, as a result the views draw
//   sentimentModel { which: 'shipped' | 'trained', tensors, vocab } -> { which }
// The classifier in use is the shipped one (loaded on its first use) or one trained in the page. No DOM.
import { readSafetensors } from '../../bindings/js/index.js';
import { SentimentModel } from '../sentiment.js';
import { zPatch } from '../z-patch.js';
import { fetchOk } from '../worker-context.js';

/** A sentiment result's steps without the batch of one: [1, ...] shapes lose their 1. */
function unbatched(captured) {
  return Object.fromEntries(Object.entries(captured).map(([name, t]) => [name, { data: t.data, shape: t.shape.slice(1) }]));
}

/** The Sentiment mode's messages, on `context` (a WorkerContext). */
export function sentimentWorker(context) {
  let sentiment = null;  // the classifier in use
  const models = { shipped: null, trained: null };

  /** The Sentiment mode: the classifier on one sentence, as a result the page's views can draw. */
  async function classify({ text, capture = false, steps = null }) {
    const { backends } = context;
    if (!sentiment) {
      const [bytes, vocab] = await Promise.all([fetchOk('sentiment/sentiment.safetensors'), fetchOk('sentiment/vocab.json', 'json')]);
      sentiment = models.shipped = new SentimentModel(context.mha, readSafetensors(bytes), vocab);
    }
    const started = performance.now();
    // The Steps view's ablated and patched heads (layer 0: the classifier's one attention layer); a
    // patch's second sentence pads to the same 32 tokens, so any sentence fits.
    let patch = null;
    if (steps && (steps.ablated.length || steps.patched.length)) {
      const heads = (pairs) => pairs.filter(([l]) => l === 0).map(([, h]) => h);
      const [, T, H, Dv] = sentiment.zShape;
      // (the second sentence's z on the backend that runs the view)
      patch = async (on) => {
        const other = !steps.patched.length ? null : on === 'webgpu'
          ? (await sentiment.predictAsync(steps.patchText, backends.gpu, { capture: true })).captured.z
          : sentiment.predict(steps.patchText, { capture: true }).captured.z;
        return zPatch(heads(steps.ablated), heads(steps.patched), other?.data, T, H, Dv, true);
      };
    }
    const { backend, ...p } = await context.onBackend(capture || patch ? 'steps' : 'sentiment', async (on) => {
      const changes = patch && await patch(on);
      return on === 'webgpu' ? sentiment.predictAsync(text, backends.gpu, { capture, patch: changes })
        : sentiment.predict(text, { capture, patch: changes });
    });
    return {
      text, ids: Array.from(p.ids), labels: p.labels, wasmMs: p.wasmMs, totalMs: performance.now() - started, backend,
      layers: [{ weights: p.weights, output: p.output, ...(capture && { input: p.input, captured: unbatched(p.captured) }) }],
      padding: null,  // the tutorial's model has no mask: its words attend to the padding too
      prediction: [{ token: 'positive', probability: p.probability }, { token: 'negative', probability: 1 - p.probability }],
      causal: false,
      config: { embedDim: 100, numHeads: 4, numKvHeads: 4 },
      description: 'The classifier\'s attention layer: Keras\' MultiHeadAttention(num_heads=4, key_dim=128) over the '
        + 'Conv1D features of the words (padded to 32 tokens; no mask, as in the tutorial).',
      sentiment: { text, label: p.label, probability: p.probability, words: p.words, model: sentiment === models.trained ? 'trained' : 'shipped' },
    };
  }

  /**
   * The Sentiment tab's model: 'trained' with { tensors, vocab } (the training worker's weights under
   * Keras' names and its tokenizer) replaces the one trained before; 'shipped' goes back to web/sentiment/.
   */
  async function useModel({ which, tensors, vocab }) {
    if (which === 'trained' && tensors) {
      const trained = new SentimentModel(context.mha, { tensors }, vocab);
      models.trained?.dispose();
      models.trained = trained;
    }
    if (which === 'shipped') {
      sentiment = models.shipped;  // null: loaded by the next classify
      return { which };
    }
    if (which !== 'trained' || !models.trained) throw new Error(`sentiment model: ${which === 'trained' ? 'nothing trained yet' : `unknown model '${which}'`}`);
    sentiment = models.trained;
    return { which };
  }

  return { sentiment: classify, sentimentModel: useModel };
}
