// Fits the polynomial of src/mha/kernels/fast_exp.hpp: q(r) of degree 3 in exp(r) = 1 + r + r^2 q(r),
// minimax for relative error on |r| <= ln2/2 (Lawson iterations over weighted least squares),
// then checks the float32 evaluation the kernel does over the softmax range [-87, 0].
// Run: node tools/fit_exp_polynomial.mjs
const a = Math.LN2 / 2, N = 4001, deg = 4;
const r = Array.from({ length: N }, (_, i) => -a + (2 * a * i) / (N - 1)).filter((x) => Math.abs(x) > 1e-9);
const target = r.map((x) => (Math.exp(x) - 1 - x) / (x * x));
const scale = r.map((x) => (x * x) / Math.exp(x));  // relative error of exp per unit error of q
let W = r.map(() => 1), c;
function solve(A, b) { // gaussian elimination
  const n = b.length; A = A.map((row, i) => [...row, b[i]]);
  for (let i = 0; i < n; i++) { let p = i; for (let k = i + 1; k < n; k++) if (Math.abs(A[k][i]) > Math.abs(A[p][i])) p = k; [A[i], A[p]] = [A[p], A[i]];
    for (let k = i + 1; k < n; k++) { const f = A[k][i] / A[i][i]; for (let j = i; j <= n; j++) A[k][j] -= f * A[i][j]; } }
  const x = Array(n).fill(0); for (let i = n - 1; i >= 0; i--) { let s = A[i][n]; for (let j = i + 1; j < n; j++) s -= A[i][j] * x[j]; x[i] = s / A[i][i]; } return x; }
let best = [Infinity];
for (let it = 0; it < 300; it++) {
  const M = Array.from({ length: deg }, () => Array(deg).fill(0)), v = Array(deg).fill(0);
  r.forEach((x, i) => { const w = W[i] * scale[i] ** 2; const p = Array.from({ length: deg }, (_, k) => x ** k);
    for (let j = 0; j < deg; j++) { v[j] += w * p[j] * target[i]; for (let k = 0; k < deg; k++) M[j][k] += w * p[j] * p[k]; } });
  c = solve(M, v);
  const err = r.map((x, i) => Math.abs((c.reduce((s, ck, k) => s + ck * x ** k, 0) - target[i]) * scale[i]));
  const m = Math.max(...err); if (m < best[0]) best = [m, c.slice()];
  const tot = err.reduce((s, e, i) => s + W[i] * e, 0); W = W.map((w, i) => (w * err[i]) / tot);
}
console.log('max relative error (exact):', best[0].toExponential(3));
const cf = best[1].map(Math.fround);
console.log('coefficients c2..c5:', cf.map((x) => x.toPrecision(9)).join(', '));
// float32 evaluation as the kernel does it (wasm: mul then add; r from the 2-constant reduction)
const f = Math.fround; let worst = 0;
for (let x = -87; x <= 0; x += 0.00037) {
  const xf = f(x), n = Math.round(xf / Math.LN2);
  let rr = f(xf - f(n * 0.693359375)); rr = f(rr - f(n * -2.12194440e-4));
  let q = cf[3]; q = f(f(q * rr) + cf[2]); q = f(f(q * rr) + cf[1]); q = f(f(q * rr) + cf[0]);
  const e = f(f(q * f(rr * rr)) + f(rr + 1));
  const y = f(e * 2 ** n), exact = Math.exp(xf);
  worst = Math.max(worst, Math.abs(y - exact) / exact);
}
console.log('float32 worst relative error over [-87, 0]:', worst.toExponential(3), '=', (worst / 2 ** -23).toFixed(2), 'ulp of 1');
