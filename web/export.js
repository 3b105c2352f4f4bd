// The Export buttons under the large view: the view shown as a PNG, and the selected layer's
// weights (every head, and their mean) as JSON; and the savers other views export with (the
// Patching view: PNG, SVG, CSV, JSON).
import { download } from './files.js';

/** Saves a canvas as a PNG file. */
export function savePng(canvas, name) {
  canvas.toBlob((blob) => download(name, blob), 'image/png');
}

/** Saves `value` as a JSON file. */
export function saveJson(name, value) {
  download(name, new Blob([JSON.stringify(value)], { type: 'application/json' }));
}

/** Saves an SVG document (a string). */
export function saveSvg(name, svg) {
  download(name, new Blob([svg], { type: 'image/svg+xml' }));
}

/** Rows of values as CSV text (RFC 4180 quoting), the first row the header. */
export function csvText(rows) {
  const cell = (v) => {
    const text = v === null || v === undefined ? '' : String(v);
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return `${rows.map((row) => row.map(cell).join(',')).join('\r\n')}\r\n`;
}

/** Saves rows (the first the header) as a CSV file. */
export function saveCsv(name, rows) {
  download(name, new Blob([csvText(rows)], { type: 'text/csv' }));
}

const SOURCE_NAMES = { default: 'default model', custom: 'your layer', sentiment: 'sentiment classifier', model: 'your model', patching: 'your model (patching: the clean text)' };

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
  savePng(canvas, `${viewName(views)}-${state.view}.png`);
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
  saveJson(`${viewName(views).replace(/-head\d+|-mean/, '')}-weights.json`, json);
}
