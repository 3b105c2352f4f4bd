// mha-wasm's whole-model decode against the two peers users pick, side by side in one run, on the
// same random weights (a Llama- or GPT-2-architecture checkpoint in Hugging Face's layout): onnxruntime-web's
// wasm backend in Node on a torch.onnx.export of it with past keys and values
// (tools/export_onnx_decoder.py, bench/peers/ort-decoder.mjs), and llama.cpp's wasm build (wllama)
// in Chromium on GGUF files of it (tools/gguf-from-checkpoint.mjs: F32, F16, Q8_0, Q4_0;
// bench/peers/wllama.mjs). Each runs a prompt of --prompt tokens, then --tokens greedy ones, at each
// thread count; the table gives the prefill's time, the decode's tokens/s, and how many generated
// tokens agree with ours at the same precision (random weights: a close logit may tip either way
// at 16 bits or fewer; at f32 all three should agree).
//   node bench/whole-model-peers.mjs [--shapes=smollm-135m] [--threads=1,2] [--prompt=128] [--tokens=32]
//                                    [--precisions=f32,f16,q8_0,q4_0] [--peers=ours,ort,wllama] [--keep=DIR]
// Needs bench/'s peers (npm install --prefix bench) and Debian's python3-torch for the export.
// Our quantized rows need mha-wasm/models' weightDtype ('int8', 'q4'); where the build lacks it the
// row says so. Not a test: the figures go to docs/performance.md with the command, machine and date.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { floatToHalf } from '../bindings/js/formats/float16.js';
import { writeSafetensors } from '../bindings/js/formats/safetensors.js';
import { init } from '../bindings/js/index.js';
import { loadModelFromFolder } from '../bindings/js/models/index.js';
import { byteLevelIds, byteLevelText, byteLevelTokenizerJson, byteLevelVocab, gpt2Gguf, llamaGguf } from '../tools/gguf-from-checkpoint.mjs';
import { CONFIG as GPT2_SMALL, checkpointTensors as gpt2SmallTensors, filler } from './gpt2-small-checkpoint.mjs';
import { openWllama } from './peers/wllama.mjs';
import { llamaLayout } from './random-checkpoints.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const list = (key, fallback) => (args[key] ?? fallback).split(',');
const SHAPES = list('shapes', 'smollm-135m');
const THREADS = list('threads', '1,2').map(Number);
const PROMPT = Number(args.prompt ?? 128), TOKENS = Number(args.tokens ?? 32);
const PRECISIONS = list('precisions', 'f32,f16,q8_0,q4_0');
const PEERS = list('peers', 'ours,ort,wllama');

/** Llama-architecture shapes (no biases, untied unless said): SmolLM-135M's, and Qwen2.5-0.5B's and Llama-3.2-1B's dims. */
const SHAPE_CONFIGS = {
  tiny: { hidden_size: 64, intermediate_size: 128, num_attention_heads: 4, num_key_value_heads: 2, num_hidden_layers: 2, vocab_size: 320, tie_word_embeddings: true, rope_theta: 10000 },
  'smollm-135m': { hidden_size: 576, intermediate_size: 1536, num_attention_heads: 9, num_key_value_heads: 3, num_hidden_layers: 30, vocab_size: 49152, tie_word_embeddings: true, rope_theta: 10000 },
  'qwen2.5-0.5b-dims': { hidden_size: 896, intermediate_size: 4864, num_attention_heads: 14, num_key_value_heads: 2, num_hidden_layers: 24, vocab_size: 151936, tie_word_embeddings: true, rope_theta: 1000000 },
  'llama-3.2-1b-dims': { hidden_size: 2048, intermediate_size: 8192, num_attention_heads: 32, num_key_value_heads: 8, num_hidden_layers: 16, vocab_size: 128256, tie_word_embeddings: true, rope_theta: 500000 },
};
// Ours at each precision: the file's dtype and the weightDtype asked of the loader.
const OURS = { f32: { file: 'F32' }, f16: { file: 'F16' }, q8_0: { file: 'F32', weightDtype: 'int8' }, q4_0: { file: 'F32', weightDtype: 'q4' } };

/** A Llama shape's config.json object and float32 tensors (random-checkpoints.mjs' layout, tied), with their shapes. */
function randomLlama(shape) {
  const c = { architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_act: 'silu', rms_norm_eps: 1e-5, max_position_embeddings: 2048, rope_scaling: null, attention_bias: false, ...SHAPE_CONFIGS[shape] };
  const random = filler(135);
  const t = {}, shapes = {};
  llamaLayout(c, (key, shape_, scale, offset = 0) => {
    t[key] = random(shape_.reduce((a, b) => a * b, 1), scale);
    if (offset) for (let i = 0; i < t[key].length; i++) t[key][i] += offset;
    shapes[key] = shape_;
  });
  return { config: c, tensors: t, shapeOf: (key) => shapes[key] };
}

/** GPT-2 small's random checkpoint (gpt2-small-checkpoint.mjs), its tensors as float32 data. */
function randomGpt2() {
  const stored = gpt2SmallTensors('f32');
  return {
    config: GPT2_SMALL,
    tensors: Object.fromEntries(Object.entries(stored).map(([key, t]) => [key, t.data])),
    shapeOf: (key) => stored[key].shape,
  };
}

const isGpt2 = (shape) => shape === 'gpt2-small';
const randomCheckpoint = (shape) => (isGpt2(shape) ? randomGpt2() : randomLlama(shape));

/** Writes the Hugging Face folder (F32 or F16), the GGUFs and the ONNX graph into `dir`. */
function writeFiles(dir, shape, { config, tensors, shapeOf }) {
  const vocab = byteLevelVocab(config.vocab_size);
  const eos = config.vocab_size - 1;
  // (GPT-2 small's 50257 tokens hold the byte-level vocabulary's 128 ASCII symbols and placeholders)
  const full = { ...config, bos_token_id: eos, eos_token_id: eos, torch_dtype: 'float32' };
  for (const file of new Set(PRECISIONS.map((p) => OURS[p].file))) {
    const folder = join(dir, `hf-${file.toLowerCase()}`);
    mkdirSync(folder, { recursive: true });
    const stored = Object.fromEntries(Object.entries(tensors).map(([key, data]) => [key, file === 'F32'
      ? { dtype: 'F32', shape: shapeOf(key), data } : { dtype: 'F16', shape: shapeOf(key), data: Uint16Array.from(data, floatToHalf) }]));
    writeFileSync(join(folder, 'model.safetensors'), writeSafetensors(stored));
    writeFileSync(join(folder, 'config.json'), JSON.stringify({ ...full, torch_dtype: file === 'F32' ? 'float32' : 'float16' }));
    writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(byteLevelTokenizerJson(vocab)));
  }
  if (PEERS.includes('wllama')) {
    const gguf = isGpt2(shape) ? gpt2Gguf : llamaGguf;
    for (const p of PRECISIONS) writeFileSync(join(dir, `${shape}-${p}.gguf`), gguf(config, (key) => tensors[key], p.toUpperCase()).bytes);
  }
  if (PEERS.includes('ort') && PRECISIONS.includes('f32')) {
    execFileSync('/usr/bin/python3', [fileURLToPath(new URL('../tools/export_onnx_decoder.py', import.meta.url)), join(dir, 'hf-f32'), join(dir, 'model.onnx')], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return vocab;
}

/** Ours: the folder through mha-wasm/models on `threads`, a prefill then greedy tokens (generate's onToken times them). */
const modules = new Map();  // threads -> the module (one each: a module's heap only grows)
async function runOurs(dir, precision, threads, prompt) {
  const { file, weightDtype } = OURS[precision];
  if (!modules.has(threads)) modules.set(threads, await init({ threads }));
  const mha = modules.get(threads);
  const loadStart = performance.now();
  let model;
  try {
    model = await loadModelFromFolder(mha, join(dir, `hf-${file.toLowerCase()}`), weightDtype ? { weightDtype } : {});
  } catch (error) {
    return { skipped: `mha-wasm/models: ${error.message}` };
  }
  const loadMs = performance.now() - loadStart;
  try {
    await model.generate(prompt.slice(0, 8), { maxNewTokens: 2, stopAtEos: false });  // (a warm-up: first calls compile)
    const times = [];
    const started = performance.now();
    const { ids } = await model.generate(prompt, { maxNewTokens: TOKENS, stopAtEos: false, onToken: () => { times.push(performance.now()); } });
    const decodeMs = times.slice(1).map((t, i) => t - times[i]);
    return { ids, prefillMs: times[0] - started, decodeMs, loadMs };
  } finally {
    model.dispose();
  }
}

function runOrt(dir, threads, prompt) {
  const out = execFileSync(process.execPath, [fileURLToPath(new URL('./peers/ort-decoder.mjs', import.meta.url)), join(dir, 'model.onnx'), String(threads), JSON.stringify(prompt), String(TOKENS)],
    { cwd: fileURLToPath(new URL('.', import.meta.url)), maxBuffer: 1 << 26 });
  return JSON.parse(out.toString().trim().split('\n').at(-1));
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
const agreement = (a, b) => { let n = 0; while (n < Math.min(a.length, b.length) && a[n] === b[n]) n++; return n; };
/** How many of our first tokens wllama's text begins with (it returns text, not ids). */
function textAgreement(ids, vocab, text) {
  let n = 0;
  while (n < ids.length && text.startsWith(byteLevelText(ids.slice(0, n + 1), vocab))) n++;
  return n;
}

const keep = args.keep ?? null;
const dir = keep ?? mkdtempSync(join(tmpdir(), 'whole-model-peers-'));
const rows = [];
console.log(`# ${cpus()[0]?.model ?? 'unknown CPU'} · ${cpus().length} cores · ${new Date().toISOString()} · prompt ${PROMPT}, ${TOKENS} greedy tokens`);
try {
  for (const shape of SHAPES) {
    const checkpoint = randomCheckpoint(shape);
    const vocab = writeFiles(dir, shape, checkpoint);
    // An ASCII prompt of PROMPT characters: one token a character in the byte-level vocabulary.
    const text = Array.from({ length: PROMPT }, (_, i) => String.fromCharCode(97 + ((i * 7 + 3) % 26))).join('');
    const prompt = byteLevelIds(text);
    const wllama = PEERS.includes('wllama') ? await openWllama(dir) : null;
    try {
      for (const threads of THREADS) {
        for (const precision of PRECISIONS) {
          const ours = PEERS.includes('ours') ? await runOurs(dir, precision, threads, prompt) : null;
          const results = { ours };
          if (PEERS.includes('ort') && precision === 'f32') results.ort = runOrt(dir, threads, prompt);
          if (wllama) {
            const r = await wllama.run({ gguf: `${shape}-${precision}.gguf`, prompt: text, maxTokens: TOKENS, threads, context: PROMPT + TOKENS + 8 });
            results.wllama = { text: r.text, prefillMs: r.timings.prompt_ms, decodeMs: [1000 / r.timings.predicted_per_second], multithread: r.multithread, promptTokens: r.timings.prompt_n };
          }
          for (const [peer, r] of Object.entries(results)) {
            if (!r) continue;
            const row = { shape, precision, peer, threads };
            if (r.skipped) { rows.push({ ...row, skipped: r.skipped }); console.log(JSON.stringify(rows.at(-1))); continue; }
            const oursIds = results.ours?.ids;
            const agree = !oursIds ? null : peer === 'wllama' ? textAgreement(oursIds, vocab, r.text) : agreement(oursIds, r.ids);
            rows.push({ ...row, prefillS: r.prefillMs / 1000, decodeTokensPerS: 1000 / mean(r.decodeMs), agreeWithOurs: agree,
              ...(r.promptTokens !== undefined ? { promptTokens: r.promptTokens, multithread: r.multithread } : {}) });
            console.log(JSON.stringify(rows.at(-1)));
          }
        }
      }
    } finally {
      await wllama?.close();
    }
  }
} finally {
  if (!keep) rmSync(dir, { recursive: true, force: true });
}

console.log('\n| shape | precision | peer | threads | prefill (s) | decode tokens/s | ratio to ours | agree |');
console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  if (r.skipped) { console.log(`| ${r.shape} | ${r.precision} | ${r.peer} | ${r.threads} | — | — | — | ${r.skipped} |`); continue; }
  const ours = rows.find((o) => o.peer === 'ours' && o.shape === r.shape && o.precision === r.precision && o.threads === r.threads && !o.skipped);
  const ratio = ours ? (ours.decodeTokensPerS / r.decodeTokensPerS).toFixed(2) : '—';
  console.log(`| ${r.shape} | ${r.precision} | ${r.peer} | ${r.threads} | ${r.prefillS.toFixed(2)} | ${r.decodeTokensPerS.toFixed(1)} | ${r.peer === 'ours' ? '1' : ratio} | ${r.agreeWithOurs ?? '—'} |`);
}
