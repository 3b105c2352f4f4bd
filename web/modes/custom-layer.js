// The page's Your layer mode: the user's own attention layer (a state dict in .safetensors) run on
// the user's token embeddings (.json or .npy) by the worker (web/custom-layer.js), shown in every
// view. A model family's preset fills the options (rotary, sliding window, ALiBi, softcap), which
// stay editable. main.js wires it in with the worker and callbacks, as the other modes.
import { FAMILY_PRESETS } from '../custom-layer.js';
import { readFile } from '../files.js';

export class CustomLayerMode {
  #$;
  /**
   * main.js's side: { worker, show(result) (main.js shows it; the page's source becomes 'custom'),
   * message(text | null, kind) (the message line), failed(text) (reports a failed run),
   * wantsSteps() (whether the Steps view is open: the run then captures the steps), stepsOptions()
   * (the Steps view's ablations and patches, web/modes/steps.js, or null) }.
   */
  #page;

  constructor(page) {
    const { $ } = page;
    this.#$ = $;
    this.#page = { wantsSteps: () => false, stepsOptions: () => null, ...page };
    $('byo-family').addEventListener('change', () => this.#applyFamily($('byo-family').value));
    $('custom-panel').addEventListener('submit', (event) => {
      event.preventDefault();
      this.run();
    });
  }

  /** The "Your layer" options of today's models (custom-layer.js inferConfig); rotary dims blank = the whole head. */
  #variants() {
    const $ = this.#$;
    const number = (id) => Number($(id).value) || 0;
    return {
      rotaryDim: $('byo-rotary').checked ? (number('byo-rotary-dim') || -1) : 0,
      rotaryInterleaved: $('byo-rotary-pairs').checked,
      slidingWindow: number('byo-window'),
      alibi: $('byo-alibi').checked,
      softcap: number('byo-softcap'),
    };
  }

  /** A model family's preset fills the option fields (they stay editable). */
  #applyFamily(name) {
    const $ = this.#$;
    const p = FAMILY_PRESETS[name];
    $('byo-causal').checked = p.causal;
    $('byo-rotary').checked = p.rotaryDim !== 0;
    $('byo-rotary-dim').value = p.rotaryDim > 0 ? String(p.rotaryDim) : '';
    $('byo-rotary-pairs').checked = p.rotaryInterleaved;
    $('byo-window').value = p.slidingWindow ? String(p.slidingWindow) : '';
    $('byo-alibi').checked = p.alibi;
    $('byo-softcap').value = p.softcap ? String(p.softcap) : '';
  }

  /** Runs the chosen files with the panel's options and shows the result. */
  async run() {
    const $ = this.#$;
    try {
      const embeddingsFile = await readFile($('byo-embeddings'), 'token embeddings (.json or .npy)');
      const weightsFile = await readFile($('byo-weights'), 'state dict (.safetensors)');
      const result = await this.#page.worker.request('custom', {
        embeddingsFile, weightsFile,
        numHeads: Number($('byo-heads').value),
        prefix: $('byo-prefix').value,
        causal: $('byo-causal').checked,
        variants: this.#variants(),
        capture: this.#page.wantsSteps(),  // the Steps view reads the steps
        steps: this.#page.stepsOptions(),
      });
      const select = $('byo-prefix');
      select.replaceChildren(...result.prefixes.map((p) => new Option(p || '(top level)', p, false, p === result.prefix)));
      this.#page.show(result);
      const { embedDim, numHeads, numKvHeads } = result.config;
      this.#page.message(`Loaded ${weightsFile.name}${result.prefix ? ` (layer '${result.prefix}')` : ''}: embedDim ${embedDim}, `
        + `${numHeads} heads${numKvHeads < numHeads ? `, ${numKvHeads} key/value heads` : ''}, ${result.labels.length} tokens.`, 'info');
    } catch (error) {
      this.#page.failed(error.message);
    }
  }
}
