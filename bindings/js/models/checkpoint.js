// A Hugging Face checkpoint folder's files, opened: config.json, tokenizer.json and the headers of
// the weights (model.safetensors, or model.safetensors.index.json with the shards it names). Only
// the headers are read here: each tensor is a StoredTensor that the model reads when it builds the
// layer that needs it (transformer.js), so the whole file is never held. Files come as File / Blob
// objects, { name, bytes } or (Node) { name, path } (weight-source.js); a name may carry a folder
// ("gpt2/config.json"), only its last part counts. No DOM: runs in the worker and in Node.
import { readSafetensorsHeader, safetensorsHeaderLength } from '../formats/safetensors.js';
import { architectureOf } from './architecture.js';
import { familyOf } from './families/index.js';
import { StoredTensor } from './stored-tensor.js';
import { FLOAT_DTYPES } from './tensors.js';
import { bytesSource, weightSource } from './weight-source.js';

const SINGLE = 'model.safetensors';
const INDEX = 'model.safetensors.index.json';

function parseJson(name, bytes) {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new TypeError(`${name} is not valid JSON: ${error.message}`);
  }
}

/** name -> source, by base name; a name given twice is refused (which one was meant?). */
function byName(sources) {
  const map = new Map();
  for (const source of sources) {
    if (map.has(source.name)) throw new TypeError(`loadModel: ${source.name} was given twice`);
    map.set(source.name, source);
  }
  return map;
}

/** The weight files to read, in order: the single file, or the index's shards. */
function weightFiles(map, indexJson) {
  if (map.has(SINGLE)) return [SINGLE];
  if (!map.has(INDEX)) {
    throw new TypeError(`loadModel: no weights: expected ${SINGLE}, or ${INDEX} with its shards; got ${[...map.keys()].join(', ')}`);
  }
  const index = indexJson;
  if (!index || typeof index.weight_map !== 'object') throw new TypeError(`${INDEX}: expected an object with a weight_map`);
  const shards = [...new Set(Object.values(index.weight_map))];
  const missing = shards.filter((shard) => !map.has(shard));
  if (missing.length) throw new TypeError(`loadModel: ${INDEX} names shards that were not given: ${missing.join(', ')}`);
  return shards;
}

/**
 * Opening the files, as steps: each yields [source, begin, end] and is given back those bytes
 * (read synchronously by readCheckpoint, awaited by openCheckpoint); returns the checkpoint { architecture, config, tensors (name ->
 * StoredTensor), dtype (the weights' one float dtype), tokenizerJson (or null), sources }.
 */
function* openSteps(sources, { onProgress, encoders }) {
  const map = byName(sources);
  if (!map.has('config.json')) throw new TypeError(`loadModel: config.json is missing; got ${[...map.keys()].join(', ')}`);
  const config = parseJson('config.json', yield [map.get('config.json'), 0, map.get('config.json').size]);
  const architecture = architectureOf(config, { encoders });
  const ignored = familyOf(architecture).ignored ?? (() => false);
  const indexJson = !map.has(SINGLE) && map.has(INDEX) ? parseJson(INDEX, yield [map.get(INDEX), 0, map.get(INDEX).size]) : null;
  const tensors = {};
  const dtypes = new Set();
  const names = weightFiles(map, indexJson);
  for (const [i, name] of names.entries()) {
    const source = map.get(name);
    let entries;
    try {
      const length = safetensorsHeaderLength(yield [source, 0, Math.min(8, source.size)], source.size);
      ({ entries } = readSafetensorsHeader(yield [source, 8, 8 + length], source.size));
    } catch (error) {
      throw new TypeError(`${name}: ${error.message}`);
    }
    for (const entry of entries) {
      if (!FLOAT_DTYPES.includes(entry.dtype)) continue; // buffers such as GPT-2's old attn.bias masks
      if (ignored(entry.name)) continue;  // buffers the forward recomputes (Pythia's attention.bias, masked_bias, inv_freq)
      tensors[entry.name] = new StoredTensor(entry.name, entry, source);
      dtypes.add(entry.dtype);
    }
    onProgress?.(i + 1, names.length, name);
  }
  if (dtypes.size > 1) throw new TypeError(`loadModel: the weights mix dtypes ${[...dtypes].join(', ')}; expected one`);
  const tokenizerJson = map.has('tokenizer.json') ? parseJson('tokenizer.json', yield [map.get('tokenizer.json'), 0, map.get('tokenizer.json').size]) : null;
  return { architecture, config, tensors, dtype: [...dtypes][0] ?? 'F32', tokenizerJson, sources: [...map.values()] };
}

/**
 * Opens the files (File / Blob, { name, bytes }, Node's { name, path }), reading only the JSON
 * files and the weights' headers: the checkpoint, whose tensors are read later (StoredTensor).
 * `onProgress(done, total, name)` is called after each weight file's header. `encoders`
 * (loadModel's) accepts BERT and RoBERTa; without it (the page, whose views run decoders) they
 * are refused as before. closeCheckpoint() closes Node's file handles.
 */
export async function openCheckpoint(files, { onProgress, encoders = false } = {}) {
  if (!Array.isArray(files) || files.length === 0) {
    throw new TypeError('loadModel: files must be a non-empty array of File objects or { name, bytes }');
  }
  const sources = [];
  try {
    for (const [i, file] of files.entries()) sources.push(await weightSource(file, `files[${i}]`));
    const steps = openSteps(sources, { onProgress, encoders });
    for (let step = steps.next(); ; ) {
      if (step.done) return step.value;
      const [source, begin, end] = step.value;
      step = steps.next(await source.read(begin, end));
    }
  } catch (error) {
    await Promise.all(sources.map((source) => source.close()));
    throw error;
  }
}

/** Closes what openCheckpoint opened (Node's file handles; a File needs nothing). */
export async function closeCheckpoint(checkpoint) {
  await Promise.all((checkpoint?.sources ?? []).map((source) => source.close()));
}

/**
 * openCheckpoint() at once, for files given as { name, bytes } (the tests' and the page's in-memory
 * form): the tensors are views of those bytes, read when a layer is built.
 */
export function readCheckpoint(files, { onProgress, encoders = false } = {}) {
  if (!Array.isArray(files) || files.length === 0) {
    throw new TypeError('loadModel: files must be a non-empty array of { name, bytes }');
  }
  const sources = files.map((file) => {
    if (!file || typeof file.name !== 'string' || !(file.bytes instanceof Uint8Array || file.bytes instanceof ArrayBuffer)) {
      throw new TypeError('loadModel: each file must be { name: string, bytes: Uint8Array | ArrayBuffer }');
    }
    return bytesSource(file.name, file.bytes);
  });
  const steps = openSteps(sources, { onProgress, encoders });
  for (let step = steps.next(); ; ) {
    if (step.done) return step.value;
    const [source, begin, end] = step.value;
    step = steps.next(source.readSync(begin, end));
  }
}
