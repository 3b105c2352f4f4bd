// The page's Sentiment mode: the Keras tutorial's classifier (web/sentiment.js, trained by
// tools/train_sentiment.py) on the sentence typed in its box. The worker runs it (its attention
// layer on mha-wasm's KerasMultiHeadAttention, on the wasm or the WebGPU module) and returns the result in the shape every view
// reads, so the grid, the large heatmap and the line view show its 4 heads over the words.
// "Train in this browser" (sentiment-training.js) trains a new one; the box then classifies with it.
import { LatestOnly } from '../latest-only.js';
import { SentimentTraining } from './sentiment-training.js';

export class SentimentMode {
  #worker;
  #$;
  #show;     // (result) => main.js shows it
  #message;  // (text | null) => main.js's message line
  #classify = new LatestOnly((text) => this.#classifyOne(text));
  /** Whether the Sentiment tab is the page's source (results of a request that outlives it are dropped). */
  active = false;

  #stepsOptions;  // () => the Steps view's ablations and patches (web/modes/steps.js), or null

  constructor({ worker, $, show, message, stepsOptions = () => null, pageBackend = () => 'wasm' }) {
    this.#stepsOptions = stepsOptions;
    this.#worker = worker;
    this.#$ = $;
    this.#show = show;
    this.#message = message;
    $('sentiment-text').addEventListener('input', () => this.run());
    this.training = new SentimentTraining({
      $,
      message,
      pageBackend,
      // The page's worker classifies with the trained weights (transferred) or the shipped ones again.
      useModel: async (which, trained = {}) => {
        const transfer = trained.tensors ? Object.values(trained.tensors).map((t) => t.data.buffer) : [];
        await this.#worker.request('sentimentModel', { which, ...trained }, transfer);
        if (this.active) await this.run();
      },
    });
  }

  /** Classifies the box's sentence; while a request is in flight only the latest text waits. */
  async run() {
    await this.#classify.run(this.#$('sentiment-text').value);
  }

  async #classifyOne(text) {
    try {
      const steps = this.#stepsOptions();  // the Steps view is open: it reads the captured steps
      const result = await this.#worker.request('sentiment', { text, capture: Boolean(steps), steps });
      if (!this.active) return;
      this.training.noteInput();
      const { label, probability } = result.sentiment;
      this.#$('sentiment-result').textContent = `${label} · p(positive) = ${probability.toFixed(3)}`;
      this.#$('sentiment-result').className = label;
      this.#show(result);
      this.#message(null);
    } catch (error) {
      this.#message(`Could not classify the sentence: ${error.message}`);
    }
  }
}
