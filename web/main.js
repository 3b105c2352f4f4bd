// The demo page's wiring: sends text (or the user's files) to the worker, keeps the latest result,
// draws the shared views from it (the grid, the heatmap, the line view, the outputs), and starts the
// modes (web/modes/), the backend switch and the test hook (web/test-hook.js, docs/demo.md).
//
// A mode is a class in web/modes/ that binds its own panel's events in its constructor and talks to
// the page only through what it is given: `$`, the worker, and callbacks (show a result, redraw,
// the message line). Adding one: construct it below under "the modes", and give its worker side
// (web/modes/NAME-worker.js) a line in web/worker.js' MODES; if it has a source tab (`source-NAME`
// and `NAME-panel` in index.html), give it an entry in SOURCE_TABS (what choosing the tab does), a
// line in showSource (it is shown or hidden) and an entry in SOURCES (how it runs again).
import { attentionImage, blit, drawLabeledAttention, drawOutputs, displayToken, prepareCanvas } from './heatmap.js';
import { drawLines, MAX_ROWS } from './lines.js';
import { WorkerClient } from './worker-client.js';
import { BackendSwitch } from './backend-switch.js';
import { bindExport } from './export.js';
import { download } from './files.js';
import { LatestOnly } from './latest-only.js';
import { testHook } from './test-hook.js';
import { CustomLayerMode } from './modes/custom-layer.js';
import { GenerateMode } from './modes/generate.js';
import { SentimentMode } from './modes/sentiment.js';
import { StepsMode } from './modes/steps.js';
import { YourModelMode } from './modes/your-model.js';
import { PatchingMode } from './modes/patching.js';
import { TrainMode } from './modes/train.js';

const $ = (id) => document.getElementById(id);
const worker = new WorkerClient(new URL('./worker.js', import.meta.url));

const state = {
  source: 'default',      // 'default' model, the user's 'custom' layer, the 'sentiment' classifier, or the model being trained ('train')
  info: null,             // the worker's load result: build, vocab, heads, config
  runError: null,         // the message of the latest failed run (null after a drawn one)
  result: null,           // the latest forward pass
  selected: { layer: 0, head: 0 },
  mode: 'head',           // 'head' or 'mean' (averaged over the layer's heads)
  threshold: 0,
  view: 'heatmap',        // 'heatmap', 'lines' or 'steps'
  focus: null,            // line view: hovered or locked token
  locked: false,
  linesStart: 0,
  renders: 0,
  renderMs: 0,
  meanCache: new Map(),
};

// ---- what the views read ----

function layerShape() {
  const { result } = state;
  return { L: result.labels.length, H: result.config.numHeads, E: result.config.embedDim };
}

/**
 * The matrix the views show: { data, offset, stride } of an [L, L] block whose rows are `stride`
 * apart (L, or a generated text's capacity); head 'mean' averages the layer.
 */
function matrixOf(layer, head) {
  const { L, H } = layerShape();
  const weights = state.result.layers[layer].weights;
  const stride = state.result.stride ?? L;
  if (head !== 'mean') return { data: weights, offset: head * stride * stride, stride };
  if (!state.meanCache.has(layer)) {
    const mean = new Float32Array(L * L);
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < L; i++) {
        const row = (h * stride + i) * stride;
        for (let j = 0; j < L; j++) mean[i * L + j] += weights[row + j];
      }
    }
    for (let k = 0; k < L * L; k++) mean[k] /= H;
    state.meanCache.set(layer, mean);
  }
  return { data: state.meanCache.get(layer), offset: 0, stride: L };
}

/** Row i of the shown matrix (keys 0..L-1), a view. */
function rowOf(layer, head, i) {
  const { data, offset, stride } = matrixOf(layer, head);
  return data.subarray(offset + i * stride, offset + i * stride + state.result.labels.length);
}

/** 0 = visible, 1 = hidden by the causal mask, 2 = a padding position (row or column). */
function cellState(i, j) {
  const { padding, causal } = state.result;
  if (padding && (padding[i] || padding[j])) return 2;
  return causal && j > i ? 1 : 0;
}

/** The masks the heatmaps shade: { causal, padding }. */
const masks = () => ({ causal: state.result.causal, padding: state.result.padding });

const shownHead = () => (state.mode === 'mean' ? 'mean' : state.selected.head);

function headInfo(layer, head) {
  if (state.source === 'train') return state.result.trainedHeads?.find((h) => h.layer === layer && h.head === head) ?? null;
  if (state.source !== 'default') return null;
  return state.info.heads.heads.find((h) => h.layer === layer && h.head === head) ?? null;
}

// ---- drawing ----

function renderStatus() {
  const { build } = state.info;
  const { result } = state;
  const tokens = result ? `<b>${result.labels.length}</b> tokens · ` : '';
  const timing = state.source === 'train' ? trainMode.statusHtml()
    : !result ? '' : result.generation ? generateMode.statusHtml(result.generation, state.renderMs)
    : `attention layers on ${result.backend === 'webgpu' ? 'WebGPU' : 'wasm'} <b>${result.wasmMs.toFixed(2)} ms</b> · whole forward pass `
    + `<b>${result.totalMs.toFixed(2)} ms</b> · drawing <b>${state.renderMs.toFixed(0)} ms</b>`;
  $('status').innerHTML = `build <b>${build.name}</b> · SIMD <b>${build.simd ? 'on' : 'off'}</b> · threads <b>${build.threads ? `on (${build.numThreads ?? '?'})` : 'off'}</b>`
    + `${crossOriginIsolated ? '' : ' (page not cross-origin isolated)'} · ${tokens}${timing}`;
}

function renderPrediction() {
  const list = $('prediction');
  const { prediction } = state.result;
  $('prediction-title').textContent = state.result.sentiment ? 'Sentiment' : 'Next character';
  $('prediction-panel').hidden = !prediction;
  if (!prediction) return;
  list.replaceChildren(...prediction.map(({ token, probability }) => {
    const item = document.createElement('li');
    item.innerHTML = '<span class="token"></span><span class="bar"></span><span class="p"></span>';
    item.querySelector('.token').textContent = displayToken(token);
    item.querySelector('.bar').style.width = `${(probability * 100).toFixed(1)}%`;
    item.querySelector('.p').textContent = `${(probability * 100).toFixed(1)}%`;
    return item;
  }));
}

/** A head's tile: a button with its canvas and caption (drawn by drawTile). */
function tile(layer, head) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'tile';
  button.dataset.layer = layer;
  button.dataset.head = head;
  const info = headInfo(layer, head);
  const caption = document.createElement('span');
  caption.innerHTML = `<b>L${layer} H${head}</b> `;
  caption.append(info ? info.role.replaceAll('_', ' ') : '');
  button.append(document.createElement('canvas'), caption);
  button.addEventListener('click', () => {
    state.selected = { layer, head };
    trainMode.select(layer, head);
    state.focus = null;
    state.locked = false;
    render();
  });
  return button;
}

function drawTile(button, L) {
  const layer = Number(button.dataset.layer);
  const head = Number(button.dataset.head);
  const isSelected = state.selected.layer === layer && (state.mode === 'mean' || state.selected.head === head);
  button.classList.toggle('selected', isSelected);
  const size = 104;
  const ctx = prepareCanvas(button.querySelector('canvas'), size, size);
  const pixels = Math.floor(size * (globalThis.devicePixelRatio || 1));
  const { data, offset, stride } = matrixOf(layer, head);
  blit(ctx, attentionImage(data, offset, L, L, pixels, pixels, { threshold: state.threshold, stride, ...masks() }), 0, 0, size, size);
}

let gridLayout = null;  // the tiles are rebuilt only when the layers or heads change, else redrawn

function renderGrid() {
  const { L, H } = layerShape();
  const { numKvHeads } = state.result.config;
  const perGroup = H / numKvHeads;
  const roles = state.source === 'train' ? state.result.trainedHeads?.map((h) => h.role).join() : '';
  const layout = `${state.source} ${state.result.layers.length} ${H} ${numKvHeads} ${roles}`;
  if (layout !== gridLayout) {
    gridLayout = layout;
    $('grid').replaceChildren(...state.result.layers.map((_, layer) => {
      const row = document.createElement('div');
      row.className = 'grid-layer';
      const name = document.createElement('div');
      name.className = 'layer-name';
      name.textContent = `layer ${layer}`;
      row.append(name);
      // Grouped-query attention: heads sharing one key/value head are boxed together.
      for (let g = 0; g < numKvHeads; g++) {
        const group = document.createElement('div');
        group.className = `kv-group${perGroup > 1 ? ' shared' : ''}`;
        group.dataset.label = `kv head ${g}`;
        for (let h = g * perGroup; h < (g + 1) * perGroup; h++) group.append(tile(layer, h));
        row.append(group);
      }
      return row;
    }));
  }
  for (const button of $('grid').querySelectorAll('.tile')) drawTile(button, L);
}

let heatmapGeometry = null;
let linesGeometry = null;

function renderSelected() {
  const { layer } = state.selected;
  const head = shownHead();
  const info = head === 'mean' ? null : headInfo(layer, head);
  $('selected-title').textContent = head === 'mean' ? `Layer ${layer}, averaged over heads` : `Layer ${layer}, head ${head}`;
  const { config } = state.result;
  const group = config.numKvHeads < config.numHeads && head !== 'mean'
    ? ` Shares key/value head ${Math.floor(head / (config.numHeads / config.numKvHeads))} with its group.` : '';
  $('selected-description').textContent = info
    ? `${info.description}. Scores on held-out text: ${Object.entries(info.scores).map(([k, v]) => `${k.replaceAll('_', ' ')} ${v.toFixed(2)}`).join(', ')}.${group}`
    : head === 'mean' ? 'The mean of the layer\'s per-head weights (PyTorch\'s average_attn_weights).'
      : `${state.result.description ?? (state.result.source === 'model' ? `Your model: layer ${layer}, head ${head}.` : 'Your layer.')}${group}`;
  const { data, offset, stride } = matrixOf(layer, head);
  const width = $('heatmap-panel').parentElement.clientWidth - 30;
  // Outlined: the newest token while generating, else a query row the line view (or a Patching cell) locked.
  const newest = state.result.generation ? state.result.labels.length - 1
    : state.locked && state.focus?.side === 'query' ? state.focus.index : null;
  $('heatmap-panel').hidden = state.view !== 'heatmap';
  $('lines-panel').hidden = state.view !== 'lines';
  $('steps-panel').hidden = state.view !== 'steps';
  if (state.view === 'steps') {
    stepsMode.render();
  } else if (state.view === 'heatmap') {
    heatmapGeometry = drawLabeledAttention($('heatmap'), {
      data, offset, stride, labels: state.result.labels, masks: masks(), threshold: state.threshold, maxSize: width,
      highlightRow: newest,
    });
  } else {
    const L = state.result.labels.length;
    const windowed = L > MAX_ROWS;
    // While generating, the line view follows the newest token (unless a token is locked).
    if (state.result.generation?.running && !state.locked) {
      state.linesStart = Math.max(0, L - MAX_ROWS);
      state.focus = { side: 'query', index: L - 1 };
    }
    $('lines-window-label').hidden = !windowed;
    $('lines-start').max = Math.max(0, L - MAX_ROWS);
    state.linesStart = Math.min(state.linesStart, Math.max(0, L - MAX_ROWS));
    $('lines-hint').textContent = `Hover a token to see its attention, click to lock.${windowed
      ? ` Showing tokens ${state.linesStart}–${state.linesStart + MAX_ROWS - 1} of ${L}.` : ''}`;
    linesGeometry = drawLines($('lines'), {
      data, offset, stride, labels: state.result.labels, start: state.linesStart, cellState,
      threshold: state.threshold, focus: state.focus, width: Math.min(width, 760),
    });
  }
}

/** The line view's hover, click-to-lock and window slider; the heatmap's tooltip. */
function bindViewPointers() {
  const point = (canvas, event) => {
    const rect = canvas.getBoundingClientRect();
    return [event.clientX - rect.left, event.clientY - rect.top];
  };
  $('lines-start').addEventListener('input', () => {
    state.linesStart = Number($('lines-start').value);
    renderSelected();
  });
  $('lines').addEventListener('mousemove', (event) => {
    if (state.locked || !linesGeometry) return;
    const hit = linesGeometry.hit(...point($('lines'), event));
    if (JSON.stringify(hit) !== JSON.stringify(state.focus)) {
      state.focus = hit;
      renderSelected();
    }
  });
  $('lines').addEventListener('mouseleave', () => {
    if (!state.locked && state.focus) {
      state.focus = null;
      renderSelected();
    }
  });
  $('lines').addEventListener('click', (event) => {
    const hit = linesGeometry?.hit(...point($('lines'), event));
    const same = hit && state.focus && hit.side === state.focus.side && hit.index === state.focus.index;
    state.locked = Boolean(hit) && !(state.locked && same);
    state.focus = hit;
    renderSelected();
  });
  $('heatmap').addEventListener('mousemove', (event) => {
    const tooltip = $('tooltip');
    const g = heatmapGeometry;
    if (!g) return;
    const [x, y] = point($('heatmap'), event);
    const i = Math.floor((y - g.margin) / g.cell);
    const j = Math.floor((x - g.margin) / g.cell);
    if (i < 0 || j < 0 || i >= g.L || j >= g.L) {
      tooltip.hidden = true;
      return;
    }
    const { labels } = state.result;
    const s = cellState(i, j);
    const value = s === 1 ? 'masked (causal)' : s === 2 ? 'padding' : rowOf(state.selected.layer, shownHead(), i)[j].toFixed(4);
    tooltip.textContent = `query ${i} '${displayToken(labels[i])}' → key ${j} '${displayToken(labels[j])}': ${value}`;
    tooltip.style.left = `${x + 14}px`;
    tooltip.style.top = `${y + 10}px`;
    tooltip.hidden = false;
  });
  $('heatmap').addEventListener('mouseleave', () => { $('tooltip').hidden = true; });
}

function renderOutputs() {
  const { L, E } = layerShape();
  $('outputs-hint').textContent = `layer ${state.selected.layer}'s attention output [${L} tokens × ${E} features], `
    + 'one column per token (blue negative, red positive)';
  drawOutputs($('outputs'), {
    data: state.result.layers[state.selected.layer].output, L, E,
    width: $('outputs').parentElement.clientWidth - 2,
  });
}

function render() {
  if (!state.result) return;
  const started = performance.now();
  renderPrediction();
  renderGrid();
  renderSelected();
  renderOutputs();
  state.renderMs = performance.now() - started;
  renderStatus();
  state.renders += 1;
  for (const waiter of renderWaiters.splice(0)) waiter();
}

/** The controls every view follows: head or layer mean, threshold, the view tabs, the window's size. */
function bindViewControls() {
  for (const radio of document.querySelectorAll('input[name=mode]')) {
    radio.addEventListener('change', () => {
      state.mode = radio.value;
      render();
    });
  }
  $('threshold').addEventListener('input', () => {
    state.threshold = Number($('threshold').value);
    $('threshold-value').textContent = state.threshold.toFixed(2);
    render();
  });
  for (const view of ['heatmap', 'lines', 'steps']) {
    $(`view-${view}`).addEventListener('click', () => {
      selectTab(['view-heatmap', 'view-lines', 'view-steps'], `view-${view}`);
      state.view = view;
      render();
    });
  }
  let resizeTimer;
  addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 100);
  });
}

function selectTab(ids, chosen) {
  for (const id of ids) $(id).setAttribute('aria-selected', String(id === chosen));
}

// ---- computing ----

const renderWaiters = [];
let runsIssued = 0;  // runText calls so far: a result keeps the number of the latest call it answers (setText waits for its own)
// The default model's runs (runText's): the latest text only while one is in flight.
const textRuns = new LatestOnly(async (args) => {
  try {
    const result = await worker.request('run', args);
    if (state.source === 'default') {
      accept({ ...result, run: args.run });
      showMessage(null);
    }
  } catch (error) {
    runFailed(`Could not run the model: ${error.message}`);
  }
});

function showMessage(text, kind = 'error') {
  const box = $('message');
  box.hidden = !text;
  box.textContent = text ?? '';
  box.className = kind === 'info' ? 'info' : '';
}

/** A run failed: the message says why, and whoever waits for a redraw (the switch) hears of it. */
function runFailed(text) {
  state.runError = text;
  showMessage(text);
  for (const waiter of renderWaiters.splice(0)) waiter();
}

function accept(result) {
  state.runError = null;
  state.result = result;
  if (result.cacheLength !== undefined) generateMode.cacheLength = result.cacheLength;
  state.meanCache = new Map();
  if (state.selected.layer >= result.layers.length) state.selected.layer = 0;
  if (state.selected.head >= result.config.numHeads) state.selected.head = 0;
  render();
}

/** The backends' mode (web/backends.js) that runs `source`'s result as the views show it: the Steps view's while it is open. */
const shownOn = (source) => (state.view === 'steps' ? 'steps' : source);

/**
 * What each source the views can show (state.source) does when the page must draw it again:
 * rerun() runs it again (with the Steps view's ablations and patches); runsOn() names the backends'
 * mode whose backend its result must come from (null: none to check), or rerunsOnBackend: a
 * backend change runs it again in the worker whatever its result says. The modes are below.
 */
const SOURCES = {
  default: { rerun: () => runText(), runsOn: () => (state.result?.generation ? null : shownOn('default')) },
  custom: { rerun: () => customMode.run(), runsOn: () => shownOn('custom') },
  sentiment: { rerun: () => sentimentMode.run(), runsOn: () => shownOn('sentiment') },
  model: { rerun: () => yourModelMode.run(), rerunsOnBackend: true },
  patching: { rerun: () => patchingMode.prepare(), rerunsOnBackend: true },
  train: { rerun: () => runText() },  // (the views show the default model's text then)
};

/** Runs the source shown again, with the Steps view's ablations and patches. */
function rerun() {
  SOURCES[state.source].rerun();
}

/** The worker's backend changed (the switch, or a lost device): redraw the source shown on it. */
async function redrawOn(backends) {
  const source = SOURCES[state.source];
  const runsOn = source.runsOn?.() ?? null;
  const expected = runsOn ? backends.modes[runsOn].backend : null;
  const drawn = nextRender();
  if (expected && state.result?.backend !== expected) rerun();
  else render();
  await drawn;
  while (expected && state.result?.backend !== expected) {
    if (state.runError) throw new Error(state.runError);
    await nextRender();
  }
  if (source.rerunsOnBackend) await source.rerun();  // (Your model and Patching run in the worker on the new backend)
}

/** Runs the default model on the text box's text; while a run is in flight only the latest waits. */
async function runText() {
  await textRuns.run({
    text: $('text').value, padding: Math.max(0, Math.min(64, Number($('padding').value) || 0)), steps: stepsMode.runOptions(),
    run: ++runsIssued,
  });
}


// ---- the sources: the text box and the source tabs ----

/** Typing ends a generation; the worker then keeps the cache's unchanged prefix (web/generation.js). */
function edited() {
  generateMode.stopForEdit();
  runText();
}

/** Switches the tabs and panels; the views then follow the source's next result. */
function showSource(name) {
  const sources = Object.keys(SOURCE_TABS);
  selectTab(sources.map((s) => `source-${s}`), `source-${name}`);
  for (const s of sources) $(`${s}-panel`).hidden = s !== name;
  if (name !== 'custom') state.source = name;  // 'custom' takes over once a file is shown
  stepsMode.clearChanges();
  sentimentMode.active = name === 'sentiment';
  sentimentMode.training.show(name === 'sentiment');
  if (name === 'train') trainMode.activate().catch((error) => showMessage(error.message));
  else trainMode.deactivate();
}

/** What choosing a source tab does once its panel shows (tab `source-${name}`, panel `${name}-panel`). */
const SOURCE_TABS = {
  default: () => {
    showMessage(null);
    runText();
  },
  custom: () => {},  // (the views change once its files are shown)
  sentiment: () => {
    showMessage(null);
    sentimentMode.run();
  },
  train: () => showMessage(null),
};

function bindSources() {
  $('text').addEventListener('input', edited);
  $('padding').addEventListener('input', edited);
  for (const [name, opened] of Object.entries(SOURCE_TABS)) {
    $(`source-${name}`).addEventListener('click', () => {
      if (name !== 'default') generateMode.stop();  // (Generate runs on the default model)
      showSource(name);
      opened();
    });
  }
}

// ---- the modes (web/modes/): each binds its own panel; add a new one here ----

// What every mode is given: the worker, the page's element lookup and its message line.
const modeKit = { worker, $, message: showMessage };

const generateMode = new GenerateMode({
  ...modeKit,
  show: accept,
  redraw: () => {
    state.meanCache = new Map();  // the text grew
    render();
    return state.renderMs;
  },
  wantsSteps: () => state.view === 'steps',
  changes: () => stepsMode.runOptions(),
});

const sentimentMode = new SentimentMode({
  ...modeKit,
  show: (result) => {
    state.source = 'sentiment';
    accept(result);
  },
  stepsOptions: () => stepsMode.runOptions(),
  // The in-page training follows the page's switch: on 'webgpu' tfjs trains on its WebGPU backend.
  pageBackend: () => backendSwitch.chosen ?? 'wasm',
});

const trainMode = new TrainMode({
  ...modeKit,
  show: (result) => {
    if (state.source !== 'train') return;
    state.meanCache = new Map();
    accept(result);
  },
  download,
  status: () => { if (state.source === 'train') renderStatus(); },
  onWeights: (info) => {
    // The worker's default model is now the trained one: its heads' roles come from the scores measured here.
    state.info.heads = info.heads;
    gridLayout = null;
  },
});

const customMode = new CustomLayerMode({
  ...modeKit,
  show: (result) => {
    state.source = 'custom';
    accept(result);
  },
  failed: runFailed,
  wantsSteps: () => state.view === 'steps',
  stepsOptions: () => stepsMode.runOptions(),
});

const yourModelMode = new YourModelMode({
  $, worker, state, accept, showMessage, runFailed, nextRender, download, stepsMode: () => stepsMode,
  // Leaving the other sources as a tab switch does (their panels, Steps changes, Sentiment, Train).
  leaveOthers: () => showSource('default'),
  // A first checkpoint refused: the page goes back to the default model, drawn (the views may show
  // another source's result), and the text box and setText answer for it again.
  backToDefault: async () => {
    showSource('default');
    await runText();
    await textRuns.idle();
  },
});

// Patching (web/modes/patching.js): on Your model's model or the default one; its cells open a head or a position in the views.
const patchingMode = new PatchingMode({
  $, worker, state, accept, showMessage, yourModel: yourModelMode,
  leaveOthers: () => showSource('default'),
  selectHead: (layer, head) => {
    state.selected = { layer, head };
    state.mode = 'head';
    document.querySelector('input[name=mode][value=head]').checked = true;
    state.focus = null;
    state.locked = false;
    render();
    document.querySelector('.selected-view').scrollIntoView({ block: 'nearest' });
  },
  selectPosition: (layer, position) => {
    state.selected = { ...state.selected, layer };
    state.focus = { side: 'query', index: position };
    state.locked = true;
    stepsMode.query = position;
    render();
    document.querySelector('.selected-view').scrollIntoView({ block: 'nearest' });
  },
});

const stepsMode = new StepsMode({
  $,
  shown: () => state,
  isOpen: () => state.view === 'steps',
  rerun,
  redraw: renderSelected,
  message: showMessage,
});

const backendSwitch = new BackendSwitch({ worker, $, message: showMessage, redraw: redrawOn });

// ---- the test hook (web/test-hook.js) and the start ----

function nextRender() {
  return new Promise((resolve) => renderWaiters.push(resolve));
}

window.__mhaDemo = testHook({
  $, worker, state, nextRender, render, rowOf, layerShape,
  modes: { generate: generateMode, sentiment: sentimentMode, train: trainMode, steps: stepsMode, yourModel: yourModelMode, patching: patchingMode },
  backends: backendSwitch,
  geometry: () => ({ heatmap: heatmapGeometry, lines: linesGeometry }),
  runText: () => {
    runText();
    return runsIssued;  // (the run number this call's result will carry)
  },
});

window.__mhaDemo.ready = (async () => {
  bindSources();
  bindViewControls();
  bindViewPointers();
  bindExport({ $, state, shownHead, layerShape, rowOf });
  try {
    state.info = await worker.request('load', { text: $('text').value });
    backendSwitch.show(state.info.backends);
    renderStatus();
    const drawn = nextRender();
    runText();
    await drawn;
  } catch (error) {
    $('status').textContent = 'could not start';
    showMessage(`Could not load the model: ${error.message}`);
    throw error;
  }
})();
