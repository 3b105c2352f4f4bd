// The training table of `npm run bench` (issue 22): one self-attention layer's forward pass alone
// against forward + backward (forward with grad: true, then backward(dOut): the gradients of the
// input and of every weight for loss = sum(output * G)), through the public API, on the
// benchmark's self-attention shapes and the Keras tutorial's layer; wasm 1 and N threads, native
// 1 and N threads (bench/native/forward_benchmark.cpp training_forward / training_step), and the
// peers in the same run, each in its own process:
//   tfjs 4.22's wasm and cpu backends, the step written as tfjs users must (bench/tfjs-attention.mjs)
//   PyTorch (Debian's python3-torch with OpenBLAS), nn.MultiheadAttention (bench/training_torch.py)
// Then L = S = 8192 forward + backward in the wasm builds, with the memory it took.
//   node bench/training.mjs [--shapes=0,5] [--passes=3] [--threads=2] [--peers=no] [--long=no]
//                           [--clock=cpu] [--tfjs-cpu-max-gflop=12]
// A cell is the median of its passes' medians (the lower one for an even count). A peer cell
// whose step takes over 10 s is measured in the first pass only. --clock=cpu: one-thread cells
// in CPU time of their process, which leaves out the time it waited for a core while other
// processes ran (N-thread cells stay in wall time). It does not leave out time the hypervisor
// gave the core to another VM: this VM reports no steal time, and a plain loop's CPU time grew
// 5x on a crowded host. Compare cells of one run; figures for the record come from a quiet machine.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { TRAINING_SHAPES, trainingFlops, trainingLabel } from './shapes.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const shapes = args.shapes ? args.shapes.split(',').map((i) => TRAINING_SHAPES[Number(i)]) : TRAINING_SHAPES;
const THREADS = Number(args.threads ?? 2), PASSES = Number(args.passes ?? 3);
const PEERS = args.peers !== 'no', LONG = args.long !== 'no', CPU_CLOCK = args.clock === 'cpu';
// tfjs' cpu backend trains at ~0.5 GFLOPS: a 2048-token step would take minutes.
const TFJS_CPU_MAX_GFLOP = Number(args['tfjs-cpu-max-gflop'] ?? 12);
const SLOW_MS = 10000;
const NATIVE = path.join(ROOT, 'build/native/mha_bench');
const TORCH = '/usr/bin/python3';  // Debian's, with python3-torch (not a pyenv/venv python)

function run(command, argv, env) {
  return execFileSync(command, argv, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'pipe'], env });
}

function failure(error) {
  // The thrown error's own line (`TypeError: forward: ...`), not the source line Node prints above it.
  const lines = String(error.stderr || error.message).split('\n');
  const message = lines.find((l) => /^\s*(\w*Error|error)\b/.test(l)) ?? lines.find((l) => /error/i.test(l)) ?? 'failed';
  return { error: message.trim() };
}

const shapeArgs = (s) => [s.B, s.L, s.E, s.H, s.Dh].map(String);

/** One process of bench/training-worker.mjs or bench/training_torch.py: its JSON line. */
function worker(impl, s, threads, budgetMs = 2000) {
  try {
    const out = impl === 'torch'
      ? run(TORCH, ['bench/training_torch.py', ...shapeArgs(s), String(budgetMs)])
      : run(process.execPath, ['bench/training-worker.mjs', impl, ...shapeArgs(s), String(threads), String(budgetMs)]);
    return JSON.parse(out.trim().split('\n').pop());
  } catch (error) {
    return failure(error);
  }
}

/** Google Benchmark's training_forward and training_step rows (median of 3 repetitions). */
function native(s, threads) {
  try {
    const name = (b) => `${b}/${[...shapeArgs(s), threads].join('/')}/real_time`;
    const json = JSON.parse(run(NATIVE, [
      `--benchmark_filter=^(${name('training_forward')}|${name('training_step')})$`, '--benchmark_repetitions=3',
      '--benchmark_report_aggregates_only=true', '--benchmark_format=json', '--benchmark_min_time=0.2']));
    const median = (b) => json.benchmarks.find((r) => r.aggregate_name === 'median' && r.run_name === name(b));
    const ms = (r, key) => r[key] * { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 }[r.time_unit];
    const f = median('training_forward'), t = median('training_step');
    return {
      forwardMs: ms(f, 'real_time'), stepMs: ms(t, 'real_time'), forwardCpuMs: ms(f, 'cpu_time'), stepCpuMs: ms(t, 'cpu_time'),
      peakMB: Math.max(f.peak_rss_MB, t.peak_rss_MB), check: [t.check_dx, t.check_dwo],
    };
  } catch (error) {
    return failure(error);
  }
}

const hasTfjs = existsSync(path.join(ROOT, 'bench/node_modules/@tensorflow/tfjs-backend-wasm/package.json'));
let torchInfo = null;
try {
  torchInfo = JSON.parse(run(TORCH, ['-c', 'import json, os, torch; print(json.dumps({"torch": torch.__version__, '
    + '"blas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")}))']));
} catch { /* no python3-torch: the PyTorch column shows why */ }

// Cells: [name, threads, measure]. Ours and the peers alternate, shape by shape, pass by pass.
const cells = (s) => {
  const flops = trainingFlops(s);
  const list = [
    ['wasm1', 1, () => worker('mha-wasm', s, 1)],
    ['wasmN', THREADS, () => worker('mha-wasm', s, THREADS)],
    ['native1', 1, () => native(s, 1)],
    ['nativeN', THREADS, () => native(s, THREADS)],
  ];
  if (PEERS) {
    list.push(['tfjsWasm', 1, () => (hasTfjs ? worker('tfjs-wasm', s, 1) : { error: 'not installed (npm ci --prefix bench)' })]);
    list.push(['tfjsCpu', 1, () => (!hasTfjs ? { error: 'not installed' }
      : (flops.forward + flops.backward) / 1e9 > TFJS_CPU_MAX_GFLOP ? { error: `skipped (> ${TFJS_CPU_MAX_GFLOP} GFLOP)` }
        : worker('tfjs-cpu', s, 1))]);
    list.push(['torch', 1, () => (torchInfo ? worker('torch', s, 1) : { error: 'python3-torch missing' })]);
  }
  return list;
};

const PEER_CELLS = ['tfjsWasm', 'tfjsCpu', 'torch'];
const rounds = shapes.map(() => ({}));
for (let pass = 0; pass < PASSES; pass++) {
  shapes.forEach((s, i) => {
    for (const [cell, , measure] of cells(s)) {
      const earlier = rounds[i][cell];
      if (earlier && PEER_CELLS.includes(cell) && (earlier[0].error || earlier[0].stepMs > SLOW_MS)) continue;  // slow peers: once
      (rounds[i][cell] ??= []).push(measure());
    }
    process.stderr.write(`pass ${pass + 1}/${PASSES}: measured ${trainingLabel(s)}\n`);
  });
}

/** A cell's figures across passes: lower median of each time, largest peak memory. */
function combine(list, threads) {
  const ok = list.filter((r) => r.forwardMs);
  if (!ok.length) return list[0];
  const pick = (key) => {
    const xs = ok.map((r) => r[key]).filter(Number.isFinite).sort((a, b) => a - b);
    return xs.length ? xs[Math.floor((xs.length - 1) / 2)] : NaN;
  };
  const cpu = CPU_CLOCK && threads === 1;
  return {
    forwardMs: pick(cpu ? 'forwardCpuMs' : 'forwardMs'), stepMs: pick(cpu ? 'stepCpuMs' : 'stepMs'),
    stepWallMs: pick('stepMs'),  // thread counts compare in wall time, whatever the clock
    peakMB: Math.max(...ok.map((r) => r.peakMB)), wasmMB: Math.max(...ok.map((r) => r.wasmMB ?? NaN)),
    check: ok.find((r) => r.check)?.check, stepError: ok.find((r) => r.stepError)?.stepError,
  };
}
const results = shapes.map((s, i) => {
  const threadsOf = Object.fromEntries(cells(s).map(([cell, threads]) => [cell, threads]));
  return { s, c: Object.fromEntries(Object.entries(rounds[i]).map(([cell, list]) => [cell, combine(list, threadsOf[cell])])) };
});

// The L = S = 8192 row: forward + backward without weights, in the wasm builds (one call each).
const LONG_SHAPE = { B: 1, L: 8192, S: 8192, E: 256, H: 4, Dh: 64 };
const long = LONG ? [1, THREADS].map((threads) => ({ threads, r: worker('mha-wasm', LONG_SHAPE, threads, 0) })) : [];

const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const ratio = (peer, ours) => (peer?.stepMs && ours?.stepMs ? `${fmt(peer.stepMs / ours.stepMs, 1)}x` : '-');
const threadGain = (one, many) => (one?.stepWallMs && many?.stepWallMs ? one.stepWallMs / many.stepWallMs : undefined);
/** A cell's time, or why it has none (an error message, short and safe in a table). */
function ms(r, key = 'stepMs') {
  const why = r?.error ?? (key === 'stepMs' ? r?.stepError : undefined);
  return why ? why.replace(/\|/g, '/').slice(0, 80) : fmt(r?.[key]);
}
const gflops = (f, t) => (t ? f / (t * 1e6) : NaN);
function table(title, head, rows) {
  console.log(`\n#### ${title}\n`);
  console.log(`| ${head.join(' | ')} |\n|${head.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}
/** ours: shape, fwd ms, fwd+bwd ms, fwd+bwd / fwd, GFLOPS of forward, of backward (the time fwd+bwd adds), of both. */
function ourColumns(s, o) {
  const f = trainingFlops(s);
  if (!o?.stepMs) return [trainingLabel(s), ms(o, 'forwardMs'), ms(o), '-', '-', '-', '-'];
  return [trainingLabel(s), fmt(o.forwardMs), fmt(o.stepMs), `${fmt(o.stepMs / o.forwardMs, 2)}x`,
    fmt(gflops(f.forward, o.forwardMs)), fmt(gflops(f.backward, o.stepMs - o.forwardMs)), fmt(gflops(f.forward + f.backward, o.stepMs))];
}
const OUR_HEAD = ['shape (B x L x E x heads [x head size])', 'fwd ms', 'fwd+bwd ms', 'fwd+bwd / fwd', 'fwd GFLOPS', 'bwd GFLOPS', 'fwd+bwd GFLOPS'];

const clock = (threads) => (CPU_CLOCK && threads === 1 ? 'CPU ms of the process' : 'wall ms');
console.log(`\n### Training: forward + backward of one self-attention layer (issue 22)\n`);
console.log(`Machine: ${os.cpus()[0].model}, ${os.cpus().length} logical cores, Node ${process.version}, ${new Date().toISOString()}; `
  + 'fp32, no mask, no weights returned; fwd+bwd = forward(x, null, null, { grad: true }) + backward(dOut), all gradients '
  + 'copied out. FLOPs: forward 4·L·S·Dh per head + projections, backward 10·L·S·Dh per head + twice the projections; '
  + `bwd GFLOPS = backward FLOPs / (fwd+bwd ms - fwd ms). Speedups = peer ms / our ms. ${PASSES} interleaved passes.`
  + (CPU_CLOCK ? ' --clock=cpu: one-thread cells are CPU time of their process (the machine was shared).' : ''));

table(`wasm, 1 thread (mha-simd), ${clock(1)}; peers: tfjs 4.22 wasm and cpu backends, one thread`,
  [...OUR_HEAD, 'tfjs-wasm fwd+bwd ms', 'vs tfjs-wasm', 'tfjs-cpu fwd+bwd ms', 'vs tfjs-cpu', 'peak MB'],
  results.map(({ s, c }) => [...ourColumns(s, c.wasm1), ms(c.tfjsWasm), ratio(c.tfjsWasm, c.wasm1), ms(c.tfjsCpu),
    ratio(c.tfjsCpu, c.wasm1), fmt(c.wasm1?.peakMB, 0)]));
table(`wasm, ${THREADS} threads (mha-simd-threads), wall ms`, [...OUR_HEAD, 'fwd+bwd vs our 1 thread (wall)', 'peak MB'],
  results.map(({ s, c }) => [...ourColumns(s, c.wasmN), `${fmt(threadGain(c.wasm1, c.wasmN), 2)}x`, fmt(c.wasmN?.peakMB, 0)]));
const torchName = torchInfo ? `PyTorch ${torchInfo.torch} (${path.basename(path.dirname(torchInfo.blas))} BLAS)` : 'PyTorch';
table(`native, 1 thread, ${clock(1)}; peer: ${torchName}, one thread`,
  [...OUR_HEAD, 'PyTorch fwd+bwd ms', 'vs PyTorch', 'peak MB'],
  results.map(({ s, c }) => [...ourColumns(s, c.native1), ms(c.torch), ratio(c.torch, c.native1), fmt(c.native1?.peakMB, 0)]));
table(`native, ${THREADS} threads, wall ms`, [...OUR_HEAD, 'fwd+bwd vs our 1 thread (wall)'],
  results.map(({ s, c }) => [...ourColumns(s, c.nativeN), `${fmt(threadGain(c.native1, c.nativeN), 2)}x`]));
if (PEERS) {
  table(`The peers' own forward and training step (${clock(1)})`,
    ['shape', 'tfjs-wasm fwd ms', 'fwd+bwd ms', 'ratio', 'tfjs-cpu fwd ms', 'fwd+bwd ms', 'ratio', 'PyTorch fwd ms', 'fwd+bwd ms', 'ratio'],
    results.map(({ s, c }) => [trainingLabel(s), ...['tfjsWasm', 'tfjsCpu', 'torch'].flatMap((k) => [ms(c[k], 'forwardMs'), ms(c[k]),
      c[k]?.stepMs ? `${fmt(c[k].stepMs / c[k].forwardMs, 1)}x` : '-'])]));
}
if (LONG) {
  table(`L = S = ${LONG_SHAPE.L}, E ${LONG_SHAPE.E}, ${LONG_SHAPE.H} heads: one call each, wall ms`,
    ['build', 'fwd ms', 'fwd+bwd ms', 'fwd+bwd / fwd', 'bwd GFLOPS', 'wasm memory MB (of 4096)', 'peak RSS MB'],
    long.map(({ threads, r }) => {
      const f = trainingFlops(LONG_SHAPE);
      return [threads > 1 ? `mha-simd-threads, ${threads} threads` : 'mha-simd, 1 thread', ms(r, 'forwardMs'), ms(r),
        r.stepMs ? `${fmt(r.stepMs / r.forwardMs, 2)}x` : '-', fmt(gflops(f.backward, r.stepMs - r.forwardMs)), fmt(r.wasmMB, 0), fmt(r.peakMB, 0)];
    }));
}

// The gradients agree: every implementation's sum(dx) and sum(d out_proj.weight) against wasm 1 thread's.
let worst = 0;
for (const { c } of results) {
  for (const [cell, r] of Object.entries(c)) {
    if (!r?.check || !c.wasm1?.check || cell === 'wasm1') continue;
    r.check.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - c.wasm1.check[i]) / Math.max(1, Math.abs(c.wasm1.check[i]))); });
  }
}
console.log(`\nChecksums (sum of dx, sum of d out_proj.weight) of every implementation agree with wasm 1 thread's to ${worst.toExponential(1)} (relative).`);

// The targets of issue 22.
const status = (ok) => (ok === undefined ? 'not measured' : ok ? 'met' : 'NOT met');
const every = (list, test) => (list.length && list.every((x) => x !== undefined) ? list.every(test) : undefined);
const tutorial = results.find(({ s }) => s.name);
const benchmarkShapes = results.filter(({ s }) => !s.name);
const step = (r) => r?.stepMs;
const targets = [
  ['wasm 1 thread: fwd+bwd <= 3.5x fwd on the benchmark\'s self-attention shapes',
    benchmarkShapes.map(({ c }) => c.wasm1?.stepMs && c.wasm1.stepMs / c.wasm1.forwardMs), (x) => x <= 3.5, (x) => `${fmt(x, 2)}x`],
  ['wasm 1 thread: >= 8x tfjs-wasm on every shape',
    results.map(({ c }) => step(c.tfjsWasm) && step(c.wasm1) && c.tfjsWasm.stepMs / c.wasm1.stepMs), (x) => x >= 8, (x) => `${fmt(x, 1)}x`],
  ['wasm 1 thread: >= 10x tfjs-wasm at the tutorial\'s layer',
    [tutorial && step(tutorial.c.tfjsWasm) && step(tutorial.c.wasm1) && tutorial.c.tfjsWasm.stepMs / tutorial.c.wasm1.stepMs], (x) => x >= 10, (x) => `${fmt(x, 1)}x`],
  ['native 1 thread: fwd+bwd >= 3x PyTorch + OpenBLAS on every shape',
    results.map(({ c }) => step(c.torch) && step(c.native1) && c.torch.stepMs / c.native1.stepMs), (x) => x >= 3, (x) => `${fmt(x, 1)}x`],
  [`wasm ${THREADS} threads: fwd+bwd >= 1.6x one thread (wall) on shapes of >= 512 tokens (B x L)`,
    results.filter(({ s }) => s.B * s.L >= 512).map(({ c }) => threadGain(c.wasm1, c.wasmN)), (x) => x >= 1.6, (x) => `${fmt(x, 2)}x`],
  [`native ${THREADS} threads: fwd+bwd >= 1.6x one thread (wall) on shapes of >= 512 tokens`,
    results.filter(({ s }) => s.B * s.L >= 512).map(({ c }) => threadGain(c.native1, c.nativeN)), (x) => x >= 1.6, (x) => `${fmt(x, 2)}x`],
  ...(LONG ? [[`L = S = ${LONG_SHAPE.L} forward + backward runs in the wasm builds' memory (4 GB at most)`,
    long.map(({ r }) => (r.stepMs ? r.wasmMB : undefined)), (mb) => mb <= 4096, (mb) => `${fmt(mb, 0)} MB`]] : []),
];
console.log('\n#### Targets (issue 22)\n');
for (const [name, values, test, show] of targets) {
  const clean = values.map((v) => (Number.isFinite(v) ? v : undefined));
  console.log(`- ${name}: ${status(every(clean, test))} (${clean.map((v) => (v === undefined ? '-' : show(v))).join(', ')})`);
}
if (torchInfo && !torchInfo.blas.includes('openblas')) console.log(`\nPyTorch's BLAS is ${torchInfo.blas}: install libopenblas0-pthread for a fair peer.`);
process.exit(0);
