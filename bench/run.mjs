// `npm run bench`: one table per build (wasm 1 thread, wasm threads, native 1 thread, native
// 2 threads) with ms (median after warm-up), GFLOPS and the ratio to each peer measured in the
// same run, plus each process's peak memory. Every implementation runs in its own process,
// shape by shape, interleaved, in --passes rounds (default 3; a cell reports the median of its
// rounds' medians, the lower one for an even count; the JS loop runs once). Options:
// --shapes=0,2 (indexes into SHAPES), --extra=1x384x1024x16,4x200x640x10:S300 (shapes of your own,
// BxLxExH[:S<keys>], which nothing was tuned on; wasm and the web peer only: the native binary
// registers SHAPES alone), --threads=2, --passes=3, --js=no, --native=no (the wasm tables alone),
// --simd=relaxed (default: our relaxed-SIMD builds, which init() loads in Chrome 114+ and Node 22+;
// on Node 20 every wasm process, the peer's too, runs with V8's relaxed-SIMD flag) or --simd=plain
// (the SIMD128 builds, which engines without relaxed SIMD load).
import { execFileSync } from 'node:child_process';
import fs, { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { relaxedSimd } from 'wasm-feature-detect';

import { attentionModel } from './onnx-graph.mjs';
import { benchWeights, flops, label, SHAPES } from './shapes.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const extra = (args.extra ? args.extra.split(',') : []).map((text) => {
  const m = /^(\d+)x(\d+)x(\d+)x(\d+)(?::S(\d+))?$/.exec(text);
  if (!m) throw new TypeError(`--extra: each shape is BxLxExH or BxLxExH:S<keys>, got ${JSON.stringify(text)}`);
  const [B, L, E, H] = m.slice(1, 5).map(Number);
  return { B, L, S: m[5] ? Number(m[5]) : L, E, H, extra: true };
});
const shapes = [...(args.shapes !== undefined ? args.shapes.split(',').filter(Boolean).map((i) => SHAPES[Number(i)]) : SHAPES), ...extra];
const NATIVE = args.native !== 'no';
const THREADS = Number(args.threads ?? 2), PASSES = Number(args.passes ?? 3);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mha-bench-'));
const SIMD = args.simd ?? 'relaxed';
if (!['relaxed', 'plain'].includes(SIMD)) throw new TypeError(`--simd: relaxed or plain, got ${JSON.stringify(SIMD)}`);
const OURS = { 1: SIMD === 'relaxed' ? 'mha-relaxed-simd' : 'mha-simd' };
OURS.threads = `${OURS[1]}-threads`;
// The wasm processes' engine flags: relaxed SIMD on where this Node has it only behind a flag.
const WASM_FLAGS = SIMD === 'relaxed' && !(await relaxedSimd()) ? ['--experimental-wasm-relaxed-simd'] : [];

function run(command, argv, env = {}) {
  const out = execFileSync(command, argv, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env } });
  return out;
}

function node(impl, s, threads, model) {
  try {
    const flags = impl === 'mha-wasm' || impl === 'ort-web' ? WASM_FLAGS : [];
    const line = run(process.execPath, [...flags, 'bench/worker.mjs', impl, s.B, s.L, s.S, s.E, s.H, threads, model ?? ''].map(String),
      { MHA_BENCH_BUILD: threads > 1 ? OURS.threads : OURS[1] })
      .trim().split('\n').pop();
    return JSON.parse(line);
  } catch (error) {
    const message = String(error.stderr || error.message).split('\n').find((l) => /Error|error/.test(l)) ?? 'failed';
    return { error: message.trim().slice(0, 80) };
  }
}

function nativeOurs(s, threads, benchmark = 'forward') {
  const name = `${benchmark}/${s.B}/${s.L}/${s.S}/${s.E}/${s.H}/${threads}/real_time`;
  try {
    const json = JSON.parse(run(path.join(ROOT, 'build/native/mha_bench'), [
      `--benchmark_filter=^${name}$`, '--benchmark_repetitions=5', '--benchmark_report_aggregates_only=true',
      '--benchmark_format=json', '--benchmark_min_time=0.2']));
    const median = json.benchmarks.find((b) => b.aggregate_name === 'median');
    const ms = median.real_time * { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 }[median.time_unit];
    return { ms, runs: 5, peakMB: median.peak_rss_MB };
  } catch (error) {
    return { error: String(error.message).slice(0, 80) };
  }
}

const gflops = (s, r) => (r.ms ? flops(s) / (r.ms * 1e6) : NaN);
const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');

/** The lower median of the rounds' medians (and the largest peak memory); an error if every round failed. */
function combine(rounds) {
  const ok = rounds.filter((r) => r.ms);
  if (!ok.length) return rounds[0];
  const ms = ok.map((r) => r.ms).sort((a, b) => a - b);
  const gemm = [...new Set(ok.map((r) => r.gemm).filter(Boolean))].join('/');  // our wasm passes' GEMM variants
  return { ms: ms[Math.floor((ms.length - 1) / 2)], peakMB: Math.max(...ok.map((r) => r.peakMB)), rounds: ms, gemm };
}

const rounds = shapes.map(() => ({}));  // per shape: { cell: [result per pass] }
const models = shapes.map((s, i) => {
  const file = path.join(tmp, `model-${i}.onnx`);
  writeFileSync(file, attentionModel(s, benchWeights(s.E), s.S !== s.L));
  return file;
});
// The machine's FMA peak (a register-resident loop in build/native/mha_bench), measured in every
// pass between the shapes; the table uses the best of them, since a neighbour on this shared VM
// can only slow a measurement down (one measured after the run read 305 GFLOPS on 2 threads
// against 2 x 237 on one, and put the 2-thread rows above 100%).
const peakRounds = { 1: [], [THREADS]: [] };
function measurePeak(threads) {
  try {
    const json = JSON.parse(run(path.join(ROOT, 'build/native/mha_bench'), [
      `--benchmark_filter=^fma_peak/${threads}/real_time$`, '--benchmark_repetitions=3', '--benchmark_format=json',
      '--benchmark_min_time=0.2']));
    for (const b of json.benchmarks) if (b.run_type === 'iteration') peakRounds[threads].push(b.GFLOPS);
  } catch { /* no native build: the table shows '-' */ }
}
for (let pass = 0; pass < PASSES; pass++) {
  shapes.forEach((s, i) => {
    const native = {
      native1: () => nativeOurs(s, 1), ortnode1: () => node('ort-node', s, 1, models[i]),
      nativeN: () => nativeOurs(s, THREADS), ortnodeN: () => node('ort-node', s, THREADS, models[i]),
      eigen1: () => nativeOurs(s, 1, 'eigen_forward'), eigenN: () => nativeOurs(s, THREADS, 'eigen_forward'),
    };
    const skipped = () => ({ error: s.extra ? 'not registered natively' : 'skipped' });
    const measure = {  // ours and the peer alternate, one thread count at a time
      wasm1: () => node('mha-wasm', s, 1), ortweb1: () => node('ort-web', s, 1, models[i]),
      wasmN: () => node('mha-wasm', s, THREADS), ortwebN: () => node('ort-web', s, THREADS, models[i]),
      ...Object.fromEntries(Object.entries(native).map(([cell, run]) => [cell, NATIVE && !s.extra ? run : skipped])),
    };
    if (pass === 0) measure.js = () => (args.js === 'no' ? { error: 'skipped' } : node('js-loop', s, 1));
    for (const [cell, run] of Object.entries(measure)) (rounds[i][cell] ??= []).push(run());
    process.stderr.write(`pass ${pass + 1}/${PASSES}: measured ${label(s)}\n`);
    if (NATIVE && (i % 2 === 1 || i === shapes.length - 1)) {  // (so a run of one shape measures it too)
      measurePeak(1);
      measurePeak(THREADS);
    }
  });
}
rmSync(tmp, { recursive: true, force: true });
const results = shapes.map((s, i) => ({
  shape: s, cells: Object.fromEntries(Object.entries(rounds[i]).map(([cell, r]) => [cell, combine(r)])),
}));

function table(title, ours, peer, peerName, oursSingle) {
  const head = ['shape', 'ms', 'GFLOPS', `vs ${peerName}`, 'vs JS loop', ...(oursSingle ? ['vs our 1 thread'] : []),
    'peak MB', `${peerName} ms`, `${peerName} GFLOPS`, `${peerName} peak MB`];
  const rows = results.map(({ shape: s, cells }) => {
    const o = cells[ours], p = cells[peer], js = cells.js;
    return [label(s) + (s.extra ? ' (--extra)' : ''), fmt(o.ms), fmt(gflops(s, o)), p.error ? p.error : `${fmt(p.ms / o.ms, 2)}x`,
      js.ms ? `${fmt(js.ms / o.ms, 0)}x` : '-', ...(oursSingle ? [`${fmt(cells[oursSingle].ms / o.ms, 2)}x`] : []),
      fmt(o.peakMB, 0), fmt(p.ms), fmt(gflops(s, p)), fmt(p.peakMB, 0)];
  });
  console.log(`\n### ${title}\n`);
  // Which CPU (the variants' speeds, and so the calibration's pick, depend on it) and, for our wasm
  // rows, the GEMM variant each process ran.
  const variants = [...new Set(results.flatMap(({ cells }) => (cells[ours].gemm || '').split('/')).filter(Boolean))];
  console.log(`CPU: ${cpuModel()}${variants.length ? `; our GEMM variant (calibrated per process): ${variants.join(', ')}` : ''}\n`);
  console.log(`| ${head.join(' | ')} |\n|${head.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

/** The CPU's model name: /proc/cpuinfo's (Linux), else Node's os.cpus(). */
function cpuModel() {
  try {
    const line = fs.readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'));
    if (line) return line.split(':')[1].trim();
  } catch {
    // (not Linux)
  }
  return os.cpus()[0]?.model ?? 'unknown CPU';
}

console.log(`Machine: ${cpuModel()}, ${os.cpus().length} logical cores, Node ${process.version}; `
  + 'fp32 forward with projections, no weights; FLOPs = 4BLE^2 + 4BSE^2 + 4BLSE; '
  + `ratios = peer ms / our ms (higher is better for us); ${PASSES} interleaved passes; JS loop: one run.`);
const engine = WASM_FLAGS.length ? ` (Node ${process.version} with ${WASM_FLAGS.join(' ')}, both)` : '';
table(`wasm, 1 thread (${OURS[1]}) vs onnxruntime-web wasm, 1 thread${engine}`, 'wasm1', 'ortweb1', 'ort-web');
table(`wasm, ${THREADS} threads (${OURS.threads}) vs onnxruntime-web wasm, ${THREADS} threads${engine}`, 'wasmN', 'ortwebN', 'ort-web', 'wasm1');
if (!NATIVE) process.exit(0);  // (--native=no: the wasm tables alone)
table('native, 1 thread vs onnxruntime-node, 1 thread', 'native1', 'ortnode1', 'ort-node');
table(`native, ${THREADS} threads vs onnxruntime-node, ${THREADS} threads`, 'nativeN', 'ortnodeN', 'ort-node', 'native1');

const best = (xs) => (xs.length ? Math.max(...xs) : NaN);
const peak = { 1: best(peakRounds[1]), [THREADS]: best(peakRounds[THREADS]) };
console.log('\n### native vs the same layer written with Eigen (Eigen GEMMs, array softmax, its OpenMP threads), and the share of the FMA peak\n');
console.log(`FMA peak measured in this run: ${fmt(peak[1])} GFLOPS on 1 thread, ${fmt(peak[THREADS])} on ${THREADS} (bench/native/forward_benchmark.cpp fma_peak).\n`);
const head = ['shape', 'native 1T ms', 'Eigen 1T ms', 'vs Eigen', '% of peak', `native ${THREADS}T ms`, `Eigen ${THREADS}T ms`, 'vs Eigen', '% of peak'];
console.log(`| ${head.join(' | ')} |\n|${head.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
for (const { shape: s, cells } of results) {
  const ratio = (ours, eigen) => (ours.ms && eigen.ms ? `${fmt(eigen.ms / ours.ms, 2)}x` : eigen.error ?? '-');
  const share = (ours, n) => (ours.ms ? `${fmt(100 * gflops(s, ours) / peak[n], 0)}%` : '-');
  console.log(`| ${label(s)} | ${fmt(cells.native1.ms)} | ${fmt(cells.eigen1.ms)} | ${ratio(cells.native1, cells.eigen1)} | ${share(cells.native1, 1)} `
    + `| ${fmt(cells.nativeN.ms)} | ${fmt(cells.eigenN.ms)} | ${ratio(cells.nativeN, cells.eigenN)} | ${share(cells.nativeN, THREADS)} |`);
}
