// mha-wasm/models' streaming load (checkpoint.js, stored-tensor.js, weight-source.js): a checkpoint
// given as Blobs or (Node) file paths gives the logits of the in-memory path bit for bit, reading
// each tensor once, a tensor at a time, and never the whole file; its memory estimate
// (memory-estimate.js) refuses what cannot fit before any weight is read, naming what it needs and
// what there is; 'auto' picks the most precise dtype that fits; a disposed model leaves nothing in
// the wasm heap.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { init } from '../../bindings/js/index.js';
import { estimateModelMemory, loadModel, loadModelFromFolder } from '../../bindings/js/models/index.js';
import { checkpointFiles, expectedValues } from './your-model-fixtures.js';

const mha = await init({ threads: 1 });

/** A Blob-like file that records the byte ranges read from it (and can claim a size it does not hold). */
function recordingFile(name, bytes, { size = bytes.length, reads = [] } = {}) {
  return {
    name, size, reads,
    slice(begin, end) {
      reads.push([begin, end]);
      if (end > bytes.length) throw new Error(`${name}: read of bytes ${begin}..${end}, past the header`);
      return { arrayBuffer: async () => bytes.slice(begin, end).buffer };
    },
  };
}

test('Blobs and file paths load as the in-memory files do: the same logits (and hook_q before a q/k norm), bit for bit', async () => {
  const hookQ = async (model) => (await model.runWithCache(expectedValues('qwen3').ids, { names: ['blocks.1.attn.hook_q'] })).cache.get('blocks.1.attn.hook_q').data;
  for (const name of ['gpt2', 'llama', 'qwen2', 'qwen3']) {
    const { ids } = expectedValues(name);
    const files = checkpointFiles(name);
    const inMemory = await loadModel(mha, files);
    const want = (await inMemory.forward(ids)).logits.data;
    // (qwen3's hook_q runs q_proj again: read back from a file kept open, or made at load from a Blob)
    const wantQ = name === 'qwen3' ? await hookQ(inMemory) : null;
    inMemory.dispose();
    const blobs = files.map(({ name: file, bytes }) => Object.assign(new Blob([bytes]), { name: `folder/${file}` }));
    for (const [what, model] of [
      ['Blobs', await loadModel(mha, blobs)],
      ['a folder', await loadModelFromFolder(mha, new URL(`../fixtures/your-model/${name}/`, import.meta.url).pathname)],
    ]) {
      try {
        assert.deepEqual((await model.forward(ids)).logits.data, want, `${name} from ${what}`);
        if (wantQ) assert.deepEqual(await hookQ(model), wantQ, `${name} from ${what}: hook_q`);
      } finally {
        model.dispose();
      }
    }
  }
});

test('a streaming load reads the headers, then each tensor once, never a whole weight file', async () => {
  const files = checkpointFiles('llama');  // (sharded: two weight files)
  const recorded = files.map(({ name, bytes }) => recordingFile(name, bytes));
  const model = await loadModel(mha, recorded);
  model.dispose();
  for (const file of recorded.filter((f) => f.name.endsWith('.safetensors'))) {
    const [first, header, ...tensors] = file.reads;
    assert.deepEqual(first, [0, 8], `${file.name}: the length field first`);
    assert.equal(header[0], 8);
    assert.ok(tensors.length > 3, `${file.name}: ${tensors.length} tensor reads`);
    const seen = new Set(tensors.map(String));
    assert.equal(seen.size, tensors.length, `${file.name}: no tensor read twice`);
    const covered = tensors.reduce((sum, [b, e]) => sum + e - b, 0);
    assert.ok(covered <= file.size - header[1], `${file.name}: only the data section`);
    for (const [b, e] of tensors) assert.ok(e - b < file.size / 2, `${file.name}: a read of ${e - b} of its ${file.size} bytes`);
  }
});

/** A Llama config with a header of `V` x `E` embeddings and one layer, nothing of its data given. */
function hugeCheckpoint({ V = 262144, E = 8192, I = 28672, layers = 16 } = {}) {
  const config = {
    model_type: 'llama', architectures: ['LlamaForCausalLM'], hidden_size: E, intermediate_size: I, num_attention_heads: 64,
    num_key_value_heads: 8, num_hidden_layers: layers, vocab_size: V, max_position_embeddings: 4096, rms_norm_eps: 1e-5, torch_dtype: 'float32',
  };
  const header = {};
  let offset = 0;
  const add = (key, shape) => {
    const bytes = shape.reduce((n, d) => n * d, 4);
    header[key] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  };
  add('model.embed_tokens.weight', [V, E]);
  add('model.norm.weight', [E]);
  add('lm_head.weight', [V, E]);
  for (let l = 0; l < layers; l++) {
    add(`model.layers.${l}.mlp.gate_proj.weight`, [I, E]);
    add(`model.layers.${l}.mlp.up_proj.weight`, [I, E]);
    add(`model.layers.${l}.mlp.down_proj.weight`, [E, I]);
  }
  const json = new TextEncoder().encode(JSON.stringify(header).padEnd(Math.ceil(JSON.stringify(header).length / 8) * 8));
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(json, 8);
  const reads = [];
  const weights = recordingFile('model.safetensors', head, { size: head.length + offset, reads });
  const configFile = { name: 'config.json', bytes: new TextEncoder().encode(JSON.stringify(config)) };
  return { files: [configFile, weights, ...checkpointFiles('llama').filter((f) => f.name === 'tokenizer.json')], reads, headerEnd: head.length };
}

test('a checkpoint too big for the chosen precision is refused before any weight is read, saying how much it needs and how much there is', async () => {
  const { files, reads, headerEnd } = hugeCheckpoint();
  await assert.rejects(loadModel(mha, files, { weightDtype: 'f32' }), (error) => {
    assert.equal(error.name, 'RangeError');
    assert.match(error.message, /^loadModel: the model needs [\d.]+ GiB of wasm memory at weightDtype 'f32' \(weights [\d.]+ GiB, KV caches [\d.]+ GiB for 2048 tokens, work [\d.]+ GiB\); the module can hold [\d.]+ GiB, of which [\d.]+ GiB is in use, leaving [\d.]+ GiB/);
    return true;
  });
  assert.ok(reads.every(([, end]) => end <= headerEnd), `only the header was read: ${JSON.stringify(reads)}`);
  // Even q4 cannot hold 26 billion parameters in 4 GiB: 'auto' is refused too, and says so.
  await assert.rejects(loadModel(mha, files, { weightDtype: 'auto' }), /at weightDtype 'q4' .*; no weightDtype fits/);
});

test('estimateModelMemory: every dtype smaller than the last, and auto picks the most precise that fits', async () => {
  const { files } = hugeCheckpoint({ V: 32000, E: 4096, I: 11008, layers: 26 });  // 3.8 billion parameters: int8 exceeds 4 GiB
  const estimate = await estimateModelMemory(files, { weightDtype: 'auto', wasm: mha });
  const { f32, f16, int8, q4 } = estimate.byDtype;
  assert.ok(f32 > f16 && f16 > int8 && int8 > q4, JSON.stringify(estimate.byDtype));
  assert.equal(estimate.weightDtype, 'q4');
  assert.equal(estimate.fits, true);
  assert.equal(estimate.storedDtype, 'F32');
  assert.equal(estimate.bytes.total, estimate.bytes.weights + estimate.bytes.caches + estimate.bytes.work);
  assert.ok(estimate.bytes.weights > 0.6 * estimate.parameters * (16 + 4) / 32, 'q4: 20 bytes per 32 weights');
  const small = await estimateModelMemory(checkpointFiles('gpt2'), { weightDtype: 'auto', contextLength: 16 });
  assert.equal(small.weightDtype, 'f32');
  assert.equal(small.contextLength, 16);
  await assert.rejects(estimateModelMemory(files, { weightDtype: 'int4' }), { name: 'TypeError', message: "estimateModelMemory: weightDtype must be one of 'f32', 'f16', 'int8', 'q4', 'auto' (the precision every matrix is held in), got \"int4\"" });
  await assert.rejects(loadModel(mha, files, { contextLength: 0 }), { name: 'RangeError', message: /loadModel: contextLength must be a positive integer/ });
  await assert.rejects(loadModel(mha, files, { quantize: true }), { name: 'TypeError', message: /loadModel: unknown option 'quantize'/ });
});

test('nothing of a disposed model stays in the wasm heap, at any weightDtype', async () => {
  const files = checkpointFiles('qwen2');
  const { ids } = expectedValues('qwen2');
  for (const weightDtype of ['f32', 'f16', 'int8', 'q4']) {
    const warm = await loadModel(mha, files, { weightDtype });  // (warm-up: a first call's one-time allocations)
    await warm.forward(ids);
    warm.dispose();
    const before = mha.heapAllocatedBytes();
    const model = await loadModel(mha, files, { weightDtype });
    assert.ok(mha.heapAllocatedBytes() > before, `${weightDtype}: the weights are in wasm memory`);
    await model.forward(ids);
    model.dispose();
    assert.equal(mha.heapAllocatedBytes(), before, `${weightDtype}: dispose gives everything back`);
  }
});

test('a File-only tensor not read yet is refused by name rather than read whole', async () => {
  const { openCheckpoint } = await import('../../bindings/js/models/checkpoint.js');
  const blobs = checkpointFiles('gpt2').map(({ name, bytes }) => Object.assign(new Blob([bytes]), { name }));
  const checkpoint = await openCheckpoint(blobs);
  assert.throws(() => checkpoint.tensors['transformer.wte.weight'].data, /tensor 'transformer.wte.weight' of model.safetensors was not read yet/);
});
