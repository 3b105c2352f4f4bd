// The demo page's controller: sends text (or the user's files) to the worker, keeps the latest
// result, and draws every view from it. window.__mhaDemo is the documented hook tests use to read
// the numbers behind the pictures (see docs/demo.md).
import { attentionImage, blit, drawLabeledAttention, drawOutputs, displayToken, prepareCanvas } from './heatmap.js';
import { drawLines, MAX_ROWS } from './lines.js';
import { FAMILY_PRESETS } from './custom-layer.js';
import { WorkerClient } from './worker-client.js';
import { headSteps, StepsView, stepsState } from './steps-view.js';
import { GenerateMode } from './modes/generate.js';
import { SentimentMode } from './modes/sentiment.js';
import { TrainMode } from './modes/train.js';

const $ = (id) => document.getElementById(id);
const worker = new WorkerClient(new URL('./worker.js', import.meta.url));

const state = {
  source: 'default',      // 'default' model, the user's 'custom' layer, the 'sentiment' classifier, or the model being trained ('train')
  info: null,             // the worker's load result: build, vocab, heads, config
  backends: null,         // the worker's backends (web/backends.js info()): chosen, adapter, note, per mode
  runError: null,         // the message of the latest failed run (null after a drawn one)
  result: null,           // the latest forward pass
  selected: { layer: 0, head: 0 },
  mode: 'head',           // 'head' or 'mean' (averaged over the layer's heads)
  threshold: 0,
  view: 'heatmap',        // 'heatmap', 'lines' or 'steps'
  stepsQuery: null,       // steps view: the query token followed (null: the last one)
  steps: null,            // steps view: what it draws (getState().steps)
  ablated: [],            // steps view, default model: [layer, head] pairs whose z is zeroed
  patched: [],            // ... and pairs whose z comes from patchText
  patchText: '',
  patchFile: null,        // ... Your layer: the second embeddings file ({ name, bytes }) patched from
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

const MODE_NAMES = { default: 'Default model', custom: 'Your layer', generate: 'Generate', train: 'Train', steps: 'Steps', sentiment: 'Sentiment' };

/** The header's backend line: what runs, on which adapter, the modes that stay on wasm and why, and the switch. */
function renderBackend() {
  const b = state.backends;
  if (!b) return;
  const onGpu = b.chosen === 'webgpu' && b.available;
  const gpuName = b.adapter ? `${b.adapter.name}${b.adapter.isFallbackAdapter ? ' (software)' : ''}` : null;
  const wasmName = `wasm SIMD · ${b.build.threads} thread${b.build.threads === 1 ? '' : 's'}`;
  $('backend-text').innerHTML = '';
  $('backend-text').append(Object.assign(document.createElement('b'), { textContent: onGpu ? `WebGPU · ${gpuName}` : wasmName }));
  const stays = Object.entries(b.modes).filter(([, m]) => m.why).map(([mode, m]) => `${MODE_NAMES[mode]}: wasm (${m.why})`);
  $('backend-note').textContent = [b.note, ...stays].filter(Boolean).join(' · ');
  const select = $('backend-switch');
  select.options[0].textContent = wasmName;
  select.options[1].textContent = gpuName ? `WebGPU · ${gpuName}` : 'WebGPU (not available)';
  select.options[1].disabled = !b.adapter;  // (after a loss the switch asks for a new device)
  select.disabled = !b.adapter;
  select.value = b.chosen;
}

/** The worker's backend changed (the switch, or a lost device): redraw the source shown on it. */
async function redrawOn(backends) {
  state.backends = backends;
  renderBackend();
  const expected = state.source === 'default' && !state.result?.generation ? backends.modes[state.view === 'steps' ? 'steps' : 'default'].backend
    : state.source === 'custom' || state.source === 'sentiment' ? backends.modes[state.view === 'steps' ? 'steps' : state.source].backend : null;
  const drawn = nextRender();
  if (expected && state.result?.backend !== expected) rerun();
  else render();
  await drawn;
  while (expected && state.result?.backend !== expected) {
    if (state.runError) throw new Error(state.runError);
    await nextRender();
  }
}

/** The switch: runs the page on 'webgpu' or 'wasm' from now on; the text, generated tokens and training stay. */
async function switchBackend(backend) {
  try {
    await redrawOn(await worker.request('backend', { backend }));
  } catch (error) {
    showMessage(`Could not switch to ${backend}: ${error.message}`);
    renderBackend();
    throw error;
  }
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
      : `${state.result.description ?? 'Your layer.'}${group}`;
  const { data, offset, stride } = matrixOf(layer, head);
  const width = $('heatmap-panel').parentElement.clientWidth - 30;
  const newest = state.result.generation ? state.result.labels.length - 1 : null;
  $('heatmap-panel').hidden = state.view !== 'heatmap';
  $('lines-panel').hidden = state.view !== 'lines';
  $('steps-panel').hidden = state.view !== 'steps';
  if (state.view === 'steps') {
    renderSteps();
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

// ---- the Steps view (web/steps-view.js) ----

let stepsView = null;
let stepsRequestedFor = null;  // the result a steps run was requested for (one request per result)

const samePair = ([l, h]) => ([a, b]) => a === l && b === h;

/** The Steps view's run options for the default model: capture, and its ablations and patches. */
function stepsRunOptions() {
  if (state.view !== 'steps') return null;
  return { ablated: state.ablated, patched: state.patched, patchText: state.patchText, ...(state.source === 'custom' && { patchFile: state.patchFile }) };
}

function renderSteps() {
  const { layer, head } = state.selected;
  const result = state.result;
  const layerResult = result.layers[layer];
  const defaultModel = state.source === 'default';
  const changeable = defaultModel || state.source === 'sentiment' || state.source === 'custom';  // (runs it can repeat)
  $('steps-patch-row').hidden = !changeable;  // (a second input to patch from: a text, or Your layer's second embeddings)
  const custom = state.source === 'custom';
  $('steps-patch-text').hidden = custom;
  $('steps-patch-file').hidden = !custom;
  $('steps-patch-label').textContent = custom ? 'second embeddings (the same [L, E])' : 'second text';
  $('steps-patch-label').htmlFor = custom ? 'steps-patch-file' : 'steps-patch-text';
  $('steps-ablate').parentElement.hidden = !changeable;
  if (result.generation) {
    renderCacheSteps();
    return;
  }
  if (!layerResult.captured) {
    state.steps = null;
    const generating = Boolean(result.generation?.running);
    $('steps-summary').textContent = state.source === 'train' ? 'The steps appear with the model\'s first evaluation.'
      : generating ? 'The steps are drawn for the text shown once generation stops.' : 'Computing the steps…';
    if (changeable && !generating && stepsRequestedFor !== result) {
      stepsRequestedFor = result;
      rerun();
    }
    return;
  }
  const { labels, padding } = result;
  const L = labels.length;
  const lastToken = L - 1 - (padding ? padding.reduce((n, p) => n + p, 0) : 0);
  const query = Math.min(L - 1, Math.max(0, state.stepsQuery ?? lastToken));
  const select = $('steps-query');
  const options = labels.map((label, i) => `${i}: ${displayToken(label)}`);
  if ([...select.options].map((o) => o.text).join('\u0000') !== options.join('\u0000')) {
    select.replaceChildren(...options.map((text, i) => new Option(text, String(i))));
  }
  select.value = String(query);
  const hs = headSteps(layerResult, { head, config: result.config });
  stepsView.draw(hs, { query, labels, causal: result.causal, padding });
  state.steps = stepsState(hs, { layer, head, query });
  $('steps-ablate').checked = state.ablated.some(samePair([layer, head]));
  const changes = [
    ...state.ablated.map(([l, h]) => `L${l} H${h} ablated`),
    ...state.patched.map(([l, h]) => `L${l} H${h} patched from ${custom ? state.patchFile?.name : `'${state.patchText}'`}`),
  ];
  $('steps-summary').textContent = `Layer ${layer}, head ${head}, query ${query} '${displayToken(labels[query])}'. `
    + (changes.length && changeable ? `Changed: ${changes.join(', ')} (the prediction and later layers follow).` : '');
}

/** Generate: the newest token's step, its one query row against everything the cache holds. */
function renderCacheSteps() {
  const { layer, head } = state.selected;
  const result = state.result;
  const cache = result.cacheSteps;
  $('steps-ablate').checked = state.ablated.some(samePair([layer, head]));  // (a change applies to the next Generate)
  if (!cache) {
    state.steps = null;
    $('steps-summary').textContent = 'Generate with the Steps view open to follow each new token '
      + 'reading the keys and values its cache holds.';
    return;
  }
  const { position } = cache;
  const labels = result.labels.slice(0, position + 1);
  $('steps-query').replaceChildren(new Option(`${position}: ${displayToken(labels[position])}`, String(position)));
  const hs = headSteps(cache.layers[layer], { head, config: result.config });
  stepsView.draw(hs, { query: 0, labels, causal: true, padding: null, queryOffset: position });
  state.steps = stepsState(hs, { layer, head, query: position, row: 0 });
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

/** Runs the source shown again, with the Steps view's ablations and patches. */
function rerun() {
  if (state.source === 'sentiment') sentimentMode.run();
  else if (state.source === 'custom') runCustom();
  else runText();
}

/** Adds or removes [layer, head] in list, then runs the source again with the change. */
function toggleHead(list, on) {
  const pair = [state.selected.layer, state.selected.head];
  const kept = state[list].filter((p) => !samePair(pair)(p));
  state[list] = on ? [...kept, pair] : kept;
  rerun();
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

// ---- computing ----

const renderWaiters = [];
let running = false;
let pendingRun = null;
let runsIssued = 0;  // runText calls so far: a result keeps the number of the latest call it answers (setText waits for its own)

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

/** Runs the default model on the text box's text; while a run is in flight only the latest waits. */
async function runText() {
  pendingRun = {
    text: $('text').value, padding: Math.max(0, Math.min(64, Number($('padding').value) || 0)), steps: stepsRunOptions(),
    run: ++runsIssued,
  };
  if (running) return;
  running = true;
  try {
    while (pendingRun) {
      const args = pendingRun;
      pendingRun = null;
      try {
        const result = await worker.request('run', args);
        if (state.source === 'default') {
          accept({ ...result, run: args.run });
          showMessage(null);
        }
      } catch (error) {
        runFailed(`Could not run the model: ${error.message}`);
      }
    }
  } finally {
    running = false;
  }
}

async function readFile(input, what) {
  const file = input.files[0];
  if (!file) throw new TypeError(`Choose a ${what} file first.`);
  return { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
}

/** The "Your layer" options of today's models (custom-layer.js inferConfig); rotary dims blank = the whole head. */
function customVariants() {
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
function applyFamily(name) {
  const p = FAMILY_PRESETS[name];
  $('byo-causal').checked = p.causal;
  $('byo-rotary').checked = p.rotaryDim !== 0;
  $('byo-rotary-dim').value = p.rotaryDim > 0 ? String(p.rotaryDim) : '';
  $('byo-rotary-pairs').checked = p.rotaryInterleaved;
  $('byo-window').value = p.slidingWindow ? String(p.slidingWindow) : '';
  $('byo-alibi').checked = p.alibi;
  $('byo-softcap').value = p.softcap ? String(p.softcap) : '';
}

async function runCustom() {
  try {
    const embeddingsFile = await readFile($('byo-embeddings'), 'token embeddings (.json or .npy)');
    const weightsFile = await readFile($('byo-weights'), 'state dict (.safetensors)');
    const result = await worker.request('custom', {
      embeddingsFile, weightsFile,
      numHeads: Number($('byo-heads').value),
      prefix: $('byo-prefix').value,
      causal: $('byo-causal').checked,
      variants: customVariants(),
      capture: state.view === 'steps',  // the Steps view reads the steps
      steps: stepsRunOptions(),
    });
    const select = $('byo-prefix');
    select.replaceChildren(...result.prefixes.map((p) => new Option(p || '(top level)', p, false, p === result.prefix)));
    state.source = 'custom';
    accept(result);
    const { embedDim, numHeads, numKvHeads } = result.config;
    showMessage(`Loaded ${weightsFile.name}${result.prefix ? ` (layer '${result.prefix}')` : ''}: embedDim ${embedDim}, `
      + `${numHeads} heads${numKvHeads < numHeads ? `, ${numKvHeads} key/value heads` : ''}, ${result.labels.length} tokens.`, 'info');
  } catch (error) {
    runFailed(error.message);
  }
}

// ---- export ----

function download(name, blob) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

function viewName() {
  const head = shownHead();
  return `attention-layer${state.selected.layer}-${head === 'mean' ? 'mean' : `head${head}`}`;
}

function exportPng() {
  const canvas = state.view === 'heatmap' ? $('heatmap') : $('lines');
  canvas.toBlob((blob) => download(`${viewName()}-${state.view}.png`, blob), 'image/png');
}

function exportJson() {
  const { L, H } = layerShape();
  const { layer } = state.selected;
  const rows = (head) => Array.from({ length: L }, (_, i) => Array.from(rowOf(layer, head, i)));
  const json = {
    source: { default: 'default model', custom: 'your layer', sentiment: 'sentiment classifier' }[state.source],
    build: state.info.build,
    tokens: state.result.labels,
    layer,
    causal: state.result.causal,
    padding: state.result.padding ? Array.from(state.result.padding, Boolean) : null,
    shape: [H, L, L],
    weights: Array.from({ length: H }, (_, h) => rows(h)),
    meanWeights: rows('mean'),
  };
  download(`${viewName().replace(/-head\d+|-mean/, '')}-weights.json`, new Blob([JSON.stringify(json)], { type: 'application/json' }));
}

// ---- events ----

function selectTab(ids, chosen) {
  for (const id of ids) $(id).setAttribute('aria-selected', String(id === chosen));
}

/** Typing ends a generation; the worker then keeps the cache's unchanged prefix (web/generation.js). */
function edited() {
  generateMode.stopForEdit();
  runText();
}

/** Switches the tabs and panels; the views then follow the source's next result. */
function showSource(name) {
  const sources = ['default', 'custom', 'sentiment', 'train'];
  selectTab(sources.map((s) => `source-${s}`), `source-${name}`);
  for (const s of sources) $(`${s}-panel`).hidden = s !== name;
  if (name !== 'custom') state.source = name;  // 'custom' takes over once a file is shown
  // The Steps view's ablations and patches belong to the model they were made on.
  state.ablated = [];
  state.patched = [];
  sentimentMode.active = name === 'sentiment';
  sentimentMode.training.show(name === 'sentiment');
  if (name === 'train') trainMode.activate().catch((error) => showMessage(error.message));
  else trainMode.deactivate();
}

function bindEvents() {
  $('text').addEventListener('input', edited);
  $('padding').addEventListener('input', edited);
  $('source-default').addEventListener('click', () => {
    showSource('default');
    showMessage(null);
    runText();
  });
  $('source-custom').addEventListener('click', () => {
    generateMode.stop();
    showSource('custom');
  });
  $('source-sentiment').addEventListener('click', () => {
    generateMode.stop();
    showSource('sentiment');
    showMessage(null);
    sentimentMode.run();
  });
  $('source-train').addEventListener('click', () => {
    generateMode.stop();
    showSource('train');
    showMessage(null);
  });
  $('byo-family').addEventListener('change', () => applyFamily($('byo-family').value));
  $('custom-panel').addEventListener('submit', (event) => {
    event.preventDefault();
    runCustom();
  });
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
  $('lines-start').addEventListener('input', () => {
    state.linesStart = Number($('lines-start').value);
    renderSelected();
  });
  stepsView = new StepsView($, {
    onSelectQuery: (i) => {
      state.stepsQuery = i;
      renderSelected();
    },
  });
  $('steps-query').addEventListener('change', () => {
    state.stepsQuery = Number($('steps-query').value);
    renderSelected();
  });
  $('steps-ablate').addEventListener('change', () => toggleHead('ablated', $('steps-ablate').checked));
  $('steps-patch').addEventListener('click', async () => {
    if (state.source === 'custom') {
      try {
        state.patchFile = await readFile($('steps-patch-file'), 'second embeddings (.json or .npy, the shape of the first)');
      } catch (error) {
        showMessage(error.message);
        return;
      }
    } else {
      state.patchText = $('steps-patch-text').value;
    }
    toggleHead('patched', true);
  });
  $('steps-clear').addEventListener('click', () => {
    state.ablated = [];
    state.patched = [];
    rerun();
  });
  $('backend-switch').addEventListener('change', () => switchBackend($('backend-switch').value).catch(() => {}));
  worker.onNotice = (backends) => {
    showMessage(backends.note, 'info');
    redrawOn(backends);
  };
  $('export-png').addEventListener('click', exportPng);
  $('export-json').addEventListener('click', exportJson);

  const point = (canvas, event) => {
    const rect = canvas.getBoundingClientRect();
    return [event.clientX - rect.left, event.clientY - rect.top];
  };
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
  let resizeTimer;
  addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 100);
  });
}

// ---- generating ----

const generateMode = new GenerateMode({
  worker,
  $,
  show: accept,
  redraw: () => {
    state.meanCache = new Map();  // the text grew
    render();
    return state.renderMs;
  },
  message: showMessage,
  wantsSteps: () => state.view === 'steps',
  changes: stepsRunOptions,
});

const sentimentMode = new SentimentMode({
  worker,
  $,
  show: (result) => {
    state.source = 'sentiment';
    accept(result);
  },
  message: showMessage,
  stepsOptions: stepsRunOptions,
  // The in-page training follows the page's switch: on 'webgpu' tfjs trains on its WebGPU backend.
  pageBackend: () => state.backends?.chosen ?? 'wasm',
});

const trainMode = new TrainMode({
  worker,
  $,
  show: (result) => {
    if (state.source !== 'train') return;
    state.meanCache = new Map();
    accept(result);
  },
  message: showMessage,
  download,
  status: () => { if (state.source === 'train') renderStatus(); },
  onWeights: (info) => {
    // The worker's default model is now the trained one: its heads' roles come from the scores measured here.
    state.info.heads = info.heads;
    gridLayout = null;
  },
});

// ---- the test hook ----

function nextRender() {
  return new Promise((resolve) => renderWaiters.push(resolve));
}

window.__mhaDemo = {
  /** Resolves once the model is loaded and the first view is drawn. */
  ready: null,
  /** Sets the text box and resolves when the page has drawn the result. */
  async setText(text) {
    $('text').value = text;
    const run = runsIssued + 1;
    runText();
    // An earlier run (or another view's result of the same text) may be drawn first: wait for this call's run.
    while (state.source !== 'default' || !(state.result?.run >= run) || state.result.text !== text) await nextRender();
  },
  /** The weights the page shows: [L * L] row-major (query rows), a copy. head = number or 'mean'. */
  getWeights(layer, head) {
    const L = state.result.labels.length;
    return Array.from({ length: L }, (_, i) => Array.from(rowOf(layer, head, i))).flat();
  },
  /** The selected layer's attention output [L * E]. */
  getOutput(layer) {
    return Array.from(state.result.layers[layer].output.subarray(0, layerShape().L * layerShape().E));
  },
  /** What is on the page now. */
  getState() {
    const { result } = state;
    return {
      source: state.source,
      /** The backend the page runs on ('webgpu' | 'wasm'); modes WebGPU cannot run yet stay on wasm (backends.modes). */
      backend: state.backends?.chosen ?? null,
      /** The WebGPU adapter's description (vendor and architecture where the browser gives none), or null without one. */
      adapter: state.backends?.adapter?.name ?? null,
      /** { chosen, available, adapter, note, timings, build, modes: { default|custom|generate|train|steps|sentiment: { backend, why } } } */
      backends: state.backends ? structuredClone(state.backends) : null,
      /** The backend that computed the result shown. */
      ranOn: state.result?.backend ?? null,
      build: state.info?.build ?? null,
      ids: result?.ids ?? null,
      labels: result?.labels ?? null,
      numLayers: result?.layers.length ?? 0,
      config: result?.config ?? null,
      causal: result?.causal ?? null,
      padding: result?.padding ? Array.from(result.padding) : null,
      prediction: result?.prediction ?? null,
      wasmMs: result?.wasmMs ?? null,
      renderMs: state.renderMs,
      selected: { ...state.selected },
      mode: state.mode,
      view: state.view,
      focus: state.focus,
      locked: state.locked,
      renders: state.renders,
      /**
       * Steps view: { layer, head, query, scale, q: [Dh], keys: [S][Dh], scores: [S], logits: [S], pattern: [S],
       * values: [S][Dv], z: [Dv], output: [E] } (-Infinity where blocked), or null when another view is shown.
       */
      steps: state.view === 'steps' && state.steps ? structuredClone(state.steps) : null,
      /** Steps view: { code (tab), hovered (step id or null), tooltip (text or null), ablated, patched, patchText, patchFile (Your layer's second embeddings' name) }. */
      stepsView: {
        code: stepsView?.code ?? null, hovered: stepsView?.hovered ?? null,
        tooltip: $('steps-tooltip').hidden ? null : $('steps-tooltip').textContent,
        ablated: structuredClone(state.ablated), patched: structuredClone(state.patched), patchText: state.patchText,
        patchFile: state.patchFile?.name ?? null,
      },
      /** Generate: { running, cacheLength (tokens the worker's caches hold), generated, useCache, changed (generated with the Steps view's ablated or patched heads), tokensPerSecond, msPerToken, attentionMsPerToken, wallMs } */
      generation: generateMode.state(),
      /** Sentiment mode: { label, probability, words } of the sentence shown, or null. */
      sentiment: result?.sentiment ?? null,
      /**
       * Train mode: { running, step, steps, loss, heldOutLoss, tokensPerSecond, stepsPerSecond, trainingSeconds,
       * headScores: [{ layer, head, previousToken, induction, bracket, bos }], ablated, backend, settings,
       * ranOn: the latest step's backend ('wasm' | 'webgpu'), rates: { wasm?, webgpu?: { stepsPerSecond, tokensPerSecond } } } or null.
       */
      training: trainMode.status ? structuredClone(trainMode.status) : null,
      /**
       * Sentiment tab's "Train in this browser": { running, phase, backend, threads, settings, epoch, epochs, batch,
       * batchesPerEpoch, progress, loss, accuracy, history: { loss, accuracy, valLoss, valAccuracy, seconds } (per epoch),
       * curves: { x (epochs), loss, accuracy } (per batch, running means), stopped, finished, error,
       * framesDuringTraining, inputsDuringTraining } or null before the first run.
       */
      sentimentTraining: sentimentMode.training.status ? structuredClone(sentimentMode.training.status) : null,
    };
  },
  /** Resolves when the running generation (if any) has ended and been drawn. */
  async generationDone() {
    while (generateMode.running) await nextRender();
  },
  /** Line view: where token `index` of the 'query' or 'key' column is, in page coordinates (null if not shown). */
  linePoint(side, index) {
    const p = linesGeometry?.point(side, index);
    if (!p || state.view !== 'lines') return null;
    const rect = $('lines').getBoundingClientRect();
    return { x: rect.left + p.x, y: rect.top + p.y };
  },
  /** Heatmap view: the centre of cell (query, key), in page coordinates. */
  heatmapPoint(query, key) {
    const g = heatmapGeometry;
    const rect = $('heatmap').getBoundingClientRect();
    return { x: rect.left + g.margin + (key + 0.5) * g.cell, y: rect.top + g.margin + (query + 0.5) * g.cell };
  },
  /** Resolves after the next redraw. */
  nextRender,
  /** Runs the page on 'webgpu' or 'wasm' (the header's switch); resolves once it has switched and redrawn. */
  setBackend: switchBackend,
  /** Test only: destroys the Sentiment training worker's WebGPU device (tfjs'); resolves once training runs on wasm again. */
  async loseSentimentTrainingDevice() {
    await sentimentMode.training.testLoseDevice();
  },
  /** Test only: destroys the worker's WebGPU device (as a driver reset would); resolves once the page runs on wasm again. */
  async loseDevice() {
    await worker.request('testLoseDevice', {});
    while (state.backends.available) await nextRender();
  },
  /**
   * Opens the Steps view on layer `layer`, head `head` and query token `query` (default: the last
   * token); resolves with getState().steps once it is drawn.
   */
  async showSteps({ layer = 0, head = 0, query = null } = {}) {
    state.selected = { layer, head };
    state.mode = 'head';
    document.querySelector('input[name=mode][value=head]').checked = true;
    state.stepsQuery = query;
    state.steps = null;
    const drawn = () => state.steps && state.steps.layer === layer && state.steps.head === head
      && (query === null || state.steps.query === query);
    if (state.view !== 'steps') $('view-steps').click();
    else render();
    while (!drawn()) await nextRender();
    return structuredClone(state.steps);
  },
  /** Steps view: the centre of cell (row, column) of step `id` (web/steps-view.js CHAIN), in page coordinates. */
  stepsPoint(id, row, column) {
    return stepsView.cellPoint(id, row, column);
  },
  /** Opens the Train tab and starts (or resumes) training with settings ({ seed, learningRate, batchSize, seqLen, steps, ... }); resolves once it runs. */
  async startTraining(settings = {}) {
    if (state.source !== 'train') $('source-train').click();
    const fresh = trainMode.status === null || Object.keys(settings).some((k) => k !== 'learningRate' && k !== 'batchSize' && k !== 'steps');
    await trainMode.start(settings, { reset: fresh && !trainMode.running });
  },
  /** The Train view's curves (what Curves JSON saves): { settings, backend, steps, losses, evaluations }. */
  trainingCurves() {
    return structuredClone(trainMode.curvesJson());
  },
  /** Pauses training; resolves with getState().training once the worker has stopped. */
  async pauseTraining() {
    await trainMode.pause();
    return structuredClone(trainMode.status);
  },
  /** Ablates (ablated false: restores) a head of the model being trained; resolves with the new training state. */
  async ablateHead(layer, head, ablated = true) {
    await trainMode.ablate(layer, head, ablated);
    return structuredClone(trainMode.status);
  },
  /** The trained weights as .safetensors bytes (what Export .safetensors downloads), as a plain array. */
  async trainedWeights() {
    return Array.from(await trainMode.weightsFile());
  },
  /**
   * Opens the Sentiment tab and trains the classifier from a fresh initialisation with settings
   * ({ epochs, learningRate, batchSize, samples, validationSplit, seed, backend: 'wasm' | 'cpu' | 'webgpu' (default: the
   * page's backend, 'webgpu' when the page runs on WebGPU, else 'wasm') }); resolves once it runs.
   */
  async startSentimentTraining(settings = {}) {
    if (state.source !== 'sentiment') $('source-sentiment').click();
    await sentimentMode.training.start(settings);
  },
  /** Stops the classifier's training after its current batch; resolves with getState().sentimentTraining once its weights classify. */
  async stopSentimentTraining() {
    return structuredClone(await sentimentMode.training.stop());
  },
  /** Resolves with getState().sentimentTraining when the run has ended and its weights classify. */
  async sentimentTrainingDone() {
    return structuredClone(await sentimentMode.training.done());
  },
  /** "Use these weights in Generate": the default model becomes the trained one. */
  async useTrainedWeights() {
    return trainMode.useWeights();
  },
};

window.__mhaDemo.ready = (async () => {
  bindEvents();
  try {
    state.info = await worker.request('load', { text: $('text').value });
    state.backends = state.info.backends;
    renderBackend();
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

// ---- "Your model" mode (issue 43): web/modes/your-model.js. Its whole hook into this file; after ----
// ---- the main.js split, re-apply it where showSource, rerun, redrawOn and renderSteps land.     ----
import { YourModelMode } from './modes/your-model.js';

const yourModelMode = new YourModelMode({
  $, worker, state, accept, showMessage, runFailed, nextRender, download,
  // Leaving the other sources as a tab switch does (their panels, Steps changes, Sentiment, Train).
  leaveOthers: () => showSource('default'),
});
{
  const baseRerun = rerun, baseRedrawOn = redrawOn, baseRenderSteps = renderSteps;
  // The Steps view's ablate / patch / clear run the loaded model again.
  rerun = () => (state.source === 'model' ? yourModelMode.run() : baseRerun());
  // A backend switch (or a lost device) runs the model on the new backend.
  redrawOn = async (backends) => {
    await baseRedrawOn(backends);
    if (state.source === 'model') await yourModelMode.run();
  };
  // The model's heads can be ablated and patched from a second text, as the default model's.
  renderSteps = () => {
    baseRenderSteps();
    if (state.source !== 'model') return;
    $('steps-patch-row').hidden = false;
    $('steps-patch-text').hidden = false;
    $('steps-patch-file').hidden = true;
    $('steps-patch-label').textContent = 'second text (the same number of tokens)';
    $('steps-ablate').parentElement.hidden = false;
  };
  const hook = window.__mhaDemo;
  const baseSetText = hook.setText, baseGetState = hook.getState;
  Object.assign(hook, {
    /** Loads a checkpoint (File objects or { name, bytes }); resolves when its first view is drawn. */
    loadModel: (files) => yourModelMode.load(files),
    setText: (text) => (state.source === 'model' ? yourModelMode.setText(text) : baseSetText(text)),
    getState() {
      const got = baseGetState();
      if (state.source !== 'model') return { ...got, model: null };
      return { ...got, model: { ...yourModelMode.model }, lens: structuredClone(state.result?.lens ?? null) };
    },
    /** Your model: greedy generation of `count` tokens; resolves with { generated, ids, tokensPerSecond, cancelled } once drawn. */
    async generateModel(count) {
      $('model-gen-count').value = String(count);
      return yourModelMode.generate();
    },
    /** Your model: the whole state as the State JSON button saves it. */
    modelStateJson: () => structuredClone(yourModelMode.stateJson()),
  });
}
