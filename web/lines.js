// The line view (as in bertviz): queries in the left column, keys in the right, a line from query
// i to key j whose opacity is the weight. Hovering a token shows only its lines; a click locks it.
// Long inputs show a window of at most MAX_ROWS tokens (queries and their visible keys).
import { displayToken, prepareCanvas } from './heatmap.js';

export const MAX_ROWS = 100;
const ROW = 16;
const TOP = 24;

/**
 * @param focus null, or { side: 'query' | 'key', index } : the token whose lines stand out.
 * Returns the geometry for hit testing.
 */
export function drawLines(canvas, { data, offset, labels, stride = labels.length, start, cellState, threshold, focus, width }) {
  const L = labels.length;
  const count = Math.min(L - start, MAX_ROWS);
  const height = TOP + count * ROW + 8;
  const ctx = prepareCanvas(canvas, width, height);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, width, height);
  const leftX = Math.min(160, width * 0.25);
  const rightX = width - leftX;
  const y = (k) => TOP + (k - start + 0.5) * ROW;

  ctx.font = '10px system-ui, sans-serif';
  ctx.fillStyle = '#98a2b3';
  ctx.textAlign = 'right';
  ctx.fillText('query', leftX - 8, 12);
  ctx.textAlign = 'left';
  ctx.fillText('key', rightX + 8, 12);

  const weight = (i, j) => {
    if (cellState(i, j) !== 0) return 0;
    const w = data[offset + i * stride + j];
    return w < threshold ? 0 : w;
  };
  const inFocus = (i, j) => !focus || (focus.side === 'query' ? i === focus.index : j === focus.index);
  ctx.lineWidth = 1.5;
  for (let i = start; i < start + count; i++) {
    for (let j = start; j < start + count; j++) {
      const w = weight(i, j);
      if (w <= 0.005) continue;
      const alpha = inFocus(i, j) ? w : w * 0.06;
      ctx.strokeStyle = `rgba(47, 91, 234, ${alpha.toFixed(3)})`;
      ctx.beginPath();
      ctx.moveTo(leftX + 4, y(i));
      ctx.lineTo(rightX - 4, y(j));
      ctx.stroke();
    }
  }

  ctx.font = '12px ui-monospace, Menlo, monospace';
  ctx.textBaseline = 'middle';
  for (let k = start; k < start + count; k++) {
    const text = displayToken(labels[k]).slice(0, 16);
    const padded = cellState(k, k) === 2;
    const focusQuery = focus?.side === 'query' && focus.index === k;
    const focusKey = focus?.side === 'key' && focus.index === k;
    ctx.fillStyle = padded ? '#c4a57a' : focusQuery ? '#2f5bea' : '#344054';
    ctx.textAlign = 'right';
    ctx.fillText(text, leftX - 8, y(k));
    ctx.fillStyle = padded ? '#c4a57a' : focusKey ? '#2f5bea' : '#344054';
    ctx.textAlign = 'left';
    ctx.fillText(text, rightX + 8, y(k));
    // With a query in focus, print the weight it gives each key next to the key.
    if (focus?.side === 'query' && weight(focus.index, k) > 0.005) {
      ctx.fillStyle = '#667085';
      ctx.font = '10px system-ui, sans-serif';
      ctx.fillText(weight(focus.index, k).toFixed(2), rightX + 30 + 7 * Math.min(text.length, 16), y(k));
      ctx.font = '12px ui-monospace, Menlo, monospace';
    }
  }
  return {
    hit: (px, py) => hitToken(px, py, { leftX, rightX, start, count }),
    /** Where a token's label is drawn (CSS pixels in the canvas), or null outside the window. */
    point: (side, index) => (index < start || index >= start + count ? null
      : { x: side === 'query' ? leftX - 12 : rightX + 12, y: y(index) }),
  };
}

/** Which token (side and index) is under a point of the line view, or null. */
function hitToken(px, py, { leftX, rightX, start, count }) {
  const k = Math.floor((py - TOP) / ROW);
  if (k < 0 || k >= count) return null;
  if (px < leftX + 4) return { side: 'query', index: start + k };
  if (px > rightX - 4) return { side: 'key', index: start + k };
  return null;
}
