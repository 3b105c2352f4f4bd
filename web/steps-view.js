// The Steps view: one layer's attention as the chain the tutorials teach, for the selected head
// and query token, drawn from the steps forward's `capture` returned (docs/steps.md):
//   X -> Q, K, V -> QKᵀ -> ÷√d_k -> mask -> softmax -> ×V -> concat -> ×W_o -> output
// Each step is a small heatmap with its shape; the query's row is outlined through the chain.
// Hovering a score shows q_i, k_j, their products, the sum and the scale; hovering a softmax
// cell shows exp(x − max) / Σ for its row; blocked cells are drawn as blocked.
import { blit, divergingColor, displayToken, MASKED_COLOR, prepareCanvas, weightColor } from './heatmap.js';
import { stepsPrograms } from './steps-code.js';

/** The chain, in order: id, heading, what it computes, and whether its rows are the queries. */
export const CHAIN = [
  { id: 'x', title: 'X', what: 'the layer\'s input', queryRows: true },
  { id: 'q', title: 'Q', what: 'X W_qᵀ + b_q, this head', queryRows: true },
  { id: 'k', title: 'K', what: 'X W_kᵀ + b_k, its key/value head', queryRows: false },
  { id: 'v', title: 'V', what: 'X W_vᵀ + b_v, its key/value head', queryRows: false },
  { id: 'qk', title: 'QKᵀ', what: 'every query · every key', queryRows: true },
  { id: 'scores', title: '÷ √d_k', what: 'scaled (scores)', queryRows: true },
  { id: 'logits', title: 'mask', what: 'what softmax sees (logits)', queryRows: true },
  { id: 'pattern', title: 'softmax', what: 'each row sums to 1 (pattern)', queryRows: true },
  { id: 'zhead', title: '× V', what: 'weighted sum of V (z)', queryRows: true },
  { id: 'concat', title: 'concat', what: 'every head\'s z side by side', queryRows: true },
  { id: 'result', title: '× W_o', what: 'this head\'s share of the output', queryRows: true },
  { id: 'output', title: 'output', what: 'Σ heads + b_o', queryRows: true },
];

/**
 * One head's steps as matrices: { sizes, mats: { id: { data, rows, cols } } } from a layer of a
 * page result that has `captured` (unbatched) and `input`.
 */
export function headSteps(layerResult, { head, config }) {
  const c = layerResult.captured;
  const [H, L, Dh] = c.q.shape;
  const [Hkv, S] = c.k.shape;
  const Dv = c.v.shape[2];
  const E = layerResult.input.length / L, OD = c.result.shape[2];
  const kvh = Math.floor(head / (H / Hkv));
  const slice = (t, index, rows, cols) => ({ data: t.data.subarray(index * rows * cols, (index + 1) * rows * cols), rows, cols });
  const every = (t, rows, cols, pick) => {  // [rows, heads, cols] -> head `pick`'s [rows, cols]
    const out = new Float32Array(rows * cols);
    const heads = t.shape[1];
    for (let r = 0; r < rows; r++) out.set(t.data.subarray((r * heads + pick) * cols, (r * heads + pick + 1) * cols), r * cols);
    return { data: out, rows, cols };
  };
  const scale = config.scale ?? 1 / Math.sqrt(Dh);
  const scores = slice(c.scores, head, L, S);
  return {
    sizes: { L, S, E, H, Hkv, Dh, Dv, OD, kvh, scale },
    mats: {
      x: { data: layerResult.input, rows: L, cols: E },
      q: slice(c.q, head, L, Dh),
      k: slice(c.k, kvh, S, Dh),
      v: slice(c.v, kvh, S, Dv),
      qk: { data: scores.data.map((s) => s / scale), rows: L, cols: S },
      scores,
      logits: slice(c.logits, head, L, S),
      pattern: slice(c.pattern, head, L, S),
      zhead: every(c.z, L, Dv, head),
      concat: { data: c.z.data, rows: L, cols: H * Dv },
      result: every(c.result, L, OD, head),
      output: { data: layerResult.output.subarray(0, L * OD), rows: L, cols: OD },
    },
  };
}

const row = (m, i) => Array.from(m.data.subarray(i * m.cols, (i + 1) * m.cols));

/**
 * getState().steps: the query's numbers through the chain, as plain arrays (-Infinity where
 * blocked). `row`: the query's row in the matrices (a cache step has one row, at position `query`).
 */
export function stepsState(hs, { layer, head, query, row: r = query }) {
  const { mats, sizes } = hs;
  return {
    layer, head, query, scale: sizes.scale,
    q: row(mats.q, r),
    keys: Array.from({ length: sizes.S }, (_, j) => row(mats.k, j)),
    scores: row(mats.scores, r),
    logits: row(mats.logits, r),
    pattern: row(mats.pattern, r),
    values: Array.from({ length: sizes.S }, (_, j) => row(mats.v, j)),
    z: row(mats.zhead, r),
    output: row(mats.output, r),
  };
}

const fmt = (x) => (x === -Infinity ? '−∞' : Math.abs(x) >= 1000 || (x !== 0 && Math.abs(x) < 0.001) ? x.toExponential(2) : x.toFixed(3));
const vector = (values, limit = 8) => `[${values.slice(0, limit).map(fmt).join(', ')}${values.length > limit ? ', …' : ''}]`;

/**
 * The tooltip of cell (i, j) of step `id`: the arithmetic behind the number. Query row i is the
 * token at position i + queryOffset (a cache step's one row is the newest token).
 */
export function describeCell(hs, id, i, j, labels, queryOffset = 0) {
  const { mats, sizes } = hs;
  const m = mats[id];
  const value = m.data[i * m.cols + j];
  const token = (t) => `'${displayToken(labels[t] ?? String(t))}'`;
  const rowIndex = i;
  i += queryOffset;  // positions in the text from here on; rowIndex reads the matrices
  if (id === 'qk' || id === 'scores') {
    const q = row(mats.q, rowIndex), k = row(mats.k, j);
    const products = q.map((x, d) => x * k[d]);
    const sum = products.reduce((a, b) => a + b, 0);
    return [`query ${i} ${token(i)} · key ${j} ${token(j)}`,
      `q_i = ${vector(q)}`, `k_j = ${vector(k)}`, `q_i ⊙ k_j = ${vector(products)}`,
      `Σ = ${fmt(sum)}${id === 'scores' ? ` × scale ${fmt(sizes.scale)} (1/√${sizes.Dh}) = ${fmt(value)}` : ''}`].join('\n');
  }
  if (id === 'logits') {
    const score = mats.scores.data[rowIndex * m.cols + j];
    return value === -Infinity ? `query ${i} → key ${j}: blocked (−∞): softmax gives it 0`
      : `query ${i} → key ${j}: score ${fmt(score)}${Math.abs(value - score) > 1e-6 ? ` → ${fmt(value)} (mask / variant)` : ' (not masked)'}`;
  }
  if (id === 'pattern') {
    const logits = row(mats.logits, rowIndex);
    if (logits[j] === -Infinity) return `query ${i} → key ${j}: blocked: 0`;
    const max = Math.max(...logits);
    const sum = logits.reduce((a, l) => a + (l === -Infinity ? 0 : Math.exp(l - max)), 0);
    return [`query ${i} ${token(i)} → key ${j} ${token(j)}`,
      `exp(x − max) / Σ = exp(${fmt(logits[j])} − ${fmt(max)}) / ${fmt(sum)}`,
      `= ${fmt(Math.exp(logits[j] - max))} / ${fmt(sum)} = ${fmt(value)}`].join('\n');
  }
  const rowName = CHAIN.find((s) => s.id === id).queryRows ? `token ${i} ${token(i)}` : `key ${rowIndex} ${token(rowIndex)}`;
  return `${rowName}, feature ${j}: ${fmt(value)}`;
}

/**
 * A matrix into a canvas: signed values blue-white-red, the pattern white-blue, blocked cells grey
 * (−∞, or where `blocked`, the logits, is −∞).
 */
function drawMatrix(canvas, m, { width, height, probability, highlightRow, blocked = m }) {
  const ctx = prepareCanvas(canvas, width, height);
  let scale = 0;
  for (const x of m.data) if (Number.isFinite(x)) scale = Math.max(scale, Math.abs(x));
  scale ||= 1;
  const pixels = new Uint8ClampedArray(m.rows * m.cols * 4);
  for (let k = 0; k < m.rows * m.cols; k++) {
    const x = m.data[k];
    pixels.set(blocked.data[k] === -Infinity ? MASKED_COLOR : probability ? weightColor(x) : divergingColor(x / scale), k * 4);
    pixels[k * 4 + 3] = 255;
  }
  blit(ctx, new ImageData(pixels, m.cols, m.rows), 0, 0, width, height);
  ctx.strokeStyle = '#d0d5dd';
  ctx.strokeRect(0.5, 0.5, width - 1, height - 1);
  if (highlightRow !== null) {
    const cell = height / m.rows;
    ctx.strokeStyle = '#e8590c';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(0.75, highlightRow * cell, width - 1.5, Math.max(cell, 1.5));
  }
}

export class StepsView {
  #$;
  #boxes = new Map();  // step id -> { canvas, caption, size }
  #code = 'numpy';
  #hovered = null;
  #steps = null;  // the head's steps drawn last
  #labels = [];
  #queryOffset = 0;

  /** $: the page's getElementById; onSelectQuery(i) is called when a query row is clicked. */
  constructor($, { onSelectQuery }) {
    this.#$ = $;
    const chain = $('steps-chain');
    for (const step of CHAIN) {
      const box = document.createElement('figure');
      box.className = 'step';
      box.dataset.step = step.id;
      const canvas = document.createElement('canvas');
      const caption = document.createElement('figcaption');
      box.append(caption, canvas);
      chain.append(box);
      this.#boxes.set(step.id, { canvas, caption, size: null });
      box.addEventListener('mouseenter', () => this.#hover(step.id));
      box.addEventListener('mouseleave', () => this.#hover(null));
      canvas.addEventListener('mousemove', (event) => this.#tooltip(step.id, event));
      canvas.addEventListener('mouseleave', () => { $('steps-tooltip').hidden = true; });
      canvas.addEventListener('click', (event) => {
        const cell = this.#cellAt(step.id, event.clientX, event.clientY);
        if (cell && step.queryRows) onSelectQuery(cell.i);
      });
    }
    for (const tab of ['numpy', 'pytorch', 'keras']) {
      $(`steps-code-${tab}`).addEventListener('click', () => this.showCode(tab));
    }
  }

  get code() { return this.#code; }
  get hovered() { return this.#hovered; }

  /** Switches the code panel's tab. */
  showCode(tab) {
    this.#code = tab;
    for (const t of ['numpy', 'pytorch', 'keras']) this.#$(`steps-code-${t}`).setAttribute('aria-selected', String(t === tab));
    this.#renderCode();
  }

  /**
   * Draws head `hs` (headSteps) with row `query` outlined; `queryOffset`: the position of row 0
   * (a cache step: its one row is the newest token).
   */
  draw(hs, { query, labels, causal, padding, queryOffset = 0 }) {
    this.#steps = { ...hs, causal, padding: Boolean(padding) };
    this.#labels = labels;
    this.#queryOffset = queryOffset;
    const { L, S, E, H, Dh, Dv, OD } = hs.sizes;
    const shapes = {
      x: `[L, E] = [${L}, ${E}]`, q: `[L, Dh] = [${L}, ${Dh}]`, k: `[S, Dh] = [${S}, ${Dh}]`, v: `[S, Dv] = [${S}, ${Dv}]`,
      qk: `[L, S] = [${L}, ${S}]`, scores: `[L, S]`, logits: `[L, S]`, pattern: `[L, S]`, zhead: `[L, Dv] = [${L}, ${Dv}]`,
      concat: `[L, H·Dv] = [${L}, ${H * Dv}]`, result: `[L, E'] = [${L}, ${OD}]`, output: `[L, E'] = [${L}, ${OD}]`,
    };
    for (const step of CHAIN) {
      const m = hs.mats[step.id];
      const box = this.#boxes.get(step.id);
      const height = Math.max(40, Math.min(120, m.rows * 8));
      const width = Math.max(24, Math.min(130, (m.cols / m.rows) * height, m.cols * 8));
      box.size = { width, height };
      box.caption.innerHTML = `<b>${step.title}</b> <span class="shape">${shapes[step.id]}</span><br><small>${step.what}</small>`;
      drawMatrix(box.canvas, m, {
        width, height, probability: step.id === 'pattern', highlightRow: step.queryRows ? query : null,
        ...(step.id === 'pattern' && { blocked: hs.mats.logits }),
      });
    }
    this.#renderCode();
  }

  /** Where cell (i, j) of step `id` is on the page: { x, y } (for tests). */
  cellPoint(id, i, j) {
    const { canvas, size } = this.#boxes.get(id);
    const m = this.#steps.mats[id];
    const rect = canvas.getBoundingClientRect();
    return { x: rect.left + (j + 0.5) * (size.width / m.cols), y: rect.top + (i + 0.5) * (size.height / m.rows) };
  }

  #cellAt(id, clientX, clientY) {
    if (!this.#steps) return null;
    const { canvas, size } = this.#boxes.get(id);
    const m = this.#steps.mats[id];
    const rect = canvas.getBoundingClientRect();
    const i = Math.floor(((clientY - rect.top) / size.height) * m.rows), j = Math.floor(((clientX - rect.left) / size.width) * m.cols);
    return i >= 0 && j >= 0 && i < m.rows && j < m.cols ? { i, j } : null;
  }

  #tooltip(id, event) {
    const tip = this.#$('steps-tooltip');
    const cell = this.#cellAt(id, event.clientX, event.clientY);
    if (!cell) {
      tip.hidden = true;
      return;
    }
    tip.textContent = describeCell(this.#steps, id, cell.i, cell.j, this.#labels, this.#queryOffset);
    const panel = this.#$('steps-panel').getBoundingClientRect();
    tip.style.left = `${event.clientX - panel.left + 14}px`;
    tip.style.top = `${event.clientY - panel.top + 12}px`;
    tip.hidden = false;
  }

  #hover(id) {
    this.#hovered = id;
    for (const [step, box] of this.#boxes) box.canvas.parentElement.classList.toggle('hot', step === id);
    for (const line of this.#$('steps-code-text').children) line.classList.toggle('hot', id !== null && line.dataset.step === id);
  }

  #renderCode() {
    if (!this.#steps) return;
    const { sizes, causal, padding } = this.#steps;
    const lines = stepsPrograms({ ...sizes, causal, padding })[this.#code];
    this.#$('steps-code-text').replaceChildren(...lines.map(({ step, text }) => {
      const line = document.createElement('span');
      line.className = `line${step !== null && step === this.#hovered ? ' hot' : ''}`;
      if (step) line.dataset.step = step;
      line.textContent = `${text}\n`;
      line.addEventListener('mouseenter', () => step && this.#hover(step));
      line.addEventListener('mouseleave', () => this.#hover(null));
      return line;
    }));
  }
}
