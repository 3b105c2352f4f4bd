// A line chart as SVG text: the tutorial's two plots (loss and accuracy per epoch, training and
// validation). Used by examples/train-sentiment.mjs (written to files) and by the demo page (live).
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728'];
const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));

/** Round numbers for an axis from lo to hi: about `count` ticks at 1, 2 or 5 x 10^k steps. */
function ticks(lo, hi, count = 5) {
  const raw = (hi - lo) / count || 1, power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toFixed(10)));
  return out;
}

/**
 * series: [{ name, values: [y per x = 1, 2, ...] }]. Returns an SVG document (width x height px)
 * with axes, ticks, a title, axis labels and a legend.
 */
export function lineChartSvg({ title, xLabel = 'epoch', yLabel, series, width = 480, height = 320 }) {
  const margin = { left: 56, right: 16, top: 32, bottom: 44 };
  const plotW = width - margin.left - margin.right, plotH = height - margin.top - margin.bottom;
  const all = series.flatMap((s) => s.values).filter(Number.isFinite);
  const n = Math.max(1, ...series.map((s) => s.values.length));
  let lo = all.length ? Math.min(...all) : 0, hi = all.length ? Math.max(...all) : 1;
  if (hi - lo < 1e-6) { lo -= 0.5; hi += 0.5; }
  const pad = (hi - lo) * 0.05;
  lo -= pad; hi += pad;
  const x = (i) => margin.left + (n === 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v) => margin.top + (1 - (v - lo) / (hi - lo)) * plotH;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14">${escape(title)}</text>`,
    `<text x="${margin.left + plotW / 2}" y="${height - 8}" text-anchor="middle">${escape(xLabel)}</text>`,
    `<text transform="translate(14 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escape(yLabel)}</text>`,
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#444"/>`];
  for (const v of ticks(lo, hi)) {
    parts.push(`<line x1="${margin.left - 4}" x2="${margin.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${margin.left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  const every = Math.max(1, Math.ceil(n / 10));
  for (let i = 0; i < n; i += every) parts.push(`<text x="${x(i)}" y="${margin.top + plotH + 16}" text-anchor="middle">${i + 1}</text>`);
  series.forEach((s, k) => {
    const color = COLORS[k % COLORS.length];
    const points = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${points}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const [i, v] of s.values.entries()) parts.push(`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${color}"/>`);
    parts.push(`<rect x="${margin.left + 10}" y="${margin.top + 8 + k * 18}" width="12" height="3" fill="${color}"/>`,
      `<text x="${margin.left + 28}" y="${margin.top + 13 + k * 18}">${escape(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}
