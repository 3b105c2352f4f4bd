// The page's Steps view: one head's attention, step by step (web/steps-view.js draws it), for a
// query token the user picks; on the models it can run again, heads can be ablated or patched
// (web/z-patch.js) and the source reruns with the change. main.js wires it in, as the other modes:
// it gives this mode `$`, a getter of what the page shows and a few callbacks, and asks it to draw.
import { displayToken } from '../heatmap.js';
import { headSteps, StepsView, stepsState } from '../steps-view.js';
import { readFile } from '../files.js';

const samePair = ([l, h]) => ([a, b]) => a === l && b === h;

export class StepsMode {
  #$;
  /**
   * main.js's side: { shown() (what the page shows: { source, result, selected: { layer, head } }),
   * isOpen() (whether the Steps view is the page's view), rerun() (runs the source shown again,
   * with this view's changes), redraw() (redraws the selected head's view), message(text | null)
   * (the message line) }.
   */
  #page;
  #view;             // the StepsView drawing the chain
  #requestedFor = null;  // the result a steps run was requested for (one request per result)
  /** The query token followed (null: the last one). */
  query = null;
  /** What the view draws (the test hook's getState().steps), or null. */
  steps = null;
  /** [layer, head] pairs whose z is zeroed ... */
  ablated = [];
  /** ... and pairs whose z comes from patchText (or, on Your layer, patchFile: { name, bytes }). */
  patched = [];
  patchText = '';
  patchFile = null;

  constructor(page) {
    const { $ } = page;
    this.#$ = $;
    this.#page = page;
    this.#view = new StepsView($, { onSelectQuery: (i) => this.#follow(i) });
    $('steps-query').addEventListener('change', () => this.#follow(Number($('steps-query').value)));
    $('steps-ablate').addEventListener('change', () => this.#toggleHead('ablated', $('steps-ablate').checked));
    $('steps-patch').addEventListener('click', async () => {
      if (this.#page.shown().source === 'custom') {
        try {
          this.patchFile = await readFile($('steps-patch-file'), 'second embeddings (.json or .npy, the shape of the first)');
        } catch (error) {
          this.#page.message(error.message);
          return;
        }
      } else {
        this.patchText = $('steps-patch-text').value;
      }
      this.#toggleHead('patched', true);
    });
    $('steps-clear').addEventListener('click', () => {
      this.clearChanges();
      this.#page.rerun();
    });
  }

  /** The view's code tab and hovered step (the test hook reads them). */
  get view() { return this.#view; }

  /** The run options for the Steps view (capture, and its ablations and patches), or null when it is closed. */
  runOptions() {
    if (!this.#page.isOpen()) return null;
    const custom = this.#page.shown().source === 'custom';
    // layer: the one whose steps the run captures (Your model captures no other: web/your-model/session.js)
    return { layer: this.#page.shown().selected.layer, ablated: this.ablated, patched: this.patched, patchText: this.patchText, ...(custom && { patchFile: this.patchFile }) };
  }

  /** The ablations and patches belong to the model they were made on: a new source drops them. */
  clearChanges() {
    this.ablated = [];
    this.patched = [];
  }

  #follow(query) {
    this.query = query;
    this.#page.redraw();
  }

  /** Adds or removes the selected [layer, head] in list, then runs the source again with the change. */
  #toggleHead(list, on) {
    const { selected } = this.#page.shown();
    const pair = [selected.layer, selected.head];
    const kept = this[list].filter((p) => !samePair(pair)(p));
    this[list] = on ? [...kept, pair] : kept;
    this.#page.rerun();
  }

  /** Draws the selected head's steps for the result shown (or asks for a run that captures them). */
  render() {
    const $ = this.#$;
    const { source, result, selected: { layer, head } } = this.#page.shown();
    const layerResult = result.layers[layer];
    const changeable = ['default', 'sentiment', 'custom', 'model'].includes(source);  // (runs it can repeat)
    $('steps-patch-row').hidden = !changeable;  // (a second input to patch from: a text, or Your layer's second embeddings)
    const custom = source === 'custom';
    $('steps-patch-text').hidden = custom;
    $('steps-patch-file').hidden = !custom;
    $('steps-patch-label').textContent = custom ? 'second embeddings (the same [L, E])'
      : source === 'model' ? 'second text (the same number of tokens)' : 'second text';
    $('steps-patch-label').htmlFor = custom ? 'steps-patch-file' : 'steps-patch-text';
    $('steps-ablate').parentElement.hidden = !changeable;
    // An encoder (Your model's BERT / RoBERTa): its heads' steps are drawn, but ablating or
    // patching one is refused by name (the controls are off, the summary says why).
    const encoder = source === 'model' && Boolean(result.encoder);
    for (const id of ['steps-ablate', 'steps-patch', 'steps-patch-text']) {
      $(id).disabled = encoder;
      $(id).title = encoder ? `not for an encoder (${result.model.family})` : '';
    }
    if (result.generation) {
      this.#renderCacheSteps();
      return;
    }
    if (!layerResult.captured) {
      this.steps = null;
      const generating = Boolean(result.generation?.running);
      $('steps-summary').textContent = source === 'train' ? 'The steps appear with the model\'s first evaluation.'
        : source === 'patching' ? 'Patching shows the clean run\'s heads; a head\'s steps (and ablating or patching it by hand) are in the Your model tab.'
        : generating ? 'The steps are drawn for the text shown once generation stops.' : 'Computing the steps…';
      if (changeable && !generating && this.#requestedFor !== result) {
        this.#requestedFor = result;
        this.#page.rerun();
      }
      return;
    }
    const { labels, padding } = result;
    const L = labels.length;
    const lastToken = L - 1 - (padding ? padding.reduce((n, p) => n + p, 0) : 0);
    const query = Math.min(L - 1, Math.max(0, this.query ?? lastToken));
    const select = $('steps-query');
    const options = labels.map((label, i) => `${i}: ${displayToken(label)}`);
    if ([...select.options].map((o) => o.text).join('\u0000') !== options.join('\u0000')) {
      select.replaceChildren(...options.map((text, i) => new Option(text, String(i))));
    }
    select.value = String(query);
    const hs = headSteps(layerResult, { head, config: result.config });
    this.#view.draw(hs, { query, labels, causal: result.causal, padding });
    this.steps = stepsState(hs, { layer, head, query });
    $('steps-ablate').checked = this.ablated.some(samePair([layer, head]));
    const changes = [
      ...this.ablated.map(([l, h]) => `L${l} H${h} ablated`),
      ...this.patched.map(([l, h]) => `L${l} H${h} patched from ${custom ? this.patchFile?.name : `'${this.patchText}'`}`),
    ];
    $('steps-summary').textContent = `Layer ${layer}, head ${head}, query ${query} '${displayToken(labels[query])}'. `
      + (encoder ? `Ablating or patching a head: not for an encoder (${result.model.family}); on one, use mha-wasm/models' runWithHooks at hook_z.`
        : changes.length && changeable ? `Changed: ${changes.join(', ')} (the prediction and later layers follow).` : '');
  }

  /** Generate: the newest token's step, its one query row against everything the cache holds. */
  #renderCacheSteps() {
    const $ = this.#$;
    const { result, selected: { layer, head } } = this.#page.shown();
    const cache = result.cacheSteps;
    $('steps-ablate').checked = this.ablated.some(samePair([layer, head]));  // (a change applies to the next Generate)
    if (!cache) {
      this.steps = null;
      $('steps-summary').textContent = 'Generate with the Steps view open to follow each new token '
        + 'reading the keys and values its cache holds.';
      return;
    }
    const { position } = cache;
    const labels = result.labels.slice(0, position + 1);
    $('steps-query').replaceChildren(new Option(`${position}: ${displayToken(labels[position])}`, String(position)));
    const hs = headSteps(cache.layers[layer], { head, config: result.config });
    this.#view.draw(hs, { query: 0, labels, causal: true, padding: null, queryOffset: position });
    this.steps = stepsState(hs, { layer, head, query: position, row: 0 });
    const { settings } = result.generation;
    // Generated with ablated or patched heads: the whole text ran again each token (web/generation.js).
    const changes = settings.changes ? [
      ...settings.changes.ablated.map(([l, h]) => `L${l} H${h} ablated`),
      ...settings.changes.patched.map(([l, h]) => `L${l} H${h} patched from '${settings.changes.patchText}'`),
    ] : [];
    $('steps-summary').textContent = `Generate: token ${position} '${displayToken(labels[position])}' (layer ${layer}, head ${head}) `
      + `reads the K and V of the ${hs.sizes.S} tokens ${settings.useCache ? 'in its cache' : 'of the whole text, recomputed (no cache)'}.`
      + (changes.length ? ` Generated with ${changes.join(', ')}: every token ran the whole text with them (the text and prediction follow).` : '');
  }

  /** What the test hook reports as getState().stepsView (less the page's tooltip). */
  hookState() {
    return {
      code: this.#view.code, hovered: this.#view.hovered,
      ablated: structuredClone(this.ablated), patched: structuredClone(this.patched), patchText: this.patchText,
      patchFile: this.patchFile?.name ?? null,
    };
  }
}
