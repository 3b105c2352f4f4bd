// Fits the polynomial of src/mha/kernels/fast_exp.hpp: 2^f = 1 + f q(f) with q of degree 4,
// minimax for relative error on |f| <= 1/2 (Lawson iterations over weighted least squares), then
// checks the float32 evaluation the kernel does (t = x log2 e clamped at -127, n = round(t) by
// the 1.5 * 2^23 bias, Estrin's scheme, wasm's separate mul and add) over the softmax range [-87, 0].
// Run: node tools/fit_exp_polynomial.mjs
const a = 0.5, N = 4001, deg = 5;
const f = Array.from({ length: N }, (_, i) => -a + (2 * a * i) / (N - 1)).filter((x) => Math.abs(x) > 1e-9);
const target = f.map((x) => (2 ** x - 1) / x);
const scale = f.map((x) => x / 2 ** x);  // relative error of 2^f per unit error of q
let W = f.map(() => 1), c;
function solve(A, b) { // gaussian elimination
  const n = b.length; A = A.map((row, i) => [...row, b[i]]);
  for (let i = 0; i < n; i++) { let p = i; for (let k = i + 1; k < n; k++) if (Math.abs(A[k][i]) > Math.abs(A[p][i])) p = k; [A[i], A[p]] = [A[p], A[i]];
    for (let k = i + 1; k < n; k++) { const m = A[k][i] / A[i][i]; for (let j = i; j <= n; j++) A[k][j] -= m * A[i][j]; } }
  const x = Array(n).fill(0); for (let i = n - 1; i >= 0; i--) { let s = A[i][n]; for (let j = i + 1; j < n; j++) s -= A[i][j] * x[j]; x[i] = s / A[i][i]; } return x; }
let best = [Infinity];
for (let it = 0; it < 300; it++) {
  const M = Array.from({ length: deg }, () => Array(deg).fill(0)), v = Array(deg).fill(0);
  f.forEach((x, i) => { const w = W[i] * scale[i] ** 2; const p = Array.from({ length: deg }, (_, k) => x ** k);
    for (let j = 0; j < deg; j++) { v[j] += w * p[j] * target[i]; for (let k = 0; k < deg; k++) M[j][k] += w * p[j] * p[k]; } });
  c = solve(M, v);
  const err = f.map((x, i) => Math.abs((c.reduce((s, ck, k) => s + ck * x ** k, 0) - target[i]) * scale[i]));
  const m = Math.max(...err); if (m < best[0]) best = [m, c.slice()];
  const tot = err.reduce((s, e, i) => s + W[i] * e, 0); W = W.map((w, i) => (w * err[i]) / tot);
}
console.log('max relative error of 2^f (exact arithmetic):', best[0].toExponential(3));
const cf = best[1].map(Math.fround);
console.log('coefficients c1..c5:', cf.map((x) => x.toPrecision(9)).join(', '));
// float32 evaluation as the kernel does it (wasm: mul then add, each rounded)
const r32 = Math.fround, mad = (x, y, z) => r32(r32(x * y) + z);
let worstRelNearZero = 0, worstAbs = 0;
for (let x = -87; x <= 0; x += 0.00037) {
  const xf = r32(x), t = Math.max(r32(xf * r32(Math.LOG2E)), -127);
  const biased = r32(t + 12582912), fr = r32(t - r32(biased - 12582912)), n = biased - 12582912;
  const f2 = r32(fr * fr);
  const low = mad(cf[0], fr, 1), mid = mad(cf[2], fr, cf[1]), high = mad(cf[4], fr, cf[3]);
  const p = mad(f2, mad(f2, high, mid), low);
  const y = r32(p * 2 ** n), exact = Math.exp(xf);
  if (xf >= -1) worstRelNearZero = Math.max(worstRelNearZero, Math.abs(y - exact) / exact);
  worstAbs = Math.max(worstAbs, Math.abs(y - exact));
}
const ulp = 2 ** -23;
console.log(`float32: relative error on [-1, 0] ${worstRelNearZero.toExponential(3)} (${(worstRelNearZero / ulp).toFixed(2)} ulp); `
  + `absolute error on [-87, 0] ${worstAbs.toExponential(3)} (${(worstAbs / ulp).toFixed(2)} ulp of 1)`);
