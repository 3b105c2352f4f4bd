// Canvas heatmaps for attention matrices and output vectors. Long inputs stay fast because a
// matrix is first pooled (max per bin) to at most one cell per device pixel, written as ImageData,
// then scaled up without smoothing: drawing cost follows the canvas size, not L x L.

export const MASKED_COLOR = [228, 231, 238];  // causal: the query may not see this key
export const PADDED_COLOR = [246, 226, 200];  // a padding position (keyPaddingMask)
const LOW = [255, 255, 255];
const HIGH = [24, 52, 150];

/** White -> deep blue; the square root keeps weak but real attention visible. */
export function weightColor(w) {
  const t = Math.sqrt(Math.min(1, Math.max(0, w)));
  return LOW.map((low, c) => Math.round(low + (HIGH[c] - low) * t));
}

/** weightColor at LUT_STEPS + 1 evenly spaced weights, as RGB triples (colouring a big image per pixel is slow). */
const LUT_STEPS = 1024;
const WEIGHT_LUT = Uint8Array.from({ length: (LUT_STEPS + 1) * 3 }, (_, k) => weightColor(Math.floor(k / 3) / LUT_STEPS)[k % 3]);

/** Blue (negative) - white - red (positive), for output vectors. */
export function divergingColor(v) {
  const t = Math.min(1, Math.abs(v));
  const far = v < 0 ? [33, 102, 172] : [178, 24, 43];
  return far.map((f) => Math.round(255 + (f - 255) * t));
}

/**
 * Sizes a canvas for CSS pixels and the device pixel ratio; returns its 2D context in CSS units.
 * A canvas that already has the size is only cleared: resizing reallocates it, and a page that
 * redraws many times a second (Generate) would spend its time there.
 */
export function prepareCanvas(canvas, width, height) {
  const ratio = globalThis.devicePixelRatio || 1;
  const pixelWidth = Math.max(1, Math.round(width * ratio));
  const pixelHeight = Math.max(1, Math.round(height * ratio));
  const ctx = canvas.getContext('2d');
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  if (canvas.width !== pixelWidth || canvas.height !== pixelHeight) {
    canvas.width = pixelWidth;
    canvas.height = pixelHeight;
  } else {
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, pixelWidth, pixelHeight);
  }
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}

/**
 * Pools matrix [rows, cols] (starting at `offset` in `data`, rows `stride` apart: a generated
 * text's matrix sits in a larger buffer) into an RGBA image of at most maxRows x maxCols. A bin's color is its largest visible weight; a bin with only hidden cells gets
 * the causal-mask or padding color. `padding` (or null) marks padding positions (rows and columns).
 */
export function attentionImage(data, offset, rows, cols, maxRows, maxCols, { threshold = 0, causal = false, padding = null, stride = cols }) {
  const outRows = Math.min(rows, maxRows);
  const outCols = Math.min(cols, maxCols);
  const best = new Float32Array(outRows * outCols).fill(-1);
  const state = new Uint8Array(outRows * outCols).fill(3); // 0 visible, 1 causal-masked, 2 padding, 3 empty
  const colBin = Int32Array.from({ length: cols }, (_, j) => Math.floor((j * outCols) / cols));
  const hide = (bin, s) => { if (state[bin] !== 0 && s < state[bin]) state[bin] = s; };
  for (let i = 0; i < rows; i++) {
    const bi = Math.floor((i * outRows) / rows) * outCols;
    const row = offset + i * stride;
    const seen = causal ? Math.min(cols, i + 1) : cols; // keys this query may see
    if (padding?.[i]) {
      for (let c = 0; c < outCols; c++) hide(bi + c, 2);
      continue;
    }
    for (let j = 0; j < seen; j++) {
      const bin = bi + colBin[j];
      if (padding?.[j]) {
        hide(bin, 2);
        continue;
      }
      const w = data[row + j];
      if (w > best[bin]) best[bin] = w;
      state[bin] = 0;
    }
    // The causally hidden keys only need their bins marked, not every cell read.
    for (let c = seen < cols ? colBin[seen] : outCols; c < outCols; c++) hide(bi + c, 1);
  }
  const pixels = new Uint8ClampedArray(outRows * outCols * 4);
  for (let b = 0, p = 0; b < best.length; b++, p += 4) {
    let color = MASKED_COLOR;
    let at = 0;
    if (state[b] === 2) {
      color = PADDED_COLOR;
    } else if (state[b] !== 1) {
      color = WEIGHT_LUT;
      at = best[b] < threshold ? 0 : 3 * Math.round(Math.min(1, Math.max(0, best[b])) * LUT_STEPS);
    }
    pixels[p] = color[at];
    pixels[p + 1] = color[at + 1];
    pixels[p + 2] = color[at + 2];
    pixels[p + 3] = 255;
  }
  return new ImageData(pixels, outCols, outRows);
}

/** One scratch canvas per image size, reused by every redraw. */
const scratchCanvases = new Map();

/** Draws an ImageData into a rectangle, scaled without smoothing. */
export function blit(ctx, image, x, y, width, height) {
  const key = `${image.width}x${image.height}`;
  if (!scratchCanvases.has(key)) {
    if (scratchCanvases.size > 16) scratchCanvases.clear();  // sizes change when the window does
    scratchCanvases.set(key, new OffscreenCanvas(image.width, image.height));
  }
  const scratch = scratchCanvases.get(key);
  scratch.getContext('2d').putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(scratch, x, y, width, height);
}

/** Token text as drawn: visible marks for space and newline. */
export function displayToken(label) {
  return label === ' ' ? '␣' : label === '\n' ? '⏎' : label;
}

/**
 * The large view of one attention matrix [L, L] (rows `stride` apart) with token labels on both
 * axes (queries down, keys across); `highlightRow` (or null) is outlined, e.g. the newest token's.
 * Returns the geometry, for hit testing.
 */
export function drawLabeledAttention(canvas, { data, offset, labels, stride = labels.length, masks, threshold, maxSize, highlightRow = null }) {
  const L = labels.length;
  const longest = labels.reduce((m, l) => Math.max(m, displayToken(l).length), 1);
  const margin = Math.min(120, 14 + 7 * Math.min(longest, 14));
  const side = Math.max(120, Math.min(maxSize, 760) - margin);
  const cell = side / L;
  const ctx = prepareCanvas(canvas, margin + side + 4, margin + side + 4);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  const ratio = globalThis.devicePixelRatio || 1;
  const pixels = Math.floor(side * ratio);
  blit(ctx, attentionImage(data, offset, L, L, pixels, pixels, { threshold, stride, ...masks }), margin, margin, side, side);
  ctx.strokeStyle = '#d0d5dd';
  ctx.strokeRect(margin - 0.5, margin - 0.5, side + 1, side + 1);
  if (highlightRow !== null) {
    ctx.strokeStyle = '#e8590c';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(margin - 1, margin + highlightRow * cell - 1, side + 2, Math.max(cell, 1) + 2);
    ctx.lineWidth = 1;
  }

  // Labels: every token when there is room, else every k-th.
  const fontSize = Math.max(8, Math.min(12, cell * 0.8));
  const every = Math.max(1, Math.ceil(10 / cell));
  ctx.font = `${fontSize}px ui-monospace, Menlo, monospace`;
  ctx.fillStyle = '#344054';
  const clip = (text) => (text.length > 14 ? `${text.slice(0, 13)}…` : text);
  for (let i = 0; i < L; i += every) {
    const text = clip(displayToken(labels[i]));
    const center = margin + (i + 0.5) * cell;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.fillText(text, margin - 4, center);
    // Column labels: single characters upright, longer labels turned to read upwards.
    const turned = text.length > 2;
    ctx.save();
    ctx.translate(center, margin - 4);
    if (turned) ctx.rotate(-Math.PI / 2);
    ctx.textAlign = turned ? 'left' : 'center';
    ctx.textBaseline = turned ? 'middle' : 'bottom';
    ctx.fillText(text, 0, 0);
    ctx.restore();
  }
  ctx.fillStyle = '#98a2b3';
  ctx.font = '10px system-ui, sans-serif';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText('query ↓  key →', 2, 2);
  return { margin, cell, L };
}

/** Output vectors [L, E] as a heatmap: one column per token, one row per feature. */
export function drawOutputs(canvas, { data, L, E, width }) {
  data = data.subarray(0, L * E);  // a generated text's buffer holds room for tokens still to come
  const height = Math.max(96, Math.min(2 * E, 200));
  const ctx = prepareCanvas(canvas, width, height);
  const ratio = globalThis.devicePixelRatio || 1;
  const outCols = Math.min(L, Math.floor(width * ratio));
  const outRows = Math.min(E, Math.floor(height * ratio));
  let scale = 0;
  for (let i = 0; i < data.length; i++) scale = Math.max(scale, Math.abs(data[i]));
  scale = scale || 1;
  // Pool by keeping, per bin, the value of largest magnitude.
  const pooled = new Float32Array(outRows * outCols);
  for (let t = 0; t < L; t++) {
    const c = Math.floor((t * outCols) / L);
    for (let f = 0; f < E; f++) {
      const bin = Math.floor((f * outRows) / E) * outCols + c;
      const v = data[t * E + f] / scale;
      if (Math.abs(v) > Math.abs(pooled[bin])) pooled[bin] = v;
    }
  }
  const pixels = new Uint8ClampedArray(outRows * outCols * 4);
  pooled.forEach((v, b) => {
    pixels.set(divergingColor(v), b * 4);
    pixels[b * 4 + 3] = 255;
  });
  blit(ctx, new ImageData(pixels, outCols, outRows), 0, 0, width, height);
  return { scale };
}

// ---- value heatmaps (the Patching view): a [rows, cols] grid of numbers, labelled, with its colour scale ----
// Drawn through a painter, so that the same code draws the page's canvas, the PNG export (a canvas
// too) and the SVG export: { rect(x, y, w, h, fill, stroke?), text(x, y, text, options), line(...) }.

const css = ([r, g, b]) => `rgb(${r},${g},${b})`;
const escapeXml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A painter over a 2D context (CSS pixels). */
export function canvasPainter(ctx) {
  return {
    rect(x, y, w, h, fill, stroke = null) {
      if (fill) {
        ctx.fillStyle = fill;
        ctx.fillRect(x, y, w, h);
      }
      if (stroke) {
        ctx.strokeStyle = stroke;
        ctx.lineWidth = 1;
        ctx.strokeRect(x + 0.5, y + 0.5, w - 1, h - 1);
      }
    },
    text(x, y, text, { size = 11, align = 'left', baseline = 'middle', color = '#344054', rotate = 0, mono = false, bold = false } = {}) {
      ctx.save();
      ctx.font = `${bold ? '600 ' : ''}${size}px ${mono ? 'ui-monospace, Menlo, monospace' : 'system-ui, sans-serif'}`;
      ctx.fillStyle = color;
      ctx.textAlign = align === 'middle' ? 'center' : align;
      ctx.textBaseline = baseline;
      ctx.translate(x, y);
      if (rotate) ctx.rotate((rotate * Math.PI) / 180);
      ctx.fillText(text, 0, 0);
      ctx.restore();
    },
    line(x1, y1, x2, y2, color = '#98a2b3') {
      ctx.strokeStyle = color;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x2, y2);
      ctx.stroke();
    },
  };
}

/** A painter that writes SVG elements; svg(width, height) gives the document. */
export function svgPainter() {
  const parts = [];
  const anchor = { left: 'start', middle: 'middle', center: 'middle', right: 'end' };
  const baselines = { middle: 'central', top: 'hanging', bottom: 'text-after-edge', alphabetic: 'alphabetic' };
  const n = (v) => Math.round(v * 100) / 100;
  return {
    rect(x, y, w, h, fill, stroke = null) {
      parts.push(`<rect x="${n(x)}" y="${n(y)}" width="${n(w)}" height="${n(h)}" fill="${fill ?? 'none'}"${stroke ? ` stroke="${stroke}"` : ''}/>`);
    },
    text(x, y, text, { size = 11, align = 'left', baseline = 'middle', color = '#344054', rotate = 0, mono = false, bold = false } = {}) {
      parts.push(`<text x="${n(x)}" y="${n(y)}" font-size="${size}" font-family="${mono ? 'monospace' : 'sans-serif'}"${bold ? ' font-weight="600"' : ''}`
        + ` fill="${color}" text-anchor="${anchor[align]}" dominant-baseline="${baselines[baseline]}"`
        + `${rotate ? ` transform="rotate(${rotate} ${n(x)} ${n(y)})"` : ''}>${escapeXml(text)}</text>`);
    },
    line(x1, y1, x2, y2, color = '#98a2b3') {
      parts.push(`<line x1="${n(x1)}" y1="${n(y1)}" x2="${n(x2)}" y2="${n(y2)}" stroke="${color}"/>`);
    },
    group(id, draw) {
      parts.push(`<g id="${escapeXml(id)}">`);
      draw();
      parts.push('</g>');
    },
    svg(width, height) {
      return `<svg xmlns="http://www.w3.org/2000/svg" width="${n(width)}" height="${n(height)}" viewBox="0 0 ${n(width)} ${n(height)}">`
        + `<rect width="100%" height="100%" fill="#fff"/>${parts.join('')}</svg>`;
    },
  };
}

/**
 * A value scale over `data`: 'diverging' (blue negative, white 0, red positive, symmetric: ±max)
 * or 'sequential' (white 0 to deep blue at max, weightColor's); max is the largest |value|, and
 * at least `atLeast`. color(v) is a CSS colour.
 */
export function valueScale(kind, data, atLeast = 0) {
  let max = atLeast;
  for (const v of data) if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
  if (kind === 'diverging') {
    max = Math.max(max, 1e-6);
    return { kind, min: -max, max, color: (v) => css(divergingColor(v / max)) };
  }
  max = Math.max(max, 1e-6);
  return { kind, min: 0, max, color: (v) => css(weightColor(v / max)) };
}

const tick = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

/**
 * Where a value heatmap's parts go: spec { rows, cols, rowLabels, colLabels, title } within
 * `maxWidth` CSS pixels. Cells are as wide as fit (2 to 32 px), at least 12 px high; labels are
 * drawn for every k-th column when they would crowd.
 */
export function valueHeatmapLayout({ rows, cols, colLabels }, maxWidth) {
  const left = 44, top = 22, barWidth = 12, barGap = 16, tickWidth = 44;
  const longest = colLabels.reduce((m, l) => Math.max(m, String(l).length), 1);
  const cellW = Math.max(2, Math.min(32, Math.floor((maxWidth - left - barGap - barWidth - tickWidth) / cols)));
  const cellH = Math.max(12, Math.min(28, cellW));
  const turned = longest > 3;
  const labelEvery = Math.max(1, Math.ceil((turned ? 11 : 7 * longest + 4) / cellW));
  const bottom = 6 + (turned ? Math.min(90, 6 * Math.min(longest, 14) + 4) : 14);
  const plot = { x: left, y: top, w: cols * cellW, h: rows * cellH };
  const bar = { x: plot.x + plot.w + barGap, y: top, w: barWidth, h: Math.max(plot.h, 48) };
  return {
    plot, bar, cellW, cellH, rows, cols, turned, labelEvery,
    width: bar.x + barWidth + tickWidth, height: top + Math.max(plot.h, bar.h) + bottom,
    /** The cell under (x, y) (figure coordinates), or null. */
    hit(x, y) {
      const col = Math.floor((x - plot.x) / cellW), row = Math.floor((y - plot.y) / cellH);
      return row >= 0 && col >= 0 && row < rows && col < cols && x >= plot.x && y >= plot.y ? { row, col } : null;
    },
    /** The centre of a cell (figure coordinates). */
    centre(row, col) {
      return { x: plot.x + (col + 0.5) * cellW, y: plot.y + (row + 0.5) * cellH };
    },
  };
}

/**
 * Paints a value heatmap at (x0, y0): spec { data (row-major [rows, cols]), rows, cols, rowLabels,
 * colLabels, title, scale (valueScale) }, `layout` from valueHeatmapLayout; the colour bar beside
 * it is labelled with the scale's ends (and 0 on a diverging one).
 */
export function paintValueHeatmap(painter, spec, layout, x0 = 0, y0 = 0) {
  const { data, rows, cols, rowLabels, colLabels, title, scale } = spec;
  const { plot, bar, cellW, cellH, turned, labelEvery } = layout;
  const X = x0 + plot.x, Y = y0 + plot.y;
  painter.text(x0 + 2, y0 + 9, title, { size: 12, bold: true, color: '#1d2330' });
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = data[r * cols + c];
      painter.rect(X + c * cellW, Y + r * cellH, cellW + 0.02, cellH + 0.02, Number.isFinite(v) ? scale.color(v) : css(MASKED_COLOR));
    }
  }
  painter.rect(X - 0.5, Y - 0.5, plot.w + 1, plot.h + 1, null, '#d0d5dd');
  for (let r = 0; r < rows; r++) painter.text(X - 4, Y + (r + 0.5) * cellH, rowLabels[r], { align: 'right', size: 10 });
  for (let c = 0; c < cols; c += labelEvery) {
    const label = String(colLabels[c]);
    const text = label.length > 14 ? `${label.slice(0, 13)}…` : label;
    const cx = X + (c + 0.5) * cellW, cy = Y + plot.h + 4;
    if (turned) painter.text(cx, cy, text, { align: 'right', rotate: -90, size: 10, mono: true });
    else painter.text(cx, cy + 5, text, { align: 'middle', size: 10, mono: true });
  }
  // The colour bar: 24 bands from max (top) to min (bottom).
  const bands = 24, bx = x0 + bar.x, by = y0 + bar.y;
  for (let i = 0; i < bands; i++) {
    const v = scale.max - ((i + 0.5) / bands) * (scale.max - scale.min);
    painter.rect(bx, by + (i * bar.h) / bands, bar.w, bar.h / bands + 0.02, scale.color(v));
  }
  painter.rect(bx - 0.5, by - 0.5, bar.w + 1, bar.h + 1, null, '#d0d5dd');
  const ticks = scale.kind === 'diverging' ? [scale.max, 0, scale.min] : [scale.max, scale.max / 2, 0];
  ticks.forEach((v, i) => painter.text(bx + bar.w + 4, by + (i * bar.h) / (ticks.length - 1), tick(v), { size: 10 }));
}
