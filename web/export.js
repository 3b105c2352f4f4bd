// The Export buttons under the large view: the view shown as a PNG, and the selected layer's
// weights (every head, and their mean) as JSON.
import { download } from './files.js';

const SOURCE_NAMES = { default: 'default model', custom: 'your layer', sentiment: 'sentiment classifier' };

/**
 * Binds the buttons. `views` is what main.js's views read: { $, state, shownHead() (a head or 'mean'),
 * layerShape() -> { L, H, E }, rowOf(layer, head, i) }.
 */
export function bindExport(views) {
  const { $ } = views;
  $('export-png').addEventListener('click', () => exportPng(views));
  $('export-json').addEventListener('click', () => exportJson(views));
}

function viewName({ state, shownHead }) {
  const head = shownHead();
  return `attention-layer${state.selected.layer}-${head === 'mean' ? 'mean' : `head${head}`}`;
}

function exportPng(views) {
  const { $, state } = views;
  const canvas = state.view === 'heatmap' ? $('heatmap') : $('lines');
  canvas.toBlob((blob) => download(`${viewName(views)}-${state.view}.png`, blob), 'image/png');
}

function exportJson(views) {
  const { state, rowOf } = views;
  const { L, H } = views.layerShape();
  const { layer } = state.selected;
  const rows = (head) => Array.from({ length: L }, (_, i) => Array.from(rowOf(layer, head, i)));
  const json = {
    source: SOURCE_NAMES[state.source],
    build: state.info.build,
    tokens: state.result.labels,
    layer,
    causal: state.result.causal,
    padding: state.result.padding ? Array.from(state.result.padding, Boolean) : null,
    shape: [H, L, L],
    weights: Array.from({ length: H }, (_, h) => rows(h)),
    meanWeights: rows('mean'),
  };
  download(`${viewName(views).replace(/-head\d+|-mean/, '')}-weights.json`, new Blob([JSON.stringify(json)], { type: 'application/json' }));
}
