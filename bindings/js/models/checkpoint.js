// A Hugging Face checkpoint folder's files, read: config.json, the weights (model.safetensors, or
// model.safetensors.index.json with the shards it names) and tokenizer.json. Files come as
// { name, bytes } (the page reads dropped File objects into that form); a name may carry a folder
// ("gpt2/config.json"), only its last part counts. No DOM: runs in the worker and in Node.
import { readSafetensors } from '../formats/safetensors.js';
import { architectureOf } from './architecture.js';
import { familyOf } from './families/index.js';
import { FLOAT_DTYPES } from './tensors.js';

const SINGLE = 'model.safetensors';
const INDEX = 'model.safetensors.index.json';

const baseName = (name) => String(name).split(/[\\/]/).pop();

function parseJson(name, bytes) {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new TypeError(`${name} is not valid JSON: ${error.message}`);
  }
}

/** name -> bytes, by base name; a name given twice is refused (which one was meant?). */
function byName(files) {
  if (!Array.isArray(files) || files.length === 0) {
    throw new TypeError('loadModel: files must be a non-empty array of { name, bytes }');
  }
  const map = new Map();
  for (const file of files) {
    if (!file || typeof file.name !== 'string' || !(file.bytes instanceof Uint8Array || file.bytes instanceof ArrayBuffer)) {
      throw new TypeError('loadModel: each file must be { name: string, bytes: Uint8Array | ArrayBuffer }');
    }
    const name = baseName(file.name);
    if (map.has(name)) throw new TypeError(`loadModel: ${name} was given twice`);
    map.set(name, file.bytes instanceof Uint8Array ? file.bytes : new Uint8Array(file.bytes));
  }
  return map;
}

/** The weight files to read, in order: the single file, or the index's shards. */
function weightFiles(map) {
  if (map.has(SINGLE)) return [SINGLE];
  if (!map.has(INDEX)) {
    throw new TypeError(`loadModel: no weights: expected ${SINGLE}, or ${INDEX} with its shards; got ${[...map.keys()].join(', ')}`);
  }
  const index = parseJson(INDEX, map.get(INDEX));
  if (!index || typeof index.weight_map !== 'object') throw new TypeError(`${INDEX}: expected an object with a weight_map`);
  const shards = [...new Set(Object.values(index.weight_map))];
  const missing = shards.filter((shard) => !map.has(shard));
  if (missing.length) throw new TypeError(`loadModel: ${INDEX} names shards that were not given: ${missing.join(', ')}`);
  return shards;
}

/**
 * Reads the files: { architecture, config, tensors (name -> { dtype, shape, data }), dtype (the
 * weights' one float dtype), tokenizerJson (or null) }. `onProgress(done, total, name)` is called
 * after each weight file. `encoders` (loadModel's) accepts BERT and RoBERTa; without it (the page,
 * whose views run decoders) they are refused as before.
 */
export function readCheckpoint(files, { onProgress, encoders = false } = {}) {
  const map = byName(files);
  if (!map.has('config.json')) throw new TypeError(`loadModel: config.json is missing; got ${[...map.keys()].join(', ')}`);
  const config = parseJson('config.json', map.get('config.json'));
  const architecture = architectureOf(config, { encoders });
  const ignored = familyOf(architecture).ignored ?? (() => false);
  const tensors = {};
  const dtypes = new Set();
  const names = weightFiles(map);
  names.forEach((name, i) => {
    let read;
    try {
      read = readSafetensors(map.get(name));
    } catch (error) {
      throw new TypeError(`${name}: ${error.message}`);
    }
    for (const [key, tensor] of Object.entries(read.tensors)) {
      if (!FLOAT_DTYPES.includes(tensor.dtype)) continue; // buffers such as GPT-2's old attn.bias masks
      if (ignored(key)) continue;  // buffers the forward recomputes (Pythia's attention.bias, masked_bias, inv_freq)
      tensors[key] = tensor;
      dtypes.add(tensor.dtype);
    }
    onProgress?.(i + 1, names.length, name);
  });
  if (dtypes.size > 1) throw new TypeError(`loadModel: the weights mix dtypes ${[...dtypes].join(', ')}; expected one`);
  const tokenizerJson = map.has('tokenizer.json') ? parseJson('tokenizer.json', map.get('tokenizer.json')) : null;
  return { architecture, config, tensors, dtype: [...dtypes][0] ?? 'F32', tokenizerJson };
}
