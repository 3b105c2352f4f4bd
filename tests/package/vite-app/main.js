// A page that uses the installed mha-wasm like an app would; the result goes to window.__result
// for browser-check.mjs. ?threads=N, ?simd=0, ?relaxedSimd=0 and ?missingWorker become init() options.
import { init } from 'mha-wasm';

import cases from './cases.json';
import { runCases } from './run-cases.js';

const params = new URLSearchParams(location.search);
const options = {
  ...(params.has('threads') ? { threads: Number(params.get('threads')) } : {}),
  ...(params.get('simd') === '0' ? { simd: false } : {}),
  ...(params.get('relaxedSimd') === '0' ? { relaxedSimd: false } : {}),
  // A pthread worker script that is not there: init() must reject, not wait forever.
  ...(params.has('missingWorker') ? { locateFile: (file) => (file.endsWith('.worker.js') ? './no-such-worker.js' : undefined) } : {}),
};
const warnings = [];
const warn = console.warn;
console.warn = (...args) => { warnings.push(args.join(' ')); warn(...args); };

try {
  const mha = await init(options);
  window.__result = { build: { ...mha.build }, results: runCases(mha, cases), warnings, isolated: globalThis.crossOriginIsolated };
} catch (error) {
  window.__result = { error: String(error?.stack ?? error) };
}
document.getElementById('out').textContent = JSON.stringify(window.__result, null, 2);
