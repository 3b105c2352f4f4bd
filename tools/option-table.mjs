// docs/api.md's table "Which backends take each option", made from the option schema
// (bindings/js/api/options.js). `node tools/option-table.mjs` rewrites the table between its two
// markers in docs/api.md; tests/js/option-schema.test.js checks that it is fresh.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { CONFIG_OPTIONS, FORWARD_OPTIONS, REFUSED_BY_CORE, takesDtype } from '../bindings/js/api/options.js';

export const API_DOC = fileURLToPath(new URL('../docs/api.md', import.meta.url));
export const BEGIN = '<!-- option-table: made by tools/option-table.mjs from bindings/js/api/options.js -->';
export const END = '<!-- /option-table -->';

const code = (text) => `\`${text}\``;
const yes = (taken) => (taken ? 'yes' : '–');

/** A float64 layer's answer to the option: yes, the core's refusal, or the JavaScript one's reason. */
function float64Cell(o) {
  if (o.float64 === true) return 'yes';
  return o.float64 === REFUSED_BY_CORE ? 'refused (by the core)' : `refused: ${o.float64}`;
}

function row(where, o) {
  // The dtype option is every backend's; the value 'float64' is not (api/options.js).
  const webgpu = o.name === 'dtype' && !takesDtype('webgpu', 'float64') ? "`'float32'` only" : yes(o.backends.webgpu);
  const keras = o.backends.keras ? code(o.backends.keras) : '–';
  return `| ${code(o.name)} | ${where} | ${o.type.replaceAll('|', '\\|')} | ${o.default} | ${yes(o.backends.wasm)} | ${webgpu} | ${keras} | ${float64Cell(o)} |`;
}

/** The table, its markers included. */
export function renderOptionTable() {
  return [
    BEGIN,
    '| option | where | type | default | wasm | WebGPU | Keras layers (their argument) | dtype `\'float64\'` |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...CONFIG_OPTIONS.map((o) => row('config', o)),
    ...FORWARD_OPTIONS.map((o) => row('forward', o)),
    END,
  ].join('\n');
}

/** docs/api.md with the table replaced by a fresh one. */
export function withFreshTable(doc) {
  const begin = doc.indexOf(BEGIN), end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/api.md: the markers ${BEGIN} ... ${END} are missing`);
  return doc.slice(0, begin) + renderOptionTable() + doc.slice(end + END.length);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(API_DOC, withFreshTable(readFileSync(API_DOC, 'utf8')));
}
