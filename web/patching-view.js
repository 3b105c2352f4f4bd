// The Patching view's figures (web/modes/patching.js shows them): the sweeps' heatmaps (layer ×
// head, layer × position), the direct logit attribution by head as bars, the three head scores as
// heatmaps; and what the exports write (one picture of every figure as SVG or PNG, the numbers as
// CSV and JSON). The heatmaps are web/heatmap.js's value heatmaps; every figure is drawn through a
// painter, so the page's canvases and the exports are the same drawing. No worker.
import { canvasPainter, displayToken, divergingColor, paintValueHeatmap, prepareCanvas, svgPainter,
  valueHeatmapLayout, valueScale } from './heatmap.js';

/** The sweeps the page runs, in the order drawn: what each patches, and its columns. */
export const SWEEPS = {
  head_out: { title: 'head_out: each head\'s output', columns: 'head' },
  resid_pre: { title: 'resid_pre: the residual stream before each layer', columns: 'position' },
  attn_out: { title: 'attn_out: each layer\'s attention output', columns: 'position' },
  mlp_out: { title: 'mlp_out: each layer\'s MLP output', columns: 'position' },
};

export const SCORES = {
  previous_token: 'Previous-token score',
  duplicate_token: 'Duplicate-token score',
  induction: 'Induction score',
};

const headLabels = (H) => Array.from({ length: H }, (_, h) => `H${h}`);
const layerLabels = (n) => Array.from({ length: n }, (_, l) => `L${l}`);

/**
 * Every figure the state has numbers for: { id, kind: 'heatmap' | 'bars', columns: 'head' |
 * 'position', title, data, rows, cols, rowLabels, colLabels, scale }. `state`: { prepared (the
 * worker's patching answer), config, sweeps: { over: { data, shape } } }.
 */
export function patchingFigures({ prepared, config, sweeps }) {
  if (!prepared) return [];
  const { numLayers: layers, numHeads: H } = config;
  const tokens = prepared.clean.tokens.map((t, i) => `${i} ${displayToken(t)}`);
  const figures = [];
  for (const [over, { title, columns }] of Object.entries(SWEEPS)) {
    const sweep = sweeps[over];
    if (!sweep) continue;
    figures.push({
      id: over, kind: 'heatmap', columns, title,
      data: sweep.data, rows: layers, cols: sweep.shape[1], rowLabels: layerLabels(layers),
      colLabels: columns === 'head' ? headLabels(H) : tokens, scale: valueScale('diverging', sweep.data, 1),
    });
  }
  const { heads } = prepared.attribution;
  figures.push({
    id: 'attribution', kind: 'bars', columns: 'head',
    title: `Direct logit attribution: ${JSON.stringify(prepared.answer.token)} − ${JSON.stringify(prepared.wrong.token)}`,
    data: heads.data, rows: layers, cols: H, rowLabels: layerLabels(layers), colLabels: headLabels(H),
    scale: valueScale('diverging', heads.data),
  });
  for (const [kind, title] of Object.entries(SCORES)) {
    const score = prepared.scores[kind];
    figures.push({
      id: `score-${kind}`, kind: 'heatmap', columns: 'head', title, data: score.data, rows: layers, cols: H,
      rowLabels: layerLabels(layers), colLabels: headLabels(H), scale: valueScale('sequential', score.data, 1),
    });
  }
  return figures;
}

/** The bar chart's layout: one bar per head, grouped by layer. */
function barsLayout({ rows, cols }, maxWidth) {
  const left = 52, top = 22, height = 140, gap = 6, bottom = 20;
  const n = rows * cols;
  const barW = Math.max(2, Math.min(18, Math.floor((maxWidth - left - 12 - gap * (rows - 1)) / n)));
  const x = (bar) => left + bar * barW + Math.floor(bar / cols) * gap;
  const plot = { x: left, y: top, w: x(n - 1) + barW - left, h: height };
  return {
    plot, barW, rows, cols, x, width: plot.x + plot.w + 12, height: top + height + bottom,
    hit(px, py) {
      if (py < plot.y || py > plot.y + plot.h) return null;
      for (let bar = 0; bar < n; bar++) {
        if (px >= x(bar) && px < x(bar) + barW) return { row: Math.floor(bar / cols), col: bar % cols };
      }
      return null;
    },
    centre(row, col) {
      return { x: x(row * cols + col) + barW / 2, y: plot.y + plot.h / 2 };
    },
  };
}

function paintBars(painter, figure, layout, x0 = 0, y0 = 0) {
  const { data, rows, cols, rowLabels, title, scale } = figure;
  const { plot, barW, x } = layout;
  const Y = y0 + plot.y, mid = Y + plot.h / 2, half = plot.h / 2;
  painter.text(x0 + 2, y0 + 9, title, { size: 12, bold: true, color: '#1d2330' });
  painter.line(x0 + plot.x, mid, x0 + plot.x + plot.w, mid, '#98a2b3');
  painter.line(x0 + plot.x - 0.5, Y, x0 + plot.x - 0.5, Y + plot.h, '#d0d5dd');
  const ticks = [scale.max, 0, scale.min];
  ticks.forEach((v, i) => painter.text(x0 + plot.x - 4, Y + (i * plot.h) / 2, (Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)), { align: 'right', size: 10 }));
  for (let bar = 0; bar < rows * cols; bar++) {
    const v = data[bar];
    const h = (Math.min(1, Math.abs(v) / scale.max)) * half;
    const rgb = divergingColor(v / scale.max).join(',');
    painter.rect(x0 + x(bar), v >= 0 ? mid - h : mid, Math.max(1, barW - 1), Math.max(h, 0.5), `rgb(${rgb})`);
  }
  for (let l = 0; l < rows; l++) {
    const start = x(l * cols), end = x(l * cols + cols - 1) + barW;
    painter.text(x0 + (start + end) / 2, Y + plot.h + 10, rowLabels[l], { align: 'middle', size: 10 });
  }
}

/** A figure's layout within maxWidth CSS pixels (hit(x, y) -> { row, col } | null, centre(row, col)). */
export function figureLayout(figure, maxWidth) {
  const layout = figure.kind === 'bars' ? barsLayout(figure, maxWidth) : valueHeatmapLayout(figure, maxWidth);
  // Wide enough for the title (about 6.6 px a character at 12 px), within maxWidth.
  layout.width = Math.max(layout.width, Math.min(maxWidth, 8 + Math.ceil(figure.title.length * 6.6)));
  return layout;
}

export function paintFigure(painter, figure, layout, x0 = 0, y0 = 0) {
  if (figure.kind === 'bars') paintBars(painter, figure, layout, x0, y0);
  else paintValueHeatmap(painter, figure, layout, x0, y0);
}

/** Draws a figure on its canvas; returns its layout (for hit tests). */
export function drawFigure(canvas, figure, maxWidth) {
  const layout = figureLayout(figure, maxWidth);
  const ctx = prepareCanvas(canvas, layout.width, layout.height);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, layout.width, layout.height);
  paintFigure(canvasPainter(ctx), figure, layout);
  return layout;
}

/** The header lines of an exported picture. */
function headerLines(prepared, model) {
  const ld = prepared.logitDiff;
  return [
    `Activation patching · ${model?.family ?? 'your model'} · ${prepared.clean.ids.length} tokens`,
    `clean: ${JSON.stringify(prepared.clean.text)} · corrupted: ${JSON.stringify(prepared.corrupted.text)}`,
    `answer ${JSON.stringify(prepared.answer.token)} (id ${prepared.answer.id}) − wrong ${JSON.stringify(prepared.wrong.token)} (id ${prepared.wrong.id})`
      + ` · logit difference clean ${ld.clean.toFixed(3)}${ld.corrupted === null ? '' : `, corrupted ${ld.corrupted.toFixed(3)}`}`,
  ];
}

/** Every figure in a column, with a header, on a painter; returns { width, height }. */
function paintAll(painter, figures, prepared, model, width = 900) {
  const lines = headerLines(prepared, model);
  lines.forEach((line, i) => painter.text(12, 14 + i * 16, line, { size: i === 0 ? 13 : 11, bold: i === 0, color: '#1d2330' }));
  let y = 14 + lines.length * 16;
  let right = 0;
  for (const figure of figures) {
    const layout = figureLayout(figure, width - 24);
    if (painter.group) painter.group(figure.id, () => paintFigure(painter, figure, layout, 12, y));
    else paintFigure(painter, figure, layout, 12, y);
    y += layout.height + 14;
    right = Math.max(right, 12 + layout.width);
  }
  return { width: Math.max(width, right + 12), height: y };
}

/** The whole view as an SVG document. */
export function patchingSvg(figures, prepared, model) {
  const measure = svgPainter();
  const { width, height } = paintAll(measure, figures, prepared, model);
  return measure.svg(width, height);
}

/** The whole view on a new canvas (for the PNG). */
export function patchingCanvas(figures, prepared, model) {
  const size = paintAll(svgPainter(), figures, prepared, model);  // (a dry run for the size)
  const canvas = document.createElement('canvas');
  const ctx = prepareCanvas(canvas, size.width, size.height);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, size.width, size.height);
  paintAll(canvasPainter(ctx), figures, prepared, model);
  return canvas;
}

/** [layers][cols] nested arrays of a row-major [layers, cols] array. */
const nested = (data, rows, cols) => Array.from({ length: rows }, (_, r) => Array.from(data.subarray(r * cols, (r + 1) * cols)));

/** What JSON export saves: the inputs, the model, every sweep run, the attribution and the scores. */
export function patchingJson({ prepared, config, sweeps, model }) {
  const { numLayers: layers, numHeads: H } = config;
  const { attribution, scores } = prepared;
  return {
    kind: 'activation patching',
    model: model ?? null,
    config,
    metric: 'logit difference answer − wrong at the last position, normalized: 0 = the corrupted run, 1 = the clean run',
    clean: prepared.clean, corrupted: prepared.corrupted,
    answer: { id: prepared.answer.id, token: prepared.answer.token }, wrong: { id: prepared.wrong.id, token: prepared.wrong.token },
    logitDiff: prepared.logitDiff,
    sweeps: Object.fromEntries(Object.entries(sweeps).map(([over, s]) => [over, { shape: s.shape, data: nested(s.data, s.shape[0], s.shape[1]) }])),
    directLogitAttribution: {
      heads: { shape: [layers, H], data: nested(attribution.heads.data, layers, H) },
      mlps: { shape: [layers], data: Array.from(attribution.mlps.data) },
      accumulated: { shape: [layers + 1], data: Array.from(attribution.accumulated.data) },
    },
    headScores: Object.fromEntries(Object.entries(scores).map(([kind, s]) => [kind, { shape: s.shape, data: nested(s.data, layers, H) }])),
  };
}

/** What CSV export saves: one row per number (figure, layer, head, position, token, value). */
export function patchingCsv({ prepared, config, sweeps }) {
  const { numLayers: layers, numHeads: H } = config;
  const rows = [['figure', 'layer', 'head', 'position', 'token', 'value']];
  const tokens = prepared.clean.tokens;
  for (const [over, s] of Object.entries(sweeps)) {
    const cols = s.shape[1];
    const byHead = SWEEPS[over]?.columns === 'head';
    for (let l = 0; l < layers; l++) {
      for (let c = 0; c < cols; c++) {
        rows.push([`patching ${over}`, l, byHead ? c : '', byHead ? '' : c, byHead ? '' : tokens[c], s.data[l * cols + c]]);
      }
    }
  }
  const { heads, mlps, accumulated } = prepared.attribution;
  for (let l = 0; l < layers; l++) for (let h = 0; h < H; h++) rows.push(['attribution head', l, h, '', '', heads.data[l * H + h]]);
  for (let l = 0; l < layers; l++) rows.push(['attribution mlp', l, '', '', '', mlps.data[l]]);
  for (let l = 0; l <= layers; l++) rows.push(['accumulated residual', l, '', '', '', accumulated.data[l]]);
  for (const [kind, s] of Object.entries(prepared.scores)) {
    for (let l = 0; l < layers; l++) for (let h = 0; h < H; h++) rows.push([`score ${kind}`, l, h, '', '', s.data[l * H + h]]);
  }
  return rows;
}
